/**
 * The services channel end to end: jobs queued through the API run in real job children that call the
 * worker's loopback endpoint with their token; memory tools exist only where the project grants them,
 * `job.started` lists what the job got, and the <research-tools> block follows the grants.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { createFakeServices } from "../support/fakeServices.ts"
import { useServicesApp } from "../support/servicesHarness.ts"

setDefaultTimeout(60_000)

const fake = createFakeServices(["alpha"])
const h = useServicesApp(fake.layer)

const systemPromptOf = (body: unknown): string => {
  const messages = (body as { messages: Array<{ role: string; content: unknown }> }).messages
  const system = messages.find((m) => m.role === "system" || m.role === "developer")
  return typeof system?.content === "string" ? system.content : JSON.stringify(system?.content ?? "")
}

describe("jobs granted service tools", () => {
  test("a job of a project with the grant gets the tools, the block, and calls the channel with its own grant", async () => {
    const server = await h.agent("recaller", { tools: ["read", "memory"] }, [
      { kind: "turn", toolCalls: [{ name: "memory_search", arguments: { query: "retry policy" } }] },
      { kind: "turn", text: "Found it." }
    ])
    await h.project("alpha")
    const { job, events } = await h.runJob("recaller", "alpha")
    expect(job.status).toBe("completed")
    const started = events.find((e) => e.type === "job.started")
    // Only the handlers this installation has (search and save here), in a stable order.
    expect(started).toMatchObject({ tools: ["read", "memory_search", "memory_save"] })
    const prompt = systemPromptOf(server.requests[0]?.body)
    expect(prompt).toContain("<research-tools>")
    expect(prompt).toContain("memory_search, memory_save")
    const call = fake.calls.find((c) => c.grant.jobId === job.id)
    expect(call).toMatchObject({
      tool: "memory_search",
      input: { query: "retry policy" },
      grant: { projectId: "alpha", agentId: "recaller", tools: ["memory_search", "memory_save"] }
    })
    const result = events.find((e) => e.type === "tool.result")
    expect(result).toMatchObject({ tool: "memory_search", success: true })
    // The model got the service's answer.
    expect(JSON.stringify(server.requests[1]?.body)).toContain("memory_search in alpha for recaller")
    // The token never shows: not in an event, not in a log line.
    expect(JSON.stringify(events)).not.toContain("kst_")
    expect(h.logs.join("\n")).not.toContain("kst_")
  })

  test("a project without the grant, or no project: no memory tools, no block, a call is blocked as not granted", async () => {
    const steps = () => [
      { kind: "turn" as const, toolCalls: [{ name: "memory_search", arguments: { query: "x" } }] },
      { kind: "turn" as const, text: "No memory." }
    ]
    const off = await h.agent("forgetful", { tools: ["read", "memory_search"] }, [...steps(), ...steps()])
    await h.project("gamma")
    const before = fake.calls.length
    for (const project of ["gamma", undefined]) {
      const { job, events } = await h.runJob("forgetful", project)
      expect(job.status).toBe("completed")
      expect(events.find((e) => e.type === "job.started")).toMatchObject({ tools: ["read"] })
      expect(events.find((e) => e.type === "tool.call")).toMatchObject({ tool: "memory_search", allowed: false })
    }
    for (const r of off.requests) {
      expect(systemPromptOf(r.body)).not.toContain("<research-tools>")
      expect(JSON.stringify((r.body as { tools?: unknown }).tools ?? [])).not.toContain("memory_search")
    }
    expect(fake.calls.length).toBe(before)
  })

  test("same grants → byte-identical prompt prefix across jobs", async () => {
    const server = await h.agent("steady", { tools: ["memory_search"] }, [
      { kind: "turn", text: "one" },
      { kind: "turn", text: "two" }
    ])
    await h.runJob("steady", "alpha")
    await h.runJob("steady", "alpha")
    const [a, b] = server.requests.map((r) => r.body as { messages: Array<{ role: string }>; tools: unknown })
    expect(systemPromptOf(a)).toBe(systemPromptOf(b))
    expect(JSON.stringify(a?.tools)).toBe(JSON.stringify(b?.tools))
  })
})
