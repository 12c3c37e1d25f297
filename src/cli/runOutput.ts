/**
 * What `kintsugi run` writes: the job's events as live lines for people, or as NDJSON for programs
 * (`--json`), ending with one summary (a line, or an object) built from the settled job's row; and
 * on stderr, what Ctrl-C did. Lines never run into streamed text: a newline comes first when the text
 * did not end with one.
 */
import type { RunIo } from "../worker/runCommand.ts"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { JobEvent } from "../contract/JobEvent.ts"

const Instant = Schema.Union(Schema.DateFromSelf, Schema.DateFromString)
const Count = Schema.Number

/** The usage totals a job's row holds (its last `usage` event). */
const Usage = Schema.Struct({
  model: Schema.String,
  inputTokens: Count,
  outputTokens: Count,
  cacheReadTokens: Count,
  cacheWriteTokens: Count,
  turns: Count
})

/** The fields of a settled job's row the summary reads: a JobRow here, its JSON from GET /api/jobs/:id. */
const SettledJob = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  reason: Schema.NullOr(Schema.String),
  message: Schema.NullOr(Schema.String),
  usage: Schema.NullOr(Schema.Unknown),
  costUsd: Schema.NullOr(Schema.Number),
  outputs: Schema.NullOr(Schema.String),
  createdAt: Instant,
  startedAt: Schema.NullOr(Instant),
  finishedAt: Schema.NullOr(Instant)
})

/** The last thing `kintsugi run --json` writes: how the job ended (or that none was started). */
export interface RunSummary {
  readonly type: "summary"
  /** Null when no job was started. */
  readonly jobId: string | null
  /** `completed`, `failed`, or `not-started` (refused before it was queued). */
  readonly status: string
  /** The failure reason (`budget`, `aborted`, …), null unless failed. */
  readonly reason: string | null
  readonly message: string | null
  /** From the job's start (else its creation) to its end. */
  readonly durationMs: number | null
  readonly usage: typeof Usage.Type | null
  readonly costUsd: number | null
  /** What became of the outputs (the commit, or why there is none). */
  readonly outputs: string | null
  /** The typed answer of a completed job whose agent declares one: its `job.completed` event's `answer`. */
  readonly answer?: unknown
  /** Why the job was not started, every problem (only with status `not-started`). */
  readonly problems?: ReadonlyArray<{ readonly path: string; readonly message: string }>
}

/** The summary of a settled job's row, or undefined when `job` is not one. */
export const summaryOf = (job: unknown): RunSummary | undefined => {
  const decoded = Schema.decodeUnknownEither(SettledJob)(job)
  if (Either.isLeft(decoded)) return undefined
  const j = decoded.right
  const usage = Schema.decodeUnknownEither(Usage)(j.usage)
  const from = j.startedAt ?? j.createdAt
  return {
    type: "summary",
    jobId: j.id,
    status: j.status,
    reason: j.reason,
    message: j.message,
    durationMs: j.finishedAt === null ? null : Math.max(0, j.finishedAt.getTime() - from.getTime()),
    usage: Either.isRight(usage) ? usage.right : null,
    costUsd: j.costUsd,
    outputs: j.outputs
  }
}

const seconds = (ms: number) =>
  ms < 10_000
    ? `${(ms / 1000).toFixed(1)}s`
    : ms < 600_000
      ? `${Math.round(ms / 1000)}s`
      : `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`

/** The human summary line: `✔ completed in 4.2s · 2 turns · 1100 in / 50 out tokens · $0.0012 · job <id> · outputs: …`. */
const summaryLine = (s: RunSummary): string => {
  const parts: Array<string> = []
  if (s.status === "completed") parts.push(`✔ completed${s.durationMs === null ? "" : ` in ${seconds(s.durationMs)}`}`)
  else {
    parts.push(`✘ ${s.status}${s.reason === null ? "" : ` (${s.reason})`}${s.message === null || s.message === "" ? "" : `: ${s.message}`}`)
    if (s.durationMs !== null) parts.push(seconds(s.durationMs))
  }
  if (s.usage !== null) {
    parts.push(`${s.usage.turns} turn${s.usage.turns === 1 ? "" : "s"}`)
    parts.push(`${s.usage.inputTokens + s.usage.cacheReadTokens + s.usage.cacheWriteTokens} in / ${s.usage.outputTokens} out tokens`)
  }
  if (s.costUsd !== null) parts.push(`$${s.costUsd.toFixed(4)}`)
  if (s.jobId !== null) parts.push(`job ${s.jobId}`)
  if (s.outputs !== null) parts.push(`outputs: ${s.outputs}`)
  return parts.join(" · ")
}

/** A RunIo writing on `write` (stdout) and `log` (stderr), as lines (`json` false) or NDJSON. */
export type { RunIo }

export const runIo = (options: {
  readonly json: boolean
  readonly write: (s: string) => void
  readonly log: (line: string) => void
}): RunIo & {
  /** Ctrl-C anywhere: says what it did when no job was started yet. */
  readonly interrupted: () => void
} => {
  const { json, write, log } = options
  let jobId: string | undefined
  // The typed answer, from the job.completed event as it passes.
  let answer: unknown
  // Whether the last character written was a newline (or nothing was written).
  let atLineStart = true
  const put = (s: string) => {
    if (s === "") return
    write(s)
    atLineStart = s.endsWith("\n")
  }
  const line = (s: string) => put(`${atLineStart ? "" : "\n"}${s}\n`)
  const object = (o: unknown) => put(`${JSON.stringify(o)}\n`)
  const event = (e: JobEvent): void => {
    if (e.type === "job.completed") answer = e.answer
    if (json) return object(e)
    switch (e.type) {
      case "job.started":
        return line(`● ${e.agentId} v${e.agentVersion}`)
      case "message.delta":
        return put(e.text)
      case "tool.call":
        return line(
          `  ${e.allowed ? "→" : "⨯"} ${e.tool} ${JSON.stringify(e.input).slice(0, 120)}${e.allowed ? "" : `  (blocked: ${e.reason ?? ""})`}`
        )
      case "tool.result":
        return line(`    ${e.success ? "ok" : "error"}: ${e.summary} (${e.durationMs} ms)`)
      case "output":
        return line(`  wrote ${e.path}`)
      case "usage":
        return line(
          `  · turn ${e.turns}: ${e.inputTokens + e.cacheReadTokens + e.cacheWriteTokens} in / ${e.outputTokens} out, $${e.costUsd.toFixed(4)}`
        )
      case "grounding":
        return line(`  grounding: ${e.grounded} grounded, ${e.ungrounded} ungrounded, ${e.unknown} unknown path`)
      // The summary line says how the job ended; its final message was streamed as message.delta.
      case "job.completed":
      case "job.failed":
      case "source.read":
      case "span":
        return
    }
  }
  return {
    event,
    log,
    started: (id) => {
      jobId = id
    },
    aborting: () => log(`kintsugi run: Ctrl-C: aborting job ${jobId ?? ""}…`),
    interrupted: () => {
      if (jobId === undefined) log("kintsugi run: Ctrl-C: interrupted before the job started; nothing was queued")
    },
    settled: (job) => {
      const summary = summaryOf(job)
      if (summary === undefined)
        return log(`kintsugi run: the job${jobId === undefined ? "" : ` ${jobId}`} ended, but its record could not be read`)
      if (json) object(summary.status === "completed" && answer !== undefined ? { ...summary, answer } : summary)
      else line(summaryLine(summary))
    },
    refused: (message, problems = []) => {
      log(`kintsugi run: ${message}${problems.length > 0 ? ":" : ""}${problems.map((p) => `\n  ${p.path}: ${p.message}`).join("")}`)
      if (json) {
        const summary: RunSummary = {
          type: "summary",
          jobId: null,
          status: "not-started",
          reason: null,
          message,
          durationMs: null,
          usage: null,
          costUsd: null,
          outputs: null,
          problems
        }
        object(summary)
      }
    }
  }
}
