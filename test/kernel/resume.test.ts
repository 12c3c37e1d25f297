/**
 * The kernel's side of resuming a job (JobSpec `resume`): a first run posts its transcript and is cut
 * off while its 3rd model call waits; runs built from that transcript go on without the task again —
 * the interrupted call asked again with exactly what it first sent, or, when the cut came during an
 * answer's tool calls, those calls answered "not run" and never run again. Their events go on from
 * `nextSeq` without a second job.started; turns, tokens and cost count from what was spent; maxTurns
 * and timeoutSec count the whole job; the transcript goes on from the last answered turn. Plus the
 * decoder's refusals of a resume without a history or counting more messages than it has.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Either, Schema, Stream } from "effect"
import { AgentRuntime, type JobOutcome } from "../../src/contract/AgentRuntime.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import type { JobResume, JobSpec } from "../../src/contract/JobSpec.ts"
import { INTERRUPTED_CALL } from "../../src/kernel/agentLoop.ts"
import { decodeJob } from "../../src/kernel/decodeJob.ts"
import { KernelLive } from "../../src/kernel/Kernel.ts"
import { applyTurn, type TranscriptMessage, TranscriptTurn } from "../../src/job/Transcript.ts"
import { replayHistory } from "../../src/worker/transcripts/continuation.ts"
import { createJob, createJobDirs, createJobSpec, createProvider } from "../support/jobChild.ts"
import { type RecordedRequest, type ScriptedServer, startOpenAIServer, type Step } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(60_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const TOKEN = `kst_${"b".repeat(43)}`
const USAGE = { input: 500, output: 50 }

/** A loopback transcript endpoint keeping every posted turn, in order. */
const startTranscriptEndpoint = () => {
  const turns: Array<TranscriptTurn> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      turns.push(Schema.decodeUnknownSync(TranscriptTurn, { onExcessProperty: "error" })(await request.json()))
      return Response.json({ text: "stored", isError: false })
    }
  })
  cleanups.push(() => server.stop(true))
  return { services: { url: `http://127.0.0.1:${server.port}/services`, token: TOKEN, transcript: true }, turns }
}

/** The turns as stored: per turn number, the last record posted (an answered one replaces the unanswered). */
const storedTurns = (posted: ReadonlyArray<TranscriptTurn>): ReadonlyArray<TranscriptTurn> => {
  const byTurn = new Map<number, TranscriptTurn>()
  for (const t of posted) if (byTurn.get(t.turn)?.answer === undefined) byTurn.set(t.turn, t)
  return [...byTurn.values()].sort((a, b) => a.turn - b.turn)
}

const read = (n: number): Step => ({
  kind: "turn",
  toolCalls: [{ id: `call-${n}`, name: "read", arguments: { path: `src/f${n}.ts` } }],
  usage: USAGE
})
const FILES = { "f1.ts": "export const one = 1\n", "f2.ts": "export const two = 2\n", "f3.ts": "export const three = 3\n" }

const conversation = (r: RecordedRequest | undefined) =>
  ((r?.body as { messages?: Array<{ role: string; content?: unknown }> } | undefined)?.messages ?? []).filter(
    (m) => m.role !== "system" && m.role !== "developer"
  )

/** Starts `job` on a kernel whose provider is `server`; the events and the outcome once it ends (or once `stopWhen` holds, aborted). */
const run = async (
  server: ScriptedServer,
  job: JobSpec,
  services: ReturnType<typeof startTranscriptEndpoint>["services"],
  stopWhen?: () => boolean
) => {
  const events: Array<JobEvent> = []
  const outcome = await Effect.runPromise(
    Effect.gen(function* () {
      const handle = yield* (yield* AgentRuntime).start(job)
      const drained = yield* Effect.fork(Stream.runForEach(handle.events, (e) => Effect.sync(() => void events.push(e))))
      if (stopWhen !== undefined) {
        yield* Effect.promise(() => until(stopWhen, { what: "the run to reach its cut", timeoutMs: 30_000, everyMs: 10 }))
        yield* handle.abort
      }
      const ended: JobOutcome = yield* handle.result
      yield* drained.await
      return ended
    }).pipe(Effect.scoped, Effect.provide(KernelLive({ providers: [createProvider(server, "openai-completions")], services })))
  )
  return { events, outcome }
}

/** A first run cut off while its 3rd model call waits: its transcript posts, events and requests. */
const firstRun = async () => {
  const dirs = createJobDirs(FILES)
  cleanups.push(() => dirs.cleanup())
  const server = await startOpenAIServer([read(1), read(2), { kind: "stall" }])
  cleanups.push(() => server.stop())
  const endpoint = startTranscriptEndpoint()
  const job = createJobSpec(dirs, { agent: { tools: ["read"] }, limits: { maxTurns: 10 } })
  const { events } = await run(server, job, endpoint.services, () => server.requests.length >= 3)
  // What the worker would have stored before the cut: everything up to the last usage event.
  const lastUsage = events.findLast((e) => e.type === "usage")
  const stored = events.filter((e) => e.seq <= (lastUsage?.seq ?? -1))
  return { dirs, job, endpoint, events: stored, requests: [...server.requests], usage: lastUsage as Extract<JobEvent, { type: "usage" }> }
}

const resumeFrom = (
  first: Awaited<ReturnType<typeof firstRun>>,
  turns: ReadonlyArray<TranscriptTurn>,
  spent: Partial<JobResume["spent"]> = {}
): Pick<JobSpec, "history" | "resume"> => {
  const history = replayHistory(turns)
  if (history === undefined) throw new Error("no history")
  const answered = turns.filter((t) => t.answer !== undefined)
  const u = first.usage
  return {
    history,
    resume: {
      resume: 1,
      nextSeq: (first.events[first.events.length - 1]?.seq ?? -1) + 1,
      turn: answered[answered.length - 1]?.turn ?? 0,
      answeredMessages: answered.reduce<ReadonlyArray<TranscriptMessage>>(applyTurn, []).length,
      spent: {
        turns: u.turns,
        inputTokens: u.inputTokens,
        outputTokens: u.outputTokens,
        cacheReadTokens: u.cacheReadTokens,
        cacheWriteTokens: u.cacheWriteTokens,
        costUsd: u.costUsd,
        compactions: u.compactions,
        compactionSummaries: u.compactionSummaries,
        contextPeakPercent: u.contextPeakPercent,
        elapsedMs: 0,
        ...spent
      },
      outputs: [],
      shown: first.events.flatMap((e) => (e.type === "source.read" ? [{ path: e.path, firstLine: e.firstLine, lastLine: e.lastLine }] : []))
    }
  }
}

describe("resuming a job in the kernel", () => {
  test("cut during a model call: the call is asked again with what it first sent; events, usage and transcript go on", async () => {
    const first = await firstRun()
    const turns = storedTurns(first.endpoint.turns)
    // Stored: turns 1 and 2 answered, turn 3 as sent (its tool result), never answered.
    expect(turns.map((t) => [t.turn, t.answer !== undefined])).toEqual([
      [1, true],
      [2, true],
      [3, false]
    ])
    expect(first.usage.turns).toBe(2)

    const server = await startOpenAIServer([{ kind: "turn", text: "one, two.", usage: USAGE }])
    cleanups.push(() => server.stop())
    const endpoint = startTranscriptEndpoint()
    const from = resumeFrom(first, turns)
    const { events, outcome } = await run(server, { ...first.job, ...from }, endpoint.services)
    expect(outcome).toEqual({ _tag: "Completed", summary: "one, two." })
    // The one request is the interrupted one, byte for byte the conversation it first sent: the task
    // is not sent again, and no tool of turns 1–2 ran again.
    expect(server.requests.length).toBe(1)
    expect(conversation(server.requests[0])).toEqual(conversation(first.requests[2]))
    expect(events.filter((e) => e.type === "tool.call")).toEqual([])
    // Its events go on from the stored ones, without a second job.started.
    expect(events[0]?.seq).toBe(from.resume?.nextSeq)
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => (from.resume?.nextSeq ?? 0) + i))
    expect(events.some((e) => e.type === "job.started")).toBe(false)
    // Turns, tokens and cost count the whole job.
    const usage = events.findLast((e) => e.type === "usage")
    expect(usage?.type === "usage" && [usage.turns, usage.inputTokens, usage.outputTokens]).toEqual([3, 3 * USAGE.input, 3 * USAGE.output])
    expect(usage?.type === "usage" && usage.costUsd).toBeCloseTo(1.5 * first.usage.costUsd, 10)
    // The transcript goes on: turn 3, relative to the conversation turn 2 left (its tool result only), now answered.
    expect(storedTurns(endpoint.turns).map((t) => [t.turn, t.messages.map((m) => m.role), t.answer !== undefined])).toEqual([
      [3, ["toolResult"], true]
    ])
    expect(storedTurns(endpoint.turns)[0]?.messages).toEqual(turns[2]?.messages)
  })

  test("cut during an answer's tool calls: each call is answered 'not run' and never run again", async () => {
    const first = await firstRun()
    // Turns 1–2 answered, and nothing after: the cut came while turn 2's read of f2 ran.
    const turns = storedTurns(first.endpoint.turns).filter((t) => t.answer !== undefined)
    const server = await startOpenAIServer([read(3), { kind: "turn", text: "read f3.", usage: USAGE }])
    cleanups.push(() => server.stop())
    const { events, outcome } = await run(server, { ...first.job, ...resumeFrom(first, turns) }, startTranscriptEndpoint().services)
    expect(outcome._tag).toBe("Completed")
    const sent = conversation(server.requests[0])
    const last = sent[sent.length - 1] as { role: string; tool_call_id?: string; content?: unknown }
    expect([last.role, last.tool_call_id]).toEqual(["tool", "call-2"])
    expect(JSON.stringify(last.content)).toContain(INTERRUPTED_CALL)
    expect(sent.length).toBe(conversation(first.requests[2]).length)
    // f2 was not read again; the model's next call (f3) ran.
    const calls = events.flatMap((e) => (e.type === "tool.call" ? [String((e.input as { path?: string }).path)] : []))
    expect(calls).toEqual(["src/f3.ts"])
  })

  test("maxTurns and timeoutSec count the earlier runs", async () => {
    const first = await firstRun()
    const turns = storedTurns(first.endpoint.turns)
    const server = await startOpenAIServer([{ kind: "turn", text: "unreachable", usage: USAGE }])
    cleanups.push(() => server.stop())
    const atMaxTurns = { ...first.job, limits: { ...first.job.limits, maxTurns: 2 }, ...resumeFrom(first, turns) }
    const turned = await run(server, atMaxTurns, startTranscriptEndpoint().services)
    expect(turned.outcome).toMatchObject({ _tag: "Failed", reason: "max-turns" })
    const timedOut = await run(
      server,
      { ...first.job, ...resumeFrom(first, turns, { elapsedMs: first.job.limits.timeoutSec * 1000 + 1 }) },
      startTranscriptEndpoint().services
    )
    expect(timedOut.outcome).toMatchObject({ _tag: "Failed", reason: "timeout" })
    expect(server.requests.length).toBe(0)
  })

  test("the decoder refuses a resume without a history, or counting more messages than it holds", () => {
    const dirs = createJobDirs(FILES)
    cleanups.push(() => dirs.cleanup())
    const spent = {
      turns: 1,
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0,
      compactions: 0,
      compactionSummaries: 0,
      contextPeakPercent: 0,
      elapsedMs: 0
    }
    const resume = { resume: 1, nextSeq: 4, turn: 1, answeredMessages: 3, spent, outputs: [], shown: [] }
    const alone = decodeJob({ ...createJob(dirs), resume })
    expect(Either.isLeft(alone) && alone.left.problems).toEqual([
      { path: "resume", message: "needs a history: the conversation the job resumes from" }
    ])
    const history = {
      instructionsHash: "0".repeat(64),
      toolsHash: "0".repeat(64),
      messages: [{ role: "user", content: "t", timestamp: 0 }]
    }
    const over = decodeJob({ ...createJob(dirs), history, resume })
    expect(Either.isLeft(over) && over.left.problems).toEqual([
      { path: "resume.answeredMessages", message: "must not exceed the history's 1 messages, got 3" }
    ])
    const negative = decodeJob({ ...createJob(dirs), history, resume: { ...resume, answeredMessages: 1, nextSeq: -1 } })
    expect(Either.isLeft(negative) && negative.left.problems.map((p) => p.path)).toEqual(["resume.nextSeq"])
  })
})
