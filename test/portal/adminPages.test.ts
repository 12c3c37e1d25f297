/**
 * LLM providers, bindings, MCP servers and jobs in the portal through app.handle: keys and header
 * values never in any page (a canary), the thinking select offers only the model's levels, refusals
 * at their fields, 409 naming the bound agents; and the pure view helpers.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { makeApp } from "../../src/http/app.ts"
import { customFormFrom, customInput, mcpInput, mcpFormFrom } from "../../views/forms/providerForm.ts"
import type { ProviderView } from "../../src/providers/ProviderStore.ts"
import { levelsFor, parseTarget, thinkingField } from "../../views/pages/bindings.ts"
import { eventRows } from "../../views/pages/jobPage.ts"
import { runSlot } from "../../views/pages/runForm.ts"
import { makeTestRuntime, signInTestUsers, type AppRuntime } from "./harness.ts"

setDefaultTimeout(60_000)

const BASE = "http://localhost"
const CANARY = `sk-canary-${crypto.randomUUID()}`
const HEADER_CANARY = `hv-canary-${crypto.randomUUID()}`
let runtime: AppRuntime
let app: ReturnType<typeof makeApp>
const sessions: Record<string, { cookie: string; csrf: string }> = {}

const send = async (method: "GET" | "POST", path: string, session: string, fields?: Record<string, string | ReadonlyArray<string>>) => {
  const s = sessions[session]!
  const body = new URLSearchParams()
  for (const [k, v] of Object.entries(fields ?? {})) for (const x of typeof v === "string" ? [v] : v) body.append(k, x)
  if (method === "POST") body.set("_csrf", s.csrf)
  const headers = { host: "localhost", origin: BASE, "sec-fetch-site": "same-origin", cookie: `__Host-kintsugi-session=${s.cookie}` }
  const res = await app.handle(
    new Request(`${BASE}${path}`, { method, headers, body: method === "POST" ? body : null, redirect: "manual" })
  )
  return { status: res.status, location: res.headers.get("location"), text: await res.text() }
}

const model = (key: string, id: string, thinking: ReadonlyArray<string>) => ({
  [`m.${key}.id`]: id,
  [`m.${key}.contextWindow`]: "64000",
  [`m.${key}.maxTokens`]: "4000",
  [`m.${key}.thinking`]: thinking,
  [`m.${key}.input`]: "1",
  [`m.${key}.output`]: "2"
})

beforeAll(async () => {
  runtime = await makeTestRuntime()
  app = makeApp({ runtime, log: (line) => console.error(line) })
  Object.assign(sessions, await signInTestUsers(runtime))
}, 120_000)

afterAll(async () => {
  await runtime?.dispose()
})

describe("provider, binding and MCP pages", () => {
  test("a provider's key and an MCP server's header values appear in no page", async () => {
    const created = await send("POST", "/providers", "manager", {
      kind: "custom",
      id: "canary",
      api: "openai-completions",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: CANARY,
      modelKey: ["a", "b"],
      ...model("a", "fast", ["off"]),
      ...model("b", "deep", ["off", "low", "high"])
    })
    expect(created).toMatchObject({ status: 303, location: "/providers?added=canary" })
    // A refused edit re-renders the form: still without the key typed.
    const refused = await send("POST", "/providers/canary", "manager", {
      baseUrl: "ftp://x",
      apiKey: CANARY,
      modelKey: "a",
      ...model("a", "fast", ["off"])
    })
    expect(refused.status).toBe(400)
    expect(refused.text).toContain("must be an http(s) URL")
    const mcp = await send("POST", "/mcp-servers", "manager", {
      name: "kb",
      url: "http://127.0.0.1:9/mcp",
      timeoutSec: "30",
      allowPrivateNetwork: "on",
      headerKey: "x",
      "h.x.name": "Authorization",
      "h.x.value": HEADER_CANARY
    })
    expect(mcp.status).toBe(303)
    await send("POST", "/agents/codebase-inventory/binding", "manager", { project: "", target: "canary/deep", thinking: "high" })
    const pages = [
      "/providers",
      "/providers/canary",
      "/mcp-servers",
      "/mcp-servers/kb",
      "/agents/codebase-inventory/binding",
      "/bindings/-/thinking?target=canary/deep"
    ]
    const texts = [
      refused.text,
      ...(await Promise.all(pages.flatMap((p) => [send("GET", p, "manager"), send("GET", p, "reader")]))).map((r) => r.text)
    ]
    for (const t of texts) {
      expect(t).not.toContain(CANARY)
      expect(t).not.toContain(HEADER_CANARY)
    }
    expect(texts.join("")).toContain("Authorization")
    // An edit with the key left blank keeps it (the store's rule): the provider still has one.
    expect(
      (
        await send("POST", "/providers/canary", "manager", {
          api: "openai-completions",
          baseUrl: "http://127.0.0.1:9/v2",
          modelKey: ["a", "b"],
          ...model("a", "fast", ["off"]),
          ...model("b", "deep", ["off", "low", "high"])
        })
      ).status
    ).toBe(303)
    expect((await send("GET", "/providers", "manager")).text).toContain("stored")
  })

  test("the thinking select offers only the chosen model's levels", async () => {
    const options = (t: string) => [...t.matchAll(/<option value="([a-z]*)"/g)].map((m) => m[1])
    expect(options((await send("GET", "/bindings/-/thinking?target=canary/deep", "reader")).text)).toEqual(["", "off", "low", "high"])
    expect(options((await send("GET", "/bindings/-/thinking?target=canary/fast", "reader")).text)).toEqual(["", "off"])
    const page = await send("GET", "/agents/codebase-inventory/binding", "manager")
    expect(options(/<select id="f-thinking"[\s\S]*?<\/select>/.exec(page.text)?.[0] ?? "")).toEqual(["", "off", "low", "high"])
    expect(page.text).toContain("canary / deep")
    // A level the model does not support is refused by Bindings, shown at the thinking field.
    const bad = await send("POST", "/agents/codebase-inventory/binding", "manager", {
      project: "",
      target: "canary/fast",
      thinking: "high"
    })
    expect(bad.status).toBe(400)
    expect(/id="problems-thinking"[\s\S]*?<\/div>/.exec(bad.text)?.[0]).toContain("supports off")
  })

  test("the Job definition tab says how a level the model lacks is clamped", async () => {
    const page = await send("GET", "/agents/codebase-inventory/definition", "reader")
    expect(page.status).toBe(200)
    expect(page.text).toContain("A level the model lacks is clamped to the nearest one it has")
    expect(page.text).toContain("off counts as a level; a tie goes to the lower")
  })

  test("the Job definition tab shows the bound model and the thinking level a job really gets, per project", async () => {
    // data-interfaces asks for medium; canary/deep has off, low, high: the tie goes to the lower level.
    expect(
      (await send("POST", "/agents/data-interfaces/binding", "manager", { project: "", target: "canary/deep", thinking: "" })).status
    ).toBe(303)
    const card = (t: string) => (/<section class="card" id="job-model"[\s\S]*?<\/section>/.exec(t)?.[0] ?? "").replace(/\s+/g, " ")
    const page = card((await send("GET", "/agents/data-interfaces/definition", "reader")).text)
    expect(page).toContain("<code>canary / deep</code>")
    expect(page).toContain("the installation default binding")
    expect(page).toContain(
      '<dt>thinking requested</dt><dd>medium <span class="muted">(the agent&#39;s default; the binding sets none)</span>'
    )
    expect(page).toContain(
      '<dt>thinking the job gets</dt><dd><strong>low</strong> <span class="muted">(the model has no medium: moved down to the nearest level it has)</span>'
    )
    // A project's binding (its level overrides the agent's) is shown when that project is chosen.
    await runtime.runPromise(Effect.flatMap(SqlClient, (sql) => sql`INSERT INTO runtime.project (id, name) VALUES ('def-p', 'Definition')`))
    expect(
      (await send("POST", "/agents/data-interfaces/binding", "manager", { project: "def-p", target: "canary/fast", thinking: "off" }))
        .status
    ).toBe(303)
    const forProject = card((await send("GET", "/agents/data-interfaces/definition?project=def-p", "reader")).text)
    expect(forProject).toContain("<code>canary / fast</code>")
    expect(forProject).toContain("project def-p&#39;s binding")
    expect(forProject).toContain('<option value="def-p" selected>')
    expect(forProject).toContain("<dt>thinking the job gets</dt><dd><strong>off</strong></dd>")
    // Unbound: says so, and where to bind it.
    const unbound = card((await send("GET", "/agents/domain-rules/definition", "reader")).text)
    expect(unbound).toContain("Not bound.")
    expect(unbound).toContain('href="/agents/domain-rules/binding"')
  })

  test("deleting a bound provider is refused (409) naming the agents; a bad MCP URL is shown at the URL field", async () => {
    const inUse = await send("POST", "/providers/canary/delete", "manager")
    expect(inUse.status).toBe(409)
    expect(inUse.text).toContain('href="/agents/codebase-inventory/binding"')
    const url = await send("POST", "/mcp-servers", "manager", { name: "meta", url: "http://169.254.169.254/latest", timeoutSec: "30" })
    expect(url.status).toBe(400)
    expect(/id="problems-url"[\s\S]*?<\/div>/.exec(url.text)?.[0]).toContain("169.254.169.254 is a link-local address")
    const run = await send("POST", "/agents/codebase-inventory/run", "manager", {
      task: "",
      root: "/tmp",
      readOnly: "",
      outDir: "/tmp",
      timeoutSec: "x"
    })
    expect(run.status).toBe(400)
    expect(/id="problems-readOnly"[\s\S]*?<\/div>/.exec(run.text)?.[0]).toContain("<li>")
    expect(/id="problems-task"[\s\S]*?<\/div>/.exec(run.text)?.[0]).toContain("fill this in")
  })
})

describe("view helpers", () => {
  const view = (
    id: string,
    models: ReadonlyArray<{ id: string; thinkingLevels: ReadonlyArray<"off" | "low" | "high"> }>
  ): ProviderView => ({
    id,
    kind: "custom",
    api: "openai-completions",
    baseUrl: "http://x",
    builtin: null,
    hasApiKey: true,
    headerNames: [],
    updatedBy: "t",
    updatedAt: new Date(0),
    models: models.map((m) => ({ ...m, contextWindow: 1, maxTokens: 1, cost: null }))
  })

  test("levelsFor and thinkingField: exactly the model's levels; a model id may contain slashes", () => {
    const providers = [view("gw", [{ id: "org/m", thinkingLevels: ["off", "high"] }])]
    expect(parseTarget("gw/org/m")).toEqual({ providerId: "gw", modelId: "org/m" })
    expect(levelsFor(providers, "gw/org/m")).toEqual(["off", "high"])
    expect(levelsFor(providers, "gw/nope")).toEqual([])
    const select = thinkingField(["off", "high"], "high").text
    expect([...select.matchAll(/<option value="([a-z]*)"/g)].map((m) => m[1])).toEqual(["", "off", "high"])
    expect(select).toContain('<option value="high" selected>')
  })

  test("the provider form becomes the store's input; a blank key is absent (keep the stored one)", () => {
    const f = new URLSearchParams({
      id: "p",
      api: "openai-completions",
      baseUrl: "http://x",
      apiKey: "  ",
      modelKey: "k",
      "m.k.id": "m",
      "m.k.contextWindow": "10",
      "m.k.maxTokens": "",
      "m.k.thinking": "low"
    })
    const input = customInput(customFormFrom(f), f)
    expect(input["apiKey"]).toBeUndefined()
    expect(input["models"]).toEqual([{ id: "m", contextWindow: 10, maxTokens: Number.NaN, reasoning: true, thinkingLevels: ["low"] }])
    const h = new URLSearchParams({
      url: "http://x",
      timeoutSec: "5",
      allowedTools: "a\nb",
      headerKey: "z",
      "h.z.name": "X-Key",
      "h.z.value": ""
    })
    expect(mcpInput(mcpFormFrom(h, "s"), h)).toEqual({
      url: "http://x",
      timeoutSec: 5,
      allowedTools: ["a", "b"],
      allowPrivateNetwork: false
    })
  })

  test("events become rows: deltas joined, usage and spans left to the usage panel", () => {
    const at = "2026-01-01T00:00:00Z"
    const events: Array<JobEvent> = [
      { type: "tool.call", seq: 0, at, callId: "1", tool: "shell", input: { command: "rm" }, allowed: false, reason: "not granted" },
      { type: "message.delta", seq: 1, at, text: "Hel" },
      { type: "message.delta", seq: 2, at, text: "lo <b>" },
      {
        type: "usage",
        seq: 3,
        at,
        model: "m",
        inputTokens: 1,
        outputTokens: 1,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd: 0,
        turns: 1,
        compactions: 0,
        contextPeakPercent: 0,
        compactionSummaries: 0
      },
      { type: "job.failed", seq: 4, at, reason: "budget", message: "over" }
    ]
    expect(eventRows(events)).toEqual([
      {
        seq: 0,
        at,
        kind: "blocked",
        label: "blocked",
        text: 'shell {"command":"rm"} (not granted)',
        detail: 'shell\n{\n  "command": "rm"\n}\n\nnot granted'
      },
      { seq: 1, at, kind: "message", label: "message", text: "Hello <b>" },
      { seq: 4, at, kind: "failed", label: "failed: budget", text: "over" }
    ])
    expect(runSlot({ path: "workspace.readOnly", message: "x" })).toBe("readOnly")
    expect(runSlot({ path: "limits.timeoutSec", message: "x" })).toBe("timeoutSec")
  })
})
