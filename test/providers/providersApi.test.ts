/** Providers, bindings and MCP servers over the API: secrets write-only and sealed, checks before saving. */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { McpServers } from "../../src/providers/McpServers.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { useApp } from "../support/appHarness.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const h = useApp()
const KEY = "sk-provider-CANARY-7c1d0e55aa"
const HEADER = "hdr-CANARY-93b1f0c2"
const custom = (extra: Record<string, unknown> = {}) => ({
  kind: "custom",
  id: "gw",
  api: "openai-completions",
  baseUrl: "https://gateway.example/v1",
  apiKey: KEY,
  headers: { "X-Gateway-Token": HEADER },
  models: [
    { id: "fast", contextWindow: 128000, maxTokens: 8192 },
    { id: "thinker", contextWindow: 200000, maxTokens: 16000, reasoning: true, thinkingLevels: ["off", "low", "high"] }
  ],
  ...extra
})

const dump = () =>
  h.rt
    .runPromise(
      Effect.flatMap(
        SqlClient,
        (sql) =>
          sql<{ t: string | null }>`SELECT (SELECT string_agg(row_to_json(p)::text, ' ') FROM admin.llm_provider p) ||
                                       coalesce((SELECT string_agg(row_to_json(m)::text, ' ') FROM admin.mcp_server m), '') AS t`
      )
    )
    .then((rows) => rows[0]?.t ?? "")

describe("LLM providers", () => {
  test("create: the key is sealed at rest and never returned", async () => {
    const r = await h.api("POST", "/api/admin/providers", custom())
    expect(r.status).toBe(201)
    expect(r.json<{ provider: { hasApiKey: boolean; headerNames: Array<string> } }>().provider).toMatchObject({
      hasApiKey: true,
      headerNames: ["X-Gateway-Token"]
    })
    const stored = await dump()
    expect(stored).toContain("v1:")
    expect(stored).not.toContain(KEY)
    expect(stored).not.toContain(HEADER)
    for (const path of ["/api/admin/providers", "/api/admin/providers/gw"]) expect((await h.api("GET", path)).text).not.toContain(KEY)
    const models = r.json<{ provider: { models: Array<{ id: string; thinkingLevels: Array<string> }> } }>().provider.models
    expect(models.find((m) => m.id === "thinker")?.thinkingLevels).toEqual(["off", "low", "high"])
  })

  test("update without a key keeps the stored one; only the worker's configs open it", async () => {
    const { apiKey: _k, headers: _h, ...rest } = custom()
    expect((await h.api("PUT", "/api/admin/providers/gw", { ...rest, baseUrl: "https://gateway2.example/v1" })).status).toBe(200)
    const [config] = await h.rt.runPromise(Effect.flatMap(ProviderStore, (p) => p.configs(["gw"])))
    expect(config).toMatchObject({ apiKey: KEY, baseUrl: "https://gateway2.example/v1", headers: { "X-Gateway-Token": HEADER } })
  })

  test("every problem of a bad provider at once; a new provider needs a key; duplicates conflict", async () => {
    const bad = await h.api("POST", "/api/admin/providers", {
      kind: "custom",
      id: "Bad Id",
      api: "smoke-signals",
      baseUrl: "ftp://x",
      models: []
    })
    expect(bad.status).toBe(400)
    const paths = bad.json<{ error: { problems: Array<{ path: string }> } }>().error.problems.map((p) => p.path)
    expect(paths).toEqual(expect.arrayContaining(["id", "api", "baseUrl", "models"]))
    const { apiKey: _k, ...keyless } = custom({ id: "nokey" })
    expect((await h.api("POST", "/api/admin/providers", keyless)).json<{ error: { problems: unknown } }>().error.problems).toEqual([
      { path: "apiKey", message: "is required for a new provider" }
    ])
    expect((await h.api("POST", "/api/admin/providers", custom())).status).toBe(409)
    expect((await h.api("POST", "/api/admin/providers", { kind: "builtin", id: "x", builtin: "no-such", apiKey: "k" })).status).toBe(400)
  })

  test("an update's malformed body → 400 naming each field; the route's id is not the body's; nothing stored", async () => {
    const { apiKey: _k, headers: _h, id: _id, ...rest } = custom()
    const bad = await h.api("PUT", "/api/admin/providers/gw", { ...rest, baseUrl: 7, models: "fast" })
    expect(bad.status).toBe(400)
    expect(
      bad
        .json<{ error: { problems: Array<{ path: string }> } }>()
        .error.problems.map((p) => p.path)
        .sort()
    ).toEqual(["baseUrl", "models"])
    expect((await h.api("PUT", "/api/admin/providers/gw", ["not", "an", "object"])).status).toBe(400)
    const [config] = await h.rt.runPromise(Effect.flatMap(ProviderStore, (p) => p.configs(["gw"])))
    expect(config).toMatchObject({ baseUrl: "https://gateway2.example/v1" })
    expect((await h.api("PUT", "/api/admin/providers/never-made", rest)).status).toBe(404)
  })

  test("the built-in catalog lists pi-ai's providers with their models' thinking levels", async () => {
    const r = await h.api("GET", "/api/admin/providers/catalog")
    const providers = r.json<{ providers: Array<{ id: string; models: Array<{ id: string; thinkingLevels: Array<string> }> }> }>().providers
    expect(providers.length).toBeGreaterThan(10)
    expect(providers.find((p) => p.id === "anthropic")?.models.length).toBeGreaterThan(0)
  })
})

describe("bindings", () => {
  test("only models the provider has, only thinking levels the model supports; a bound provider cannot be deleted", async () => {
    expect((await h.api("PUT", "/api/admin/agents/codebase-inventory/bindings", { providerId: "gw", modelId: "nope" })).status).toBe(400)
    const thinking = await h.api("PUT", "/api/admin/agents/codebase-inventory/bindings", {
      providerId: "gw",
      modelId: "thinker",
      thinking: "max"
    })
    expect(thinking.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems).toEqual([
      { path: "thinking", message: 'model "thinker" supports off, low, high' }
    ])
    expect(
      (await h.api("PUT", "/api/admin/agents/codebase-inventory/bindings", { providerId: "gw", modelId: "thinker", thinking: "high" }))
        .status
    ).toBe(200)
    expect((await h.api("POST", "/api/projects", { id: "acme", name: "Acme" })).status).toBe(201)
    expect((await h.api("PUT", "/api/admin/agents/codebase-inventory/bindings/acme", { providerId: "gw", modelId: "fast" })).status).toBe(
      200
    )
    const listed = (await h.api("GET", "/api/admin/agents/codebase-inventory/bindings")).json<{
      bindings: Array<{ projectId: string; modelId: string }>
    }>()
    expect(listed.bindings.map((b) => [b.projectId, b.modelId])).toEqual([
      ["", "thinker"],
      ["acme", "fast"]
    ])
    const catalog = (await h.api("GET", "/api/admin/agents")).json<{
      agents: Array<{ name: string; binding: { modelId: string } | null }>
    }>()
    expect(catalog.agents.find((a) => a.name === "codebase-inventory")?.binding?.modelId).toBe("thinker")
    const del = await h.api("DELETE", "/api/admin/providers/gw")
    expect(del.status).toBe(409)
    expect(del.json<{ error: { agents: Array<string> } }>().error.agents).toEqual(["codebase-inventory"])
  })

  test("bindings need providers.manage", async () => {
    const agentsOnly = await h.user("editor", ["agents.manage"])
    expect(
      (await h.api("PUT", "/api/admin/agents/codebase-inventory/bindings", { providerId: "gw", modelId: "fast" }, agentsOnly)).status
    ).toBe(403)
    expect((await h.api("POST", "/api/admin/providers", custom({ id: "other" }), agentsOnly)).status).toBe(403)
  })
})

describe("MCP servers", () => {
  test("private and metadata addresses are refused unless allowed; header values are write-only", async () => {
    const meta = await h.api("PUT", "/api/admin/mcp-servers/meta", { url: "http://169.254.169.254/mcp" })
    expect(meta.status).toBe(400)
    expect(meta.text).toContain("169.254.169.254 is a link-local address")
    expect((await h.api("PUT", "/api/admin/mcp-servers/creds", { url: "https://u:p@example.com/mcp" })).status).toBe(400)
    const ok = await h.api("PUT", "/api/admin/mcp-servers/docs", {
      url: "http://127.0.0.1:9999/mcp",
      allowPrivateNetwork: true,
      headers: { Authorization: `Bearer ${HEADER}` },
      allowedTools: ["search"]
    })
    expect(ok.status).toBe(200)
    expect(ok.json<{ server: unknown }>().server).toMatchObject({
      name: "docs",
      headerNames: ["Authorization"],
      allowPrivateNetwork: true,
      allowedTools: ["search"]
    })
    expect(await dump()).not.toContain(HEADER)
    const configs = await h.rt.runPromise(Effect.flatMap(McpServers, (m) => m.configs(["docs"])))
    expect(configs[0]?.headers).toEqual({ Authorization: `Bearer ${HEADER}` })
    expect((await h.api("DELETE", "/api/admin/mcp-servers/docs")).status).toBe(204)
    expect((await h.api("GET", "/api/admin/mcp-servers/docs")).status).toBe(404)
  })

  test("a malformed body → 400 naming each field, a bad route name → 400 naming `name`; nothing stored", async () => {
    const bad = await h.api("PUT", "/api/admin/mcp-servers/shape", { url: 5, timeoutSec: "soon", allowedTools: "all" })
    expect(bad.status).toBe(400)
    expect(
      bad
        .json<{ error: { problems: Array<{ path: string }> } }>()
        .error.problems.map((p) => p.path)
        .sort()
    ).toEqual(["allowedTools", "timeoutSec", "url"])
    expect((await h.api("PUT", "/api/admin/mcp-servers/shape", "https://example.com/mcp")).status).toBe(400)
    const badName = await h.api("PUT", "/api/admin/mcp-servers/Bad_Name", { url: "https://example.com/mcp" })
    expect(badName.status).toBe(400)
    expect(badName.json<{ error: { problems: Array<{ path: string }> } }>().error.problems.map((p) => p.path)).toEqual(["name"])
    expect((await h.api("GET", "/api/admin/mcp-servers/shape")).status).toBe(404)
    expect(
      (await h.api("GET", "/api/admin/mcp-servers")).json<{ servers: Array<{ name: string }> }>().servers.map((s) => s.name)
    ).not.toContain("Bad_Name")
  })

  test("no response of this file carried a key or header value", () => {
    const all = h.bodies.join("\n")
    expect(all).not.toContain(KEY)
    expect(all).not.toContain(HEADER)
  })
})
