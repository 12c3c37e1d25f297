/**
 * Read-only tool calls of one turn at once, through the real job child and a scripted model: results
 * in call order, the write after the reads, and the same job at KINTSUGI_TOOL_CONCURRENCY=1 giving the
 * same results, events, loop-guard outcome, deny verdicts and source.read records. Overlap is proven
 * by MCP calls that only answer once all of them have arrived.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { createEnvelope, createJob, createJobDirs, createProvider, runJobChild, type JobOverrides } from "../support/jobChild.ts"
import { WebServiceHandlersLive } from "../../src/web/webServices.ts"
import { startTestMcpServer } from "../support/mcpServers.ts"
import { startOpenAIServer, type ScriptedToolCall, type Step } from "../support/scriptedServers.ts"
import { useServicesApp } from "../support/servicesHarness.ts"
import { startScriptedWeb } from "../support/webServers.ts"

// bun's 5 s default per test is too short for job children on a loaded 2-core machine.
setDefaultTimeout(60_000)

// The worker's side of the services channel, for the web budget case: jobs queued through its API.
const h = useServicesApp(WebServiceHandlersLive({ allow: "loopback" }))

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const FILES: Record<string, string> = Object.fromEntries(
  Array.from({ length: 6 }, (_, i) => [
    `m${i}.ts`,
    Array.from({ length: 40 }, (_, l) => `export const v${i}_${l} = ${l}`).join("\n") + "\n"
  ])
)

/** Runs `steps` in a job child at `concurrency`; a fresh model server and workspace each time. */
const run = async (steps: ReadonlyArray<Step>, concurrency: string, overrides: JobOverrides = {}) => {
  const server = await startOpenAIServer(steps)
  const dirs = createJobDirs(FILES)
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const result = await runJobChild(createEnvelope(createJob(dirs, overrides), [createProvider(server, "openai-completions")]), {
    env: { KINTSUGI_TOOL_CONCURRENCY: concurrency }
  })
  return { ...result, server, dirs }
}

const turn = (toolCalls: ReadonlyArray<ScriptedToolCall>): Step => ({ kind: "turn", toolCalls })
const answer: Step = { kind: "turn", text: "done" }

/** The tool messages of a model request, in the order the model got them: [call id, text]. */
const toolMessages = (rawBody: string | undefined) =>
  (JSON.parse(rawBody ?? "{}") as { messages: Array<{ role: string; tool_call_id?: string; content: unknown }> }).messages
    .filter((m) => m.role === "tool")
    .map((m) => [m.tool_call_id, typeof m.content === "string" ? m.content : JSON.stringify(m.content)])

/** An event without what differs between runs: stamps, durations, span ids and times. */
const stable = (e: JobEvent): Record<string, unknown> => {
  const { seq: _seq, at: _at, ...rest } = e as JobEvent & Record<string, unknown>
  const { durationMs: _d, spanId: _s, parentSpanId: _p, start: _t, ...kept } = rest as Record<string, unknown>
  return kept
}

/**
 * A run's events split the way parallel runs may differ from serial ones: tool.call, source.read and
 * every other event (spans aside) in order; tool.result and kintsugi.tool spans as sets.
 */
const comparable = (events: ReadonlyArray<JobEvent>) => {
  const of = (pred: (e: JobEvent) => boolean) => events.filter(pred).map(stable)
  const sorted = (xs: Array<Record<string, unknown>>) => xs.map((x) => JSON.stringify(x)).sort()
  return {
    calls: of((e) => e.type === "tool.call"),
    reads: of((e) => e.type === "source.read"),
    others: of((e) => !["tool.call", "tool.result", "source.read", "span"].includes(e.type)),
    results: sorted(of((e) => e.type === "tool.result")),
    toolSpans: sorted(of((e) => e.type === "span" && e.name === "kintsugi.tool"))
  }
}

const kinds = (events: ReadonlyArray<JobEvent>) =>
  events.flatMap((e) =>
    e.type === "tool.call" || e.type === "tool.result" ? [`${e.type === "tool.call" ? "call" : "result"} ${e.callId}`] : []
  )

const READS: ReadonlyArray<ScriptedToolCall> = [
  { id: "c0", name: "read", arguments: { path: "src/m0.ts" } },
  { id: "c1", name: "read", arguments: { path: "src/m1.ts", offset: 5, limit: 3 } },
  { id: "c2", name: "grep", arguments: { pattern: "v2_1[0-9]", path: "src" } },
  { id: "c3", name: "read", arguments: { path: "src/m3.ts", limit: 10 } },
  { id: "c4", name: "ls", arguments: {} },
  { id: "c5", name: "read", arguments: { path: "src/missing.ts" } },
  { id: "c6", name: "find", arguments: { pattern: "*.ts" } },
  { id: "c7", name: "read", arguments: { path: "src/m5.ts", offset: 38 } }
]
const WRITE: ScriptedToolCall = { id: "c8", name: "write", arguments: { path: "notes.md", content: "read them all\n" } }

describe("parallel read-only tool calls in a job", () => {
  test("8 reads and a write in one turn: 9 results in call order, the write after every read settled", async () => {
    const r = await run([turn([...READS, WRITE]), answer], "8")
    expect(r.code).toBe(0)
    const sent = toolMessages(r.server.requests[1]?.rawBody)
    expect(sent.map(([id]) => id)).toEqual(["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"])
    expect(sent[0]?.[1]).toBe(FILES["m0.ts"]?.trimEnd())
    expect(sent[1]?.[1]).toContain("export const v1_4 = 4\nexport const v1_5 = 5\nexport const v1_6 = 6\n[showing lines 5-7 of 40")
    expect(sent[2]?.[1]).toContain("src/m2.ts:11: export const v2_10 = 10")
    expect(sent[5]?.[1]).toContain("missing.ts")
    expect(sent[7]?.[1]).toBe("export const v5_37 = 37\nexport const v5_38 = 38\nexport const v5_39 = 39")
    expect(readFileSync(join(r.dirs.out, "notes.md"), "utf8")).toBe("read them all\n")
    const order = kinds(r.events)
    // The group's calls are announced first; the write is announced once every read has its result.
    expect(order.slice(0, 8)).toEqual(READS.map((c) => `call ${c.id}`))
    expect(order.slice(8, 16).sort()).toEqual(READS.map((c) => `result ${c.id}`))
    expect(order.slice(16)).toEqual(["call c8", "result c8"])
  })

  test("the same job one call at a time: the same results, events, source.read records and output", async () => {
    const steps = [turn([...READS, WRITE]), turn(READS.slice(0, 3).map((c) => ({ ...c, id: `again-${c.id}` }))), answer]
    const parallel = await run(steps, "8")
    const serial = await run(steps, "1")
    for (const r of [parallel, serial]) expect(r.code).toBe(0)
    for (const i of [0, 1, 2]) expect(parallel.server.requests[i]?.rawBody).toBe(serial.server.requests[i]?.rawBody)
    const [p, s] = [comparable(parallel.events), comparable(serial.events)]
    expect(p.reads.length).toBe(8)
    expect(p).toEqual(s)
    // One at a time, each call's result comes before the next call.
    expect(kinds(serial.events).slice(0, 4)).toEqual(["call c0", "result c0", "call c1", "result c1"])
  })

  test("the loop guard: the same nudges, and the stop at the 12th identical call, in a group as one by one", async () => {
    const same = (n: number, prefix: string) =>
      Array.from(
        { length: n },
        (_, i): ScriptedToolCall => ({ id: `${prefix}${i}`, name: "read", arguments: { path: "src/m0.ts", limit: 2 } })
      )
    // 8 in the first turn (nudged from the 5th on), then the 12th is the 4th of the second turn.
    const steps = [turn(same(8, "a")), turn(same(6, "b")), answer]
    const parallel = await run(steps, "8")
    const serial = await run(steps, "1")
    expect(toolMessages(parallel.server.requests[1]?.rawBody)).toEqual(toolMessages(serial.server.requests[1]?.rawBody))
    expect(toolMessages(parallel.server.requests[1]?.rawBody)[4]?.[1]).toContain("same arguments 5 times")
    for (const r of [parallel, serial]) {
      expect(r.code).toBe(1)
      expect(r.events.at(-1)).toMatchObject({
        type: "job.failed",
        reason: "loop",
        message: "stopped: read was called with the same arguments 12 times"
      })
      expect(r.server.requests).toHaveLength(2)
    }
    // Identical calls never share a group: the calls after the 12th never start, in either.
    expect(serial.events.filter((e) => e.type === "tool.call")).toHaveLength(12)
    expect(parallel.events.filter((e) => e.type === "tool.call")).toHaveLength(12)
    const reads = (r: typeof serial) => r.events.filter((e) => e.type === "source.read").map(stable)
    expect(reads(parallel)).toEqual(reads(serial))
  })

  test("a denied shell call between reads is a barrier; verdicts and results as one by one", async () => {
    const calls: ReadonlyArray<ScriptedToolCall> = [
      { id: "d0", name: "read", arguments: { path: "src/m0.ts", limit: 1 } },
      { id: "d1", name: "read", arguments: { path: "src/m1.ts", limit: 1 } },
      { id: "d2", name: "shell", arguments: { command: "rm -rf src" } },
      { id: "d3", name: "read", arguments: { path: "src/m2.ts", limit: 1 } },
      { id: "d4", name: "ls", arguments: {} }
    ]
    const overrides = { agent: { tools: ["read", "ls", "shell"], denyCommandPatterns: ["^rm "] } }
    const parallel = await run([turn(calls), answer], "8", overrides)
    const serial = await run([turn(calls), answer], "1", overrides)
    for (const r of [parallel, serial]) expect(r.code).toBe(0)
    expect(parallel.server.requests[1]?.rawBody).toBe(serial.server.requests[1]?.rawBody)
    expect(toolMessages(parallel.server.requests[1]?.rawBody)[2]).toEqual(["d2", "Blocked: command matches denyCommandPatterns[0]"])
    expect(comparable(parallel.events)).toEqual(comparable(serial.events))
    const order = kinds(parallel.events)
    expect(order.slice(0, 2)).toEqual(["call d0", "call d1"])
    expect(order.slice(4, 8)).toEqual(["call d2", "result d2", "call d3", "call d4"])
    expect(parallel.events.find((e) => e.type === "tool.call" && e.callId === "d2")).toMatchObject({ allowed: false })
  })

  test("read-only MCP calls overlap: 8 that answer only once all 8 arrived, then a write-like call after them", async () => {
    let arrived = 0
    let answered = 0
    let openGate: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (openGate = resolve))
    const mcp = startTestMcpServer([
      {
        name: "probe",
        readOnly: true,
        handler: async () => {
          if (++arrived === 8) openGate()
          await gate
          answered++
          return { content: [{ type: "text", text: "probed" }] }
        }
      },
      { name: "record", readOnly: false, handler: async () => ({ content: [{ type: "text", text: `${answered} probes had answered` }] }) }
    ])
    cleanups.push(() => mcp.stop())
    const probes = Array.from(
      { length: 8 },
      (_, i): ScriptedToolCall => ({ id: `p${i}`, name: "mcp__kb__probe", arguments: { q: `p${i}` } })
    )
    const server = await startOpenAIServer([turn([...probes, { id: "rec", name: "mcp__kb__record", arguments: {} }]), answer])
    const dirs = createJobDirs(FILES)
    cleanups.push(
      () => server.stop(),
      () => dirs.cleanup()
    )
    const job = {
      ...createJob(dirs, { agent: { tools: ["mcp__kb__*"] } }),
      mcp: { servers: [{ name: "kb", url: mcp.url, allowedTools: ["record"], timeoutSec: 5, allowPrivateNetwork: true }] }
    }
    const r = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]), {
      env: { KINTSUGI_TOOL_CONCURRENCY: "8" }
    })
    expect(r.code).toBe(0)
    // One at a time, the first probe would wait for the other seven until its timeout.
    expect(toolMessages(server.requests[1]?.rawBody)).toEqual([...probes.map((p) => [p.id, "probed"]), ["rec", "8 probes had answered"]])
    // Each call keeps its kintsugi.tool span, with the kintsugi.mcp span inside it.
    const spans = r.events.flatMap((e) => (e.type === "span" ? [e] : []))
    const toolSpans = new Set(spans.filter((s) => s.name === "kintsugi.tool").map((s) => s.spanId))
    const mcpSpans = spans.filter((s) => s.name === "kintsugi.mcp")
    expect(toolSpans.size).toBe(9)
    expect(mcpSpans.every((s) => s.parentSpanId !== undefined && toolSpans.has(s.parentSpanId))).toBe(true)
    expect(new Set(mcpSpans.map((s) => s.parentSpanId)).size).toBe(9)
  })

  test("web budgets: the same searches and fetches are refused in a group as one by one", async () => {
    const web = startScriptedWeb()
    cleanups.push(() => web.stop())
    expect((await h.api("PUT", "/api/admin/web-search", { kind: "searxng", url: web.url })).status).toBe(200)
    await h.project("lanes")
    const settings = { searchAgents: ["par", "ser"], fetch: true, jobSearches: 2, jobFetches: 2 }
    expect((await h.api("PUT", "/api/projects/lanes/web", settings)).status).toBe(200)
    // Each fetch its own URL: identical calls never share a group.
    const page = `${web.url}/pages/reference`
    const calls: ReadonlyArray<ScriptedToolCall> = [
      { id: "s1", name: "web_search", arguments: { query: "first" } },
      { id: "f1", name: "web_fetch", arguments: { url: `${page}?n=1` } },
      { id: "r1", name: "read", arguments: { path: "src/a.txt" } },
      { id: "s2", name: "web_search", arguments: { query: "second" } },
      { id: "f2", name: "web_fetch", arguments: { url: `${page}?n=2` } },
      { id: "s3", name: "web_search", arguments: { query: "third" } },
      { id: "f3", name: "web_fetch", arguments: { url: `${page}?n=3` } }
    ]
    const runAt = async (agent: string, concurrency: string) => {
      const server = await h.agent(agent, { tools: ["read", "web"] }, [turn(calls), answer])
      process.env["KINTSUGI_TOOL_CONCURRENCY"] = concurrency
      try {
        const { job, events } = await h.runJob(agent, "lanes")
        expect(job.status).toBe("completed")
        return { sent: toolMessages(server.requests[1]?.rawBody), order: kinds(events) }
      } finally {
        delete process.env["KINTSUGI_TOOL_CONCURRENCY"]
      }
    }
    const parallel = await runAt("par", "8")
    const serial = await runAt("ser", "1")
    expect(parallel.sent).toEqual(serial.sent)
    expect(parallel.sent.map(([id, text]) => [id, text?.includes("budget for this job is used up")])).toEqual([
      ["s1", false],
      ["f1", false],
      ["r1", false],
      ["s2", false],
      ["f2", false],
      ["s3", true],
      ["f3", true]
    ])
    // The calls were one group: every call announced before the first result.
    expect(parallel.order.slice(0, 7)).toEqual(calls.map((c) => `call ${c.id}`))
  })
})
