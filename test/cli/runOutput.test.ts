/**
 * What `kintsugi run` writes (src/cli/runOutput.ts): live lines ending with one summary line that never
 * runs into streamed text, NDJSON events ending with one summary object, and what Ctrl-C did.
 */
import { describe, expect, test } from "bun:test"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { runIo, summaryOf } from "../../src/cli/runOutput.ts"

const at = "2026-12-06T10:00:00.000Z"
const createEvents = (text: string): Array<JobEvent> => [
  { type: "job.started", seq: 0, at, runtimeVersion: "0.1.0", agentId: "helper", agentVersion: 3, metadata: {} },
  { type: "message.delta", seq: 1, at, text },
  { type: "job.completed", seq: 2, at, summary: text }
]
/** A settled job's row as GET /api/jobs/:id answers it (dates as ISO text). */
const createRow = (overrides: Record<string, unknown> = {}) => ({
  id: "job-1",
  status: "completed",
  reason: null,
  message: null,
  usage: {
    type: "usage",
    seq: 5,
    at,
    model: "local/m",
    inputTokens: 900,
    outputTokens: 40,
    cacheReadTokens: 100,
    cacheWriteTokens: 0,
    costUsd: 0.0123,
    turns: 2,
    compactions: 0,
    contextPeakPercent: 3,
    compactionSummaries: 0
  },
  costUsd: 0.0123,
  outputs: "committed abc123 on kintsugi/job-1",
  createdAt: "2026-12-06T09:59:59.000Z",
  startedAt: "2026-12-06T10:00:00.000Z",
  finishedAt: "2026-12-06T10:00:04.250Z",
  ...overrides
})
const capture = (json: boolean) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const io = runIo({ json, write: (s) => out.push(s), log: (l) => err.push(l) })
  return { io, out: () => out.join(""), err }
}

describe("the human form", () => {
  test("one summary line at the end, after a newline when the streamed text did not end with one", () => {
    const { io, out } = capture(false)
    io.started("job-1")
    for (const e of createEvents("Hello")) io.event(e)
    io.settled(createRow())
    expect(out()).toBe(
      "● helper v3\nHello\n✔ completed in 4.3s · 2 turns · 1000 in / 40 out tokens · $0.0123 · job job-1 · outputs: committed abc123 on kintsugi/job-1\n"
    )
  })

  test("no blank line when the text ended with a newline; a failure names its reason and message", () => {
    const { io, out } = capture(false)
    for (const e of createEvents("Hello\n")) io.event(e)
    io.settled(createRow({ status: "failed", reason: "budget", message: "cost limit $0.01 reached", outputs: null }))
    expect(out()).toBe(
      "● helper v3\nHello\n✘ failed (budget): cost limit $0.01 reached · 4.3s · 2 turns · 1000 in / 40 out tokens · $0.0123 · job job-1\n"
    )
  })

  test("a local row (dates as Date) reads the same; a job that never started counts from its creation", () => {
    const row = {
      ...createRow({ status: "failed", reason: "error", message: "no binding", usage: null, costUsd: null, outputs: null, startedAt: null })
    }
    const local = { ...row, createdAt: new Date(row.createdAt), finishedAt: new Date(row.finishedAt) }
    expect(summaryOf(local)).toEqual({
      type: "summary",
      jobId: "job-1",
      status: "failed",
      reason: "error",
      message: "no binding",
      durationMs: 5250,
      usage: null,
      costUsd: null,
      outputs: null
    })
    expect(summaryOf({ id: "x" })).toBeUndefined()
  })
})

describe("--json", () => {
  test("each event as one JSON line, then the summary object", () => {
    const { io, out } = capture(true)
    const events = createEvents("Hello")
    for (const e of events) io.event(e)
    io.settled(createRow())
    const lines = out().split("\n")
    expect(lines.at(-1)).toBe("")
    expect(lines.slice(0, 3).map((l) => JSON.parse(l))).toEqual(events)
    expect(JSON.parse(lines[3] ?? "")).toEqual({
      type: "summary",
      jobId: "job-1",
      status: "completed",
      reason: null,
      message: null,
      durationMs: 4250,
      usage: { model: "local/m", inputTokens: 900, outputTokens: 40, cacheReadTokens: 100, cacheWriteTokens: 0, turns: 2 },
      costUsd: 0.0123,
      outputs: "committed abc123 on kintsugi/job-1"
    })
  })

  test("a typed answer: the job.completed event carries it and the summary repeats it as `answer`", () => {
    const { io, out } = capture(true)
    const answer = { files: 2, verdict: "ok" }
    const events: Array<JobEvent> = [
      ...createEvents(JSON.stringify(answer)).slice(0, 2),
      { type: "job.completed", seq: 2, at, summary: "{}", answer }
    ]
    for (const e of events) io.event(e)
    io.settled(createRow())
    const lines = out()
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines[2]).toMatchObject({ type: "job.completed", answer })
    expect(lines[3]).toMatchObject({ type: "summary", status: "completed", answer })
    // A failed job's summary has none; nor has a job without a typed answer (the test above).
    const failed = capture(true)
    for (const e of events) failed.io.event(e)
    failed.io.settled(createRow({ status: "failed", reason: "error", message: "x" }))
    expect("answer" in (JSON.parse(failed.out().trimEnd().split("\n").at(-1) ?? "{}") as object)).toBe(false)
  })

  test("a refused job: the problems on stderr and a not-started summary on stdout", () => {
    const { io, out, err } = capture(true)
    io.refused("the job was not started", [{ path: "workspace.root", message: "resolves outside the job roots" }])
    expect(err).toEqual(["kintsugi run: the job was not started:\n  workspace.root: resolves outside the job roots"])
    expect(JSON.parse(out())).toMatchObject({ type: "summary", jobId: null, status: "not-started", problems: [{ path: "workspace.root" }] })
  })
})

describe("Ctrl-C", () => {
  test("before the job started it says so; after, it names the job it aborts", () => {
    const early = capture(false)
    early.io.interrupted()
    expect(early.err).toEqual(["kintsugi run: Ctrl-C: interrupted before the job started; nothing was queued"])
    const late = capture(false)
    late.io.started("job-9")
    late.io.aborting()
    late.io.interrupted()
    expect(late.err).toEqual(["kintsugi run: Ctrl-C: aborting job job-9…"])
  })
})
