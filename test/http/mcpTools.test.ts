/**
 * MCP servers in the API and portal: the tools listed live (read-only flags, offered or not) through
 * the same pinned client a job uses, allowing a tool by name, errors shown plainly and never with a
 * header value; and agent validity naming MCP servers that are not registered.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { createAgentFiles, PASSWORD, useApi } from "../support/api.ts"
import { startTestMcpServer, type TestMcp } from "../support/mcpServers.ts"

setDefaultTimeout(30_000)

const api = useApi()
const CANARY = "mcp-portal-header-CANARY-90ab12"

let mcp: TestMcp
beforeAll(() => {
  mcp = startTestMcpServer()
})
afterAll(() => mcp.stop())

const asManager = (method: string, path: string, json?: unknown) =>
  api.request(method, path, { token: api.manager.token, ...(json === undefined ? {} : { json }) })
const register = (name: string, url: string) =>
  asManager("PUT", `/api/admin/mcp-servers/${name}`, { url, headers: { "X-Api-Key": CANARY }, allowPrivateNetwork: true })

describe("listing a server's tools live", () => {
  test("API: every tool with its read-only flag and whether jobs get it; the header reaches the server, never the response", async () => {
    expect((await register("kb", mcp.url)).status).toBe(200)
    const r = await asManager("GET", "/api/admin/mcp-servers/kb/tools")
    expect(r.status).toBe(200)
    const tools = r.json().tools as Array<{ name: string; readOnly: boolean; allowed: boolean; offered: boolean }>
    expect(tools.find((t) => t.name === "lookup")).toMatchObject({ readOnly: true, allowed: false, offered: true })
    expect(tools.find((t) => t.name === "delete_item")).toMatchObject({ readOnly: false, allowed: false, offered: false })
    expect(mcp.requests.some((h) => h.get("x-api-key") === CANARY)).toBe(true)
    expect(r.text).not.toContain(CANARY)
  })

  test("API: an admin allows a tool by name; the listing then offers it; stopping the allowance withdraws it", async () => {
    const allowed = await asManager("POST", "/api/admin/mcp-servers/kb/allowed-tools", { tool: "delete_item", allowed: true })
    expect(allowed.status).toBe(200)
    expect(allowed.json().server.allowedTools).toEqual(["delete_item"])
    const tools = (await asManager("GET", "/api/admin/mcp-servers/kb/tools")).json().tools as Array<{
      name: string
      offered: boolean
      allowed: boolean
    }>
    expect(tools.find((t) => t.name === "delete_item")).toMatchObject({ allowed: true, offered: true })
    // The stored headers stay.
    expect((await asManager("GET", "/api/admin/mcp-servers/kb")).json().server.headerNames).toEqual(["X-Api-Key"])
    const withdrawn = await asManager("POST", "/api/admin/mcp-servers/kb/allowed-tools", { tool: "delete_item", allowed: false })
    expect(withdrawn.json().server.allowedTools).toEqual([])
    const bad = await asManager("POST", "/api/admin/mcp-servers/kb/allowed-tools", { tool: "", allowed: true })
    expect(bad.status).toBe(400)
  })

  test("API: a server that fails is a 502 naming why, without the header value it echoed", async () => {
    const echo = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => new Response(`no such key: ${req.headers.get("x-api-key")}`, { status: 401 })
    })
    try {
      expect((await register("echoer", `http://127.0.0.1:${echo.port}/mcp`)).status).toBe(200)
      const r = await asManager("GET", "/api/admin/mcp-servers/echoer/tools")
      expect(r.status).toBe(502)
      expect(r.json().error.message).toMatch(/^cannot list the tools of MCP server "echoer": cannot connect: .*no such key: \[redacted\]/)
      expect(r.text).not.toContain(CANARY)
    } finally {
      await echo.stop(true)
    }
  })

  test("portal: the server page's tools fragment shows flags and allow buttons; a failure shows plainly", async () => {
    const session = await api.signIn("manager", PASSWORD)
    const fragment = await api.request("GET", "/mcp-servers/kb/tools", { session, csrf: false, headers: { "hx-request": "true" } })
    expect(fragment.status).toBe(200)
    expect(fragment.text).toContain("<code>lookup</code>")
    expect(fragment.text).toContain("read-only")
    expect(fragment.text).toContain("not read-only")
    expect(fragment.text).toContain('name="tool" value="delete_item"')
    expect(fragment.text).not.toContain(CANARY)
    const page = await api.request("GET", "/mcp-servers/kb", { session, csrf: false })
    expect(page.text).toContain('hx-get="/mcp-servers/kb/tools"')
    const allow = await api.request("POST", "/mcp-servers/kb/allowed-tools", {
      session,
      form: new URLSearchParams({ tool: "delete_item", allowed: "1" })
    })
    expect(allow.status).toBe(303)
    expect(allow.headers.get("location")).toBe("/mcp-servers/kb/tools?updated=delete_item")
    const after = await api.request("GET", "/mcp-servers/kb/tools?updated=delete_item", { session, csrf: false })
    expect(after.text).toContain("Saved delete_item.")
    expect(after.text).toContain("Stop allowing")
    // Through htmx the change stays on the page: the answer is the tools fragment itself, no redirect.
    const stop = await api.request("POST", "/mcp-servers/kb/allowed-tools", {
      session,
      form: new URLSearchParams({ tool: "delete_item", allowed: "0" }),
      headers: { "hx-request": "true" }
    })
    expect(stop.status).toBe(200)
    expect(stop.headers.get("hx-redirect")).toBeNull()
    expect(stop.text).toStartWith('<div id="mcp-tools">')
    expect(stop.text).toContain('name="tool" value="delete_item"><input type="hidden" name="allowed" value="1"')
    const failing = await api.request("GET", "/mcp-servers/echoer/tools", { session, csrf: false, headers: { "hx-request": "true" } })
    expect(failing.text).toContain("cannot list the tools of MCP server")
    expect(failing.text).not.toContain(CANARY)
    // A reader may not make the server connect.
    const reader = await api.signIn("reader", PASSWORD)
    expect((await api.request("GET", "/mcp-servers/kb/tools", { session: reader, csrf: false })).status).toBe(403)
  })
})

describe("agent validity and MCP servers", () => {
  test("saving an agent that grants an unregistered server is refused, naming it", async () => {
    const r = await asManager("POST", "/api/admin/agents", createAgentFiles("mcp-nowhere", { tools: ["read", "mcp__jira__*"] }))
    expect(r.status).toBe(400)
    expect(r.json().error.problems).toContainEqual({ path: "mcp-nowhere.md#tools.1", message: 'MCP server "jira" is not registered' })
  })

  test("an agent whose MCP server is removed after saving shows as invalid in the catalog and its page", async () => {
    expect((await register("wiki", mcp.url)).status).toBe(200)
    const saved = await asManager(
      "POST",
      "/api/admin/agents",
      createAgentFiles("mcp-wiki-reader", { tools: ["read", "mcp__wiki__lookup"] })
    )
    expect(saved.status).toBe(201)
    expect(saved.json().agent.problems).toEqual([])
    expect((await asManager("DELETE", "/api/admin/mcp-servers/wiki")).status).toBe(204)
    const problem = { path: "mcp-wiki-reader.md#tools.1", message: 'MCP server "wiki" is not registered' }
    expect((await asManager("GET", "/api/admin/agents/mcp-wiki-reader")).json().agent.problems).toEqual([problem])
    const catalog = (await asManager("GET", "/api/admin/agents")).json().agents as Array<{ name: string; problems: unknown }>
    expect(catalog.find((a) => a.name === "mcp-wiki-reader")?.problems).toEqual([problem])
  })
})
