/**
 * Compaction against scripted models with a small window (pi-ai's real clients over 127.0.0.1): two
 * compactions and a completed job with a byte-identical prefix and exact cost; the task alone too big;
 * a provider overflow mid-job; a summary that spends the budget. Plus the pure planning functions.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import type { Message } from "@earendil-works/pi-ai"
import { Effect, Stream } from "effect"
import { AgentRuntime } from "../../src/contract/AgentRuntime.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { dropToolResults, estimateTokens, planCompaction } from "../../src/kernel/compaction.ts"
import { renderTranscript, SUMMARISER_INSTRUCTION } from "../../src/kernel/compactionTranscript.ts"
import { KernelLive } from "../../src/kernel/Kernel.ts"
import { createJobSpec, createJobDirs, createProvider, MODEL_PRICES, type JobOverrides, type ScriptedApi } from "../support/jobChild.ts"
import { startAnthropicServer, startOpenAIServer, type RecordedRequest } from "../support/scriptedServers.ts"
import { createWindowedModel, isSummaryRequest, type WindowedModelOptions } from "../support/windowedModel.ts"

setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

/** Twelve files of 30 lines (about 1.3 KB each). */
const FILES = Object.fromEntries(
  Array.from({ length: 12 }, (_, f) => [
    `f${f + 1}.ts`,
    Array.from({ length: 30 }, (_, i) => `export const v${f + 1}_${i} = "${"x".repeat(20)}"`).join("\n") + "\n"
  ])
)
/** Turn n: notes (unless `terse`), then read file n; after `reads` turns, the answer. */
const reader =
  (reads: number, terse = false): WindowedModelOptions["turn"] =>
  (n) =>
    n <= reads
      ? {
          text: terse ? `Step ${n}.` : `Notes after step ${n}: ${"the module exports constants; ".repeat(20)}`,
          toolCalls: [{ name: "read", arguments: { path: `src/f${n}.ts` } }]
        }
      : { text: "done: all files read" }

const runJob = async (api: ScriptedApi, options: Omit<WindowedModelOptions, "api">, overrides: JobOverrides = {}) => {
  const model = createWindowedModel({ api, ...options })
  const server = await (api === "openai-completions" ? startOpenAIServer : startAnthropicServer)(model.steps)
  const dirs = createJobDirs(FILES)
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const provider = createProvider(server, api, { contextWindow: options.window })
  const job = createJobSpec(dirs, {
    ...overrides,
    agent: { tools: ["read"], ...overrides.agent },
    limits: { maxTurns: 0, ...overrides.limits }
  })
  const run = Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const handle = yield* runtime.start(job)
    const events = Array.from(yield* Stream.runCollect(handle.events))
    return { events, outcome: yield* handle.result }
  })
  const { events, outcome } = await Effect.runPromise(run.pipe(Effect.scoped, Effect.provide(KernelLive({ providers: [provider] }))))
  const spans = events.flatMap((e) => (e.type === "span" && e.name === "kintsugi.compaction" ? [e] : []))
  const usage = events.filter((e): e is Extract<JobEvent, { type: "usage" }> => e.type === "usage")
  return { events, outcome, spans, usage, last: usage[usage.length - 1], calls: model.calls, requests: server.requests }
}

const priced = (calls: ReadonlyArray<{ input: number; output: number }>) =>
  calls.reduce((sum, c) => sum + (c.input * MODEL_PRICES.input + c.output * MODEL_PRICES.output) / 1_000_000, 0)

/** The parts of a request body that make the prompt prefix: system prompt and tool definitions. */
const prefixOf = (api: ScriptedApi, r: RecordedRequest): string => {
  const body = r.body as { system?: unknown; messages: ReadonlyArray<{ role: string }>; tools?: unknown }
  return JSON.stringify(api === "anthropic-messages" ? [body.system, body.tools] : [body.messages[0], body.tools])
}

describe.each(["openai-completions", "anthropic-messages"] as const)("compaction (%s)", (api) => {
  test("a job over a 4k window needs two compactions and completes; the prefix never changes; cost is every request's", async () => {
    // Each turn adds about 560 tokens: the 80 % threshold is passed before turns 7 and 12.
    const r = await runJob(api, { window: 4000, turn: reader(12) })
    expect(r.outcome).toEqual({ _tag: "Completed", summary: "done: all files read" })
    expect(r.spans).toHaveLength(2)
    expect(r.last).toMatchObject({ compactions: 2, turns: 13 })
    const summaries = r.calls.filter((c) => c.kind === "summary")
    expect(r.last?.compactionSummaries).toBe(summaries.length)
    expect(summaries.length).toBeGreaterThanOrEqual(1)
    for (const s of r.spans) {
      const a = s.attributes
      expect(a["tokensAfter"]).toBeLessThan(a["tokensBefore"] as number)
      expect(Object.values(a).every((v) => typeof v === "number" || v === "threshold")).toBe(true)
      expect((a["turnsSummarised"] as number) + (a["toolResultsDropped"] as number)).toBeGreaterThan(0)
    }
    // Byte-identical prefix on every job request, before and after each compaction.
    const jobRequests = r.requests.filter((q) => !isSummaryRequest(q))
    expect(jobRequests).toHaveLength(13)
    expect(new Set(jobRequests.map((q) => prefixOf(api, q))).size).toBe(1)
    // Summary requests carry their own instruction and no tools.
    for (const q of r.requests.filter(isSummaryRequest)) expect(q.rawBody).toContain(JSON.stringify(SUMMARISER_INSTRUCTION).slice(1, 60))
    // The summary reached the job's later requests, never the events.
    expect(jobRequests[jobRequests.length - 1]!.rawBody).toContain("SUMMARY-")
    expect(JSON.stringify(r.events)).not.toContain("SUMMARY-")
    // Every request was inside the window, and the cost is the priced sum of all of them.
    expect(r.calls.every((c) => c.kind !== "overflow")).toBe(true)
    expect(r.last?.costUsd).toBeCloseTo(priced(r.calls), 12)
    const peak = Math.max(...r.calls.map((c) => ((c.input + c.output) / 4000) * 100))
    expect(r.last?.contextPeakPercent).toBeCloseTo(peak, 1)
    expect(peak).toBeLessThanOrEqual(100)
  })
})

describe("compaction limits", () => {
  test("when dropping old tool results is enough, no summary is requested", async () => {
    const r = await runJob("openai-completions", { window: 4000, turn: reader(12, true) })
    expect(r.outcome._tag).toBe("Completed")
    expect(r.spans.length).toBeGreaterThanOrEqual(1)
    for (const s of r.spans) expect(s.attributes).toMatchObject({ trigger: "threshold", turnsSummarised: 0 })
    expect(r.spans[0]?.attributes["toolResultsDropped"]).toBeGreaterThan(0)
    expect(r.calls.filter((c) => c.kind !== "turn")).toEqual([])
    expect(r.last).toMatchObject({ compactions: r.spans.length, compactionSummaries: 0 })
    const lastRequest = r.requests[r.requests.length - 1]!.rawBody
    expect(lastRequest).toContain("[tool result dropped to save context: 30 lines")
    // The kept turns and the task are whole.
    expect(lastRequest).toContain("export const v12_29")
    expect(lastRequest).toContain("What does src/a.ts export?")
  })

  test("a task larger than the window → context-overflow after one request", async () => {
    const r = await runJob("openai-completions", { window: 4000, turn: reader(8) }, { task: `Read this: ${"lorem ipsum ".repeat(2000)}` })
    expect(r.outcome).toMatchObject({ _tag: "Failed", reason: "context-overflow" })
    expect(r.requests).toHaveLength(1)
    expect(r.spans).toHaveLength(0)
  })

  test("a provider overflow mid-job triggers one compaction and the job continues", async () => {
    const r = await runJob("openai-completions", { window: 128_000, turn: reader(5), overflowAt: (n) => n === 4 })
    expect(r.outcome._tag).toBe("Completed")
    expect(r.spans).toHaveLength(1)
    expect(r.spans[0]?.attributes["trigger"]).toBe("overflow")
    // tokensAfter is the estimate of the prompt the next request sends: the model's own count of it,
    // within the estimate's error (characters / 4 of the messages, the request's JSON framing aside).
    const a = r.spans[0]!.attributes
    const next = r.calls.filter((c) => c.kind === "turn")[3]!
    expect(a["tokensAfter"]).toBeGreaterThan(0)
    expect(a["tokensAfter"]).toBeLessThan(a["tokensBefore"] as number)
    expect(a["tokensAfter"]).toBeGreaterThan(next.input / 2)
    expect(a["tokensAfter"]).toBeLessThanOrEqual(next.input)
    expect(r.calls.map((c) => c.kind).filter((k) => k !== "summary")).toEqual(["turn", "turn", "turn", "overflow", "turn", "turn", "turn"])
    const jobRequests = r.requests.filter((q) => !isSummaryRequest(q))
    // The request after the compaction is smaller than the one that overflowed.
    expect(jobRequests[4]!.rawBody.length).toBeLessThan(jobRequests[3]!.rawBody.length)
    expect(r.last?.compactions).toBe(1)
  })

  test("a model that counts fewer tokens than the estimate: the overflow compaction's tokensAfter is the estimate of what is left, never negative", async () => {
    const r = await runJob("openai-completions", { window: 128_000, turn: reader(8), overflowAt: (n) => n === 7, charsPerToken: 16 })
    expect(r.outcome._tag).toBe("Completed")
    expect(r.spans).toHaveLength(1)
    const a = r.spans[0]!.attributes
    expect(a["trigger"]).toBe("overflow")
    // The request after the compaction, counted as the kernel estimates (characters / 4), bounds it from above.
    const next = r.requests.filter((q) => !isSummaryRequest(q))[7]!
    expect(a["tokensAfter"]).toBeGreaterThan(0)
    expect(a["tokensAfter"]).toBeLessThanOrEqual(Math.ceil(next.rawBody.length / 4))
    expect(a["tokensAfter"]).toBeGreaterThan(Math.ceil(next.rawBody.length / 4) / 2)
  })

  test("an overflow that compaction does not cure → context-overflow, no endless retries", async () => {
    const r = await runJob("openai-completions", { window: 128_000, turn: reader(8), overflowAt: (n) => n >= 4 })
    expect(r.outcome).toMatchObject({ _tag: "Failed", reason: "context-overflow" })
    expect(r.spans).toHaveLength(1)
    expect(r.calls.filter((c) => c.kind === "overflow")).toHaveLength(2)
  })

  test("a summary that pushes the cost over maxCostUsd ends the job as budget", async () => {
    const r = await runJob(
      "openai-completions",
      // $15 per million output tokens: 100k summary tokens cost $1.50.
      { window: 4000, turn: reader(8), summaryOutputTokens: () => 100_000 },
      { limits: { maxCostUsd: 1 } }
    )
    expect(r.outcome).toMatchObject({ _tag: "Failed", reason: "budget" })
    const kinds = r.calls.map((c) => c.kind)
    expect(kinds.filter((k) => k === "summary")).toHaveLength(1)
    expect(kinds[kinds.length - 1]).toBe("summary")
    expect(r.last?.costUsd).toBeCloseTo(priced(r.calls), 12)
    expect(r.last).toMatchObject({ compactions: 1, compactionSummaries: 1 })
  })
})

describe("planning", () => {
  const at = 0
  const assistant = (n: number): Message => ({
    role: "assistant",
    content: [{ type: "toolCall", id: `c${n}`, name: "read", arguments: { path: `f${n}` } }],
    api: "openai-completions",
    provider: "p",
    model: "m",
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
    },
    stopReason: "toolUse",
    timestamp: at
  })
  const result = (n: number, chars: number): Message => ({
    role: "toolResult",
    toolCallId: `c${n}`,
    toolName: "read",
    content: [{ type: "text", text: "y".repeat(chars) }],
    isError: false,
    timestamp: at
  })
  const conversation = (turns: number, chars: number): Array<Message> => [
    { role: "user", content: "task", timestamp: at },
    ...Array.from({ length: turns }, (_, i) => [assistant(i), result(i, chars)]).flat()
  ]

  test("the newest turn is always kept; older ones are old; their results are dropped to a count", () => {
    const messages = conversation(5, 4000)
    const plan = planCompaction(messages, 1, estimateTokens(messages), 4000)
    expect(plan).toEqual({ oldFrom: 1, keepFrom: 9, oldTurns: 4, drops: [2, 4, 6, 8] })
    const dropped = dropToolResults(messages, plan!)
    expect(dropped[2]).toMatchObject({
      role: "toolResult",
      toolCallId: "c0",
      content: [{ type: "text", text: "[tool result dropped to save context: 1 lines, 4000 bytes]" }]
    })
    expect(dropped[10]).toBe(messages[10]!)
    // Already-dropped results, and results shorter than their placeholder would be, are not dropped.
    expect(planCompaction(dropped, 1, estimateTokens(dropped), 4000)?.drops).toEqual([])
    const short = conversation(5, 150)
    expect(planCompaction(short, 1, 100, 4000)?.drops).toEqual([])
  })

  test("the summariser's transcript keeps the task and the newest entries, and says what it cut", () => {
    const messages = conversation(40, 1500)
    const text = renderTranscript(messages, 1, { oldFrom: 1, keepFrom: 79 }, 4000)
    expect(text.startsWith("<task>\ntask\n</task>")).toBe(true)
    expect(text).toMatch(/\[… \d+ earlier entries omitted …\]/)
    expect(text).toContain('Tool call read: {"path":"f38"}')
    expect(text).not.toContain('{"path":"f39"}')
    expect(text.length).toBeLessThan(4000 * 4 * 0.7)
  })

  test("nothing to compact when only the newest turn exists, or when every turn fits the recent share", () => {
    expect(planCompaction(conversation(1, 40_000), 1, 10_000, 4000)).toBeUndefined()
    const bigTask: Array<Message> = [{ role: "user", content: "t".repeat(40_000), timestamp: at }, ...conversation(3, 40).slice(1)]
    expect(planCompaction(bigTask, 1, estimateTokens(bigTask), 128_000)).toBeUndefined()
  })
})
