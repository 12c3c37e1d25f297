/**
 * In-place edits in the portal through app.handle: a project's settings are editable (agents.manage, the API's checks,
 * every problem at its field); every refused form shows the one error summary linking to its fields;
 * changes that stay on their page (binding set and remove, agent restore, shared-skill save and
 * restore, project settings) answer htmx with the page's new body for `<main>` and a plain post with a redirect.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { SkillStore } from "../../src/agents/SkillStore.ts"
import { makeApp } from "../../src/http/app.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { queueableBinding } from "../support/api.ts"
import { createRootDir } from "../support/jobRoots.ts"
import { makeTestRuntime, signInTestUsers, type AppRuntime } from "./harness.ts"

setDefaultTimeout(60_000)

const BASE = "http://localhost"
let runtime: AppRuntime
let app: ReturnType<typeof makeApp>
const sessions: Record<string, { cookie: string; csrf: string }> = {}
const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-inplace-")))
process.on("exit", () => rmSync(elsewhere, { recursive: true, force: true }))

const send = async (
  method: "GET" | "POST",
  path: string,
  session: string,
  fields: Record<string, string> = {},
  htmx: boolean | "boosted" = false
) => {
  const s = sessions[session]!
  const body = new URLSearchParams(fields)
  if (method === "POST") body.set("_csrf", s.csrf)
  const headers: Record<string, string> = {
    host: "localhost",
    origin: BASE,
    "sec-fetch-site": "same-origin",
    cookie: `__Host-kintsugi-session=${s.cookie}`
  }
  if (htmx !== false)
    Object.assign(headers, { "hx-request": "true", "hx-current-url": `${BASE}${path}` }, htmx === "boosted" ? { "hx-boosted": "true" } : {})
  const res = await app.handle(
    new Request(`${BASE}${path}`, { method, headers, body: method === "POST" ? body : null, redirect: "manual" })
  )
  return { status: res.status, location: res.headers.get("location"), hxRedirect: res.headers.get("hx-redirect"), text: await res.text() }
}

/** The summary's links: target id → text. */
const summary = (page: string): Record<string, string> => {
  const box = /<div class="error-summary"[\s\S]*?<\/div>/.exec(page)?.[0] ?? ""
  return Object.fromEntries(
    [...box.matchAll(/<a href="#([^"]+)">([^<]*)<\/a>/g)].map((m) => [m[1] ?? "", (m[2] ?? "").replace(/&#39;/g, "'")])
  )
}
const slot = (page: string, id: string): string => new RegExp(`id="${id}"[\\s\\S]*?</div>`).exec(page)?.[0] ?? ""
/** A fragment for `<main>`: no document around it. */
const isFragment = (text: string): boolean => !text.includes("<html") && !text.includes("<main")

const run = <A, E>(effect: Effect.Effect<A, E, AgentStore | SkillStore | ProviderStore | Projects>) =>
  runtime.runPromise(effect as Effect.Effect<A, E, never>)
const agentFile = (body: string) => ({
  files: [
    { path: "in-place.md", content: `---\nname: in-place\nversion: 1\ndescription: Restored in place.\ntools:\n  - read\n---\n${body}` }
  ]
})

beforeAll(async () => {
  runtime = await makeTestRuntime()
  app = makeApp({ runtime, log: (line) => console.error(line) })
  Object.assign(sessions, await signInTestUsers(runtime))
  await run(Effect.flatMap(Projects, (p) => p.create({ id: "settings-p", name: "Before" })))
  await run(
    Effect.flatMap(ProviderStore, (s) =>
      s.create(
        {
          kind: "custom",
          id: "gw",
          api: "openai-completions",
          baseUrl: "http://127.0.0.1:9/v1",
          apiKey: "sk-x",
          models: [{ id: "m", contextWindow: 8000, maxTokens: 1000, thinkingLevels: ["off", "low"] }]
        },
        "setup"
      )
    )
  )
  await run(Effect.flatMap(AgentStore, (s) => s.create(agentFile("First.\n"), "setup")))
  await run(Effect.flatMap(AgentStore, (s) => s.save("in-place", agentFile("Second.\n"), "setup")))
  await run(
    Effect.flatMap(SkillStore, (s) => s.create({ name: "in-place-skill", description: "Kept short.", content: "Be brief.\n" }, "setup"))
  )
  // Bound, so the run form's summary below lists the fields' problems only (an unbound agent is one too).
  await runtime.runPromise(queueableBinding("codebase-inventory"))
}, 120_000)

afterAll(async () => {
  await runtime?.dispose()
})

describe("project settings", () => {
  test("a manager edits name and root; a plain post redirects, htmx gets the page's new body", async () => {
    const form = await send("GET", "/projects/settings-p", "manager")
    expect(form.text).toContain('action="/projects/settings-p"')
    expect(form.text).toContain('name="name" value="Before"')
    const root = createRootDir("settings-")
    const saved = await send("POST", "/projects/settings-p", "manager", { name: "After", root })
    expect(saved).toMatchObject({ status: 303, location: "/projects/settings-p?project-saved=1" })
    expect((await send("GET", "/projects/settings-p?project-saved=1", "manager")).text).toContain("Saved the settings of After.")
    expect(
      await run(
        Effect.map(
          Effect.flatMap(Projects, (p) => p.get("settings-p")),
          (p) => ({ name: p.name, root: p.root })
        )
      )
    ).toEqual({ name: "After", root })

    const inPlace = await send("POST", "/projects/settings-p", "manager", { name: "Again", root: "" }, true)
    expect(inPlace.status).toBe(200)
    expect(isFragment(inPlace.text)).toBe(true)
    expect(inPlace.text).toContain("<h1>Again</h1>")
    expect(inPlace.text).toContain("Saved the settings of Again.")
    expect(
      await run(
        Effect.map(
          Effect.flatMap(Projects, (p) => p.get("settings-p")),
          (p) => p.root
        )
      )
    ).toBeNull()
  })

  test("refused settings: every problem at its field and in the summary, in plain words; nothing stored, no host path echoed", async () => {
    const refused = await send("POST", "/projects/settings-p", "manager", { name: "", root: elsewhere })
    expect(refused.status).toBe(400)
    // The name is checked first (schema), so the root's check waits: one round for the schema, as the API.
    expect(summary(refused.text)).toEqual({ "problems-name": "Name: fill this in" })
    const outside = await send("POST", "/projects/settings-p", "manager", { name: "Named", root: elsewhere }, true)
    expect(outside.status).toBe(400)
    expect(isFragment(outside.text)).toBe(true)
    expect(summary(outside.text)).toEqual({ "problems-root": "Root folder: resolves outside the job roots (symbolic links followed)" })
    expect(slot(outside.text, "problems-root")).toContain("resolves outside the job roots")
    // The typed value stays in the field, but no message carries the host path.
    expect(outside.text.split(elsewhere).length - 1).toBe(1)
    expect(
      await run(
        Effect.map(
          Effect.flatMap(Projects, (p) => p.get("settings-p")),
          (p) => p.name
        )
      )
    ).toBe("Again")
  })

  test("a reader sees the settings without a form and cannot post them", async () => {
    const page = await send("GET", "/projects/settings-p", "reader")
    expect(page.text).not.toContain('action="/projects/settings-p"')
    expect(page.text).toContain("<dt>Name</dt><dd>Again</dd>")
    expect((await send("POST", "/projects/settings-p", "reader", { name: "Mine" })).status).toBe(403)
    expect(
      await run(
        Effect.map(
          Effect.flatMap(Projects, (p) => p.get("settings-p")),
          (p) => p.name
        )
      )
    ).toBe("Again")
  })
})

describe("one error summary on every form", () => {
  test("MCP server: name, URL and timeout problems linked from the summary", async () => {
    const res = await send("POST", "/mcp-servers", "manager", { name: "Bad Name", url: "http://169.254.169.254/latest", timeoutSec: "30" })
    expect(res.status).toBe(400)
    expect(summary(res.text)["problems-name"]).toContain("Name: must use only lower-case letters, digits and dashes")
    const url = await send("POST", "/mcp-servers", "manager", { name: "kb", url: "http://169.254.169.254/latest", timeoutSec: "30" })
    expect(url.status).toBe(400)
    expect(Object.keys(summary(url.text))).toEqual(["problems-url"])
    expect(summary(url.text)["problems-url"]).toStartWith("URL: resolves to a non-public address (169.254.169.254 is a link-local address)")
    const timeout = await send("POST", "/mcp-servers", "manager", { name: "kb", url: "http://127.0.0.1:9/mcp", timeoutSec: "soon" })
    expect(timeout.status).toBe(400)
    expect(Object.keys(summary(timeout.text))).toEqual(["problems-timeoutSec"])
    expect(summary(timeout.text)["problems-timeoutSec"]).toStartWith("Timeout: ")
  })

  test("binding: a thinking level the model lacks, linked to the thinking field", async () => {
    const res = await send("POST", "/agents/in-place/binding", "manager", { project: "", target: "gw/m", thinking: "high" })
    expect(res.status).toBe(400)
    expect(Object.keys(summary(res.text))).toEqual(["problems-thinking"])
    expect(summary(res.text)["problems-thinking"]).toStartWith("Default thinking: ")
  })

  test("run form: the summary says the job was not started and links each field", async () => {
    const res = await send("POST", "/agents/codebase-inventory/run", "manager", {
      task: "",
      root: "/tmp",
      readOnly: "",
      outDir: "/tmp",
      timeoutSec: "x"
    })
    expect(res.status).toBe(400)
    const links = summary(res.text)
    expect(links["problems-task"]).toBe("Task: fill this in")
    expect(Object.keys(links).sort()).toEqual(["problems-readOnly", "problems-root", "problems-task", "problems-timeoutSec"])
    expect(links["problems-timeoutSec"]).toStartWith("Time limit: ")
    // A problem in the folders brings the server's job roots along.
    expect(links["problems-root"]).toStartWith("Workspace root: every folder must lie inside a job root of this server: /")
    expect(/<div class="error-summary"[\s\S]*?<\/div>/.exec(res.text)?.[0]).toContain("This job was not started.")
  })

  test("API token form: name and expiry problems in the summary", async () => {
    const res = await send("POST", "/account/tokens", "manager", { name: "", expiresInDays: "forever" })
    expect(res.status).toBe(400)
    expect(Object.keys(summary(res.text)).sort()).toEqual(["problems-expiresInDays", "problems-name"])
  })
})

describe("changes that stay on their page", () => {
  test("binding set and remove: htmx gets the page's body with the new table; a plain post still redirects", async () => {
    const set = await send("POST", "/agents/in-place/binding", "manager", { project: "", target: "gw/m", thinking: "low" }, true)
    expect(set.status).toBe(200)
    expect(isFragment(set.text)).toBe(true)
    expect(set.text).toContain("Bound to gw/m. The next job uses it.")
    expect(set.text).toContain("<code>gw / m</code>")
    expect(set.text).toContain('hx-target="#main"')
    const removed = await send("POST", "/agents/in-place/binding/delete", "manager", { project: "" }, true)
    expect(removed.status).toBe(200)
    expect(isFragment(removed.text)).toBe(true)
    expect(removed.text).toContain("Removed the installation default.")
    expect(removed.text).toContain("Not bound.")
    // Without JavaScript: the redirect, as before.
    expect(await send("POST", "/agents/in-place/binding", "manager", { project: "", target: "gw/m", thinking: "" })).toMatchObject({
      status: 303,
      location: "/agents/in-place/binding?bound=gw%2Fm"
    })
    expect(await send("POST", "/agents/in-place/binding/delete", "manager", { project: "" })).toMatchObject({ status: 303 })
    // A boosted request swaps whole pages: it gets the page (GET) or a full navigation (a change), never a body.
    expect((await send("GET", "/agents/in-place/binding", "manager", {}, true)).text).toContain("<main")
    expect((await send("POST", "/agents/in-place/binding", "manager", { project: "", target: "gw/m", thinking: "" })).status).toBe(303)
    expect(await send("POST", "/agents/in-place/binding/delete", "manager", { project: "" }, "boosted")).toMatchObject({
      status: 200,
      hxRedirect: "/agents/in-place/binding?removed=the%20installation%20default"
    })
  })

  test("agent restore: htmx gets the history with v1 current and the restore recorded; a plain post redirects", async () => {
    const restored = await send("POST", "/agents/in-place/versions/1/restore", "manager", {}, true)
    expect(restored.status).toBe(200)
    expect(isFragment(restored.text)).toBe(true)
    expect(restored.text).toContain("Version 1 is current again.")
    expect(/<tr class="current">[\s\S]*?<\/tr>/.exec(restored.text)?.[0]).toContain(">v1</a>")
    expect(restored.text).toContain("<h2>Restores</h2>")
    expect(await send("POST", "/agents/in-place/versions/2/restore", "manager")).toMatchObject({
      status: 303,
      location: "/agents/in-place/versions?restored=2"
    })
  })

  test("shared-skill save: htmx gets the page's body (saved, unchanged, or the problems); a plain post redirects", async () => {
    const saved = await send(
      "POST",
      "/agent-skills/in-place-skill",
      "manager",
      { description: "Kept short.", content: "Be briefer.\n" },
      true
    )
    expect(saved.status).toBe(200)
    expect(isFragment(saved.text)).toBe(true)
    expect(saved.text).toContain("Saved. Agents using this skill get the new text at their next job.")
    expect(saved.text).toContain("Be briefer.")
    expect(saved.text).toContain(">v2</span>")
    const same = await send(
      "POST",
      "/agent-skills/in-place-skill",
      "manager",
      { description: "Kept short.", content: "Be briefer.\n" },
      true
    )
    expect(same.text).toContain("Nothing changed, so no version was added.")
    const bad = await send("POST", "/agent-skills/in-place-skill", "manager", { description: "", content: "" }, true)
    expect(bad.status).toBe(400)
    expect(isFragment(bad.text)).toBe(true)
    expect(Object.keys(summary(bad.text)).length).toBeGreaterThan(0)
    expect(
      await send("POST", "/agent-skills/in-place-skill", "manager", { description: "Kept short.", content: "Be brief.\n" })
    ).toMatchObject({
      status: 303,
      location: "/agent-skills/in-place-skill?skill-saved=1"
    })
  })

  test("shared-skill restore from its history: htmx gets the history with the new version; a plain post redirects", async () => {
    const restored = await send("POST", "/agent-skills/in-place-skill/versions/2/restore", "manager", {}, true)
    expect(restored.status).toBe(200)
    expect(isFragment(restored.text)).toBe(true)
    expect(restored.text).toContain("Restored the text of version 2 as a new version.")
    expect(/<tr class="current">[\s\S]*?<\/tr>/.exec(restored.text)?.[0]).toContain(">v4</a>")
    expect(await send("POST", "/agent-skills/in-place-skill/versions/1/restore", "manager")).toMatchObject({
      status: 303,
      location: "/agent-skills/in-place-skill/versions?skill-restored=1"
    })
  })
})
