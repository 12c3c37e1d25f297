/**
 * web_search and web_fetch end to end: jobs queued through the API run in real job children whose
 * tools call the worker's services channel; the worker searches a scripted backend and fetches scripted
 * pages on 127.0.0.1 (the test-only loopback allowance). Grants follow the project's settings, budgets
 * end in tool errors (never job failures), and nothing reaches the web unless the model calls a tool.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { WebServiceHandlersLive } from "../../src/web/webServices.ts"
import { useServicesApp } from "../support/servicesHarness.ts"
import { startScriptedWeb, type ScriptedWeb } from "../support/webServers.ts"

setDefaultTimeout(90_000)

const h = useServicesApp(WebServiceHandlersLive({ allow: "loopback" }))
let web: ScriptedWeb
beforeAll(async () => {
  web = startScriptedWeb()
})
afterAll(() => web.stop())

const systemPromptOf = (body: unknown): string => {
  const messages = (body as { messages: Array<{ role: string; content: unknown }> }).messages
  const system = messages.find((m) => m.role === "system" || m.role === "developer")
  return typeof system?.content === "string" ? system.content : JSON.stringify(system?.content ?? "")
}
const toolsOf = (body: unknown): string => JSON.stringify((body as { tools?: unknown }).tools ?? [])
const results = (events: ReadonlyArray<JobEvent>) =>
  events.flatMap((e) => (e.type === "tool.result" ? [{ tool: e.tool, success: e.success }] : []))
const started = (events: ReadonlyArray<JobEvent>) => events.find((e) => e.type === "job.started")

let ready = false
const setup = async () => {
  if (ready) return
  ready = true
  expect((await h.api("PUT", "/api/admin/web-search", { kind: "searxng", url: web.url })).status).toBe(200)
  for (const id of ["docs", "nofetch", "tight", "quiet"]) await h.project(id)
  expect((await h.api("PUT", "/api/projects/docs/web", { searchAgents: ["researcher"], fetch: true })).status).toBe(200)
  expect((await h.api("PUT", "/api/projects/nofetch/web", { searchAgents: ["researcher"], fetch: false })).status).toBe(200)
  expect((await h.api("PUT", "/api/projects/tight/web", { searchAgents: ["researcher"], fetch: true, jobSearches: 1 })).status).toBe(200)
  expect((await h.api("PUT", "/api/projects/quiet/web", { searchAgents: ["researcher"], fetch: true })).status).toBe(200)
}

describe("web tools in jobs", () => {
  test("a granted agent searches and fetches; a refused URL and the results come back as tool results; usage is counted", async () => {
    await setup()
    const server = await h.agent("researcher", { tools: ["read", "web"] }, [
      { kind: "turn", toolCalls: [{ name: "web_search", arguments: { query: "effect layers", limit: 3 } }] },
      { kind: "turn", toolCalls: [{ name: "web_fetch", arguments: { url: `${web.url}/pages/reference` } }] },
      { kind: "turn", toolCalls: [{ name: "web_fetch", arguments: { url: `${web.url}/pages/to-private` } }] },
      { kind: "turn", text: "Layers build services." }
    ])
    const { job, events } = await h.runJob("researcher", "docs")
    expect(job.status).toBe("completed")
    expect(started(events)).toMatchObject({ tools: ["read", "web_search", "web_fetch"] })
    const prompt = systemPromptOf(server.requests[0]?.body)
    expect(prompt).toContain("<research-tools>")
    expect(prompt).toContain("web_search, web_fetch")
    expect(prompt).toContain("Never send project content")
    expect(results(events)).toEqual([
      { tool: "web_search", success: true },
      { tool: "web_fetch", success: true },
      { tool: "web_fetch", success: false }
    ])
    const afterSearch = JSON.stringify(server.requests[1]?.body)
    expect(afterSearch).toContain("Result 1 for effect layers")
    expect(afterSearch).toContain("https://docs.example.com/3")
    expect(afterSearch).not.toContain("Result 4 for effect layers")
    expect(JSON.stringify(server.requests[2]?.body)).toContain("A Layer builds services.")
    expect(JSON.stringify(server.requests[3]?.body)).toContain("rule: non-public-address")
    expect(web.searches().map((s) => s.query)).toEqual(["effect layers"])
    const usage = (await h.api("GET", "/api/projects/docs/web")).json<{ usage: { today: { searches: number; fetches: number } } }>().usage
      .today
    expect(usage).toMatchObject({ searches: 1, fetches: 2 })
  })

  test("a long page is cut like every tool result (2000 lines or 50 KB, with a marker)", async () => {
    await setup()
    expect((await h.api("PUT", "/api/projects/docs/web", { searchAgents: ["researcher", "reader-long"] })).status).toBe(200)
    const server = await h.agent("reader-long", { tools: ["web_fetch", "web_search"] }, [
      { kind: "turn", toolCalls: [{ name: "web_fetch", arguments: { url: `${web.url}/pages/long` } }] },
      { kind: "turn", text: "Read it." }
    ])
    const { job, events } = await h.runJob("reader-long", "docs")
    expect(job.status).toBe("completed")
    expect(results(events)).toEqual([{ tool: "web_fetch", success: true }])
    const sent = JSON.stringify(server.requests[1]?.body)
    expect(sent).toContain("Paragraph 1 of a long public reference page.")
    expect(sent).toContain("[output cut at the 2000-line limit")
    expect(sent).not.toContain("Paragraph 5000 of")
  })

  test("an agent the project does not grant, or a job without a project: no web tools, no block, calls blocked, nothing sent", async () => {
    await setup()
    const step = () => [
      { kind: "turn" as const, toolCalls: [{ name: "web_search", arguments: { query: "secret project name" } }] },
      { kind: "turn" as const, text: "No web." }
    ]
    const server = await h.agent("outsider", { tools: ["read", "web"] }, [...step(), ...step()])
    const before = web.hits.length
    for (const project of ["docs", undefined]) {
      const { job, events } = await h.runJob("outsider", project)
      expect(job.status).toBe("completed")
      expect(started(events)).toMatchObject({ tools: ["read"] })
      expect(events.find((e) => e.type === "tool.call")).toMatchObject({ tool: "web_search", allowed: false })
    }
    for (const r of server.requests) {
      expect(systemPromptOf(r.body)).not.toContain("<research-tools>")
      expect(toolsOf(r.body)).not.toContain("web_")
    }
    expect(web.hits.length).toBe(before)
  })

  test("web_fetch is absent without the project's separate fetch opt-in", async () => {
    await setup()
    const server = await h.agent("researcher-b", { tools: ["web_search", "web_fetch"] }, [
      { kind: "turn", toolCalls: [{ name: "web_fetch", arguments: { url: `${web.url}/pages/reference` } }] },
      { kind: "turn", text: "done" }
    ])
    expect((await h.api("PUT", "/api/projects/nofetch/web", { searchAgents: ["researcher-b"] })).status).toBe(200)
    const before = web.hits.length
    const { job, events } = await h.runJob("researcher-b", "nofetch")
    expect(job.status).toBe("completed")
    expect(started(events)).toMatchObject({ tools: ["web_search"] })
    expect(events.find((e) => e.type === "tool.call")).toMatchObject({ tool: "web_fetch", allowed: false })
    expect(toolsOf(server.requests[0]?.body)).toContain("web_search")
    expect(toolsOf(server.requests[0]?.body)).not.toContain("web_fetch")
    expect(systemPromptOf(server.requests[0]?.body)).toContain("You have these research tools: web_search.")
    expect(web.hits.length).toBe(before)
  })

  test("an exhausted budget is a tool error, not a job failure", async () => {
    await setup()
    expect((await h.api("PUT", "/api/projects/tight/web", { searchAgents: ["researcher-c"] })).status).toBe(200)
    const server = await h.agent("researcher-c", { tools: ["web"] }, [
      { kind: "turn", toolCalls: [{ name: "web_search", arguments: { query: "first" } }] },
      { kind: "turn", toolCalls: [{ name: "web_search", arguments: { query: "second" } }] },
      { kind: "turn", text: "Enough." }
    ])
    const { job, events } = await h.runJob("researcher-c", "tight")
    expect(job.status).toBe("completed")
    expect(results(events)).toEqual([
      { tool: "web_search", success: true },
      { tool: "web_search", success: false }
    ])
    expect(JSON.stringify(server.requests[2]?.body)).toContain("web search budget for this job is used up (1 per job)")
    expect(web.searches().map((s) => s.query)).not.toContain("second")
  })

  test("no web call happens unless the model calls a tool", async () => {
    await setup()
    expect((await h.api("PUT", "/api/projects/quiet/web", { searchAgents: ["thinker"] })).status).toBe(200)
    await h.agent("thinker", { tools: ["read", "web"] }, [{ kind: "turn", text: "I know this already." }])
    const before = web.hits.length
    const { job, events } = await h.runJob("thinker", "quiet", "Explain Effect layers.")
    expect(job.status).toBe("completed")
    expect(started(events)).toMatchObject({ tools: ["read", "web_search", "web_fetch"] })
    expect(web.hits.length).toBe(before)
    const usage = (await h.api("GET", "/api/projects/quiet/web")).json<{ usage: { today: { searches: number; fetches: number } } }>().usage
      .today
    expect(usage).toMatchObject({ searches: 0, fetches: 0 })
  })
})
