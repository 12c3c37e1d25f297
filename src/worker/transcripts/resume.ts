/**
 * Resuming a job whose worker was lost (its lease expired; JobStore.sweepExpired put it back in the
 * queue): the worker that claims it hands the job child its own transcript replayed as `history` and
 * a `resume` saying where the earlier runs left it — the last answered turn, the next event `seq`, what
 * they spent (the job row's last `usage` totals and the time since the job first started) and the
 * outputs and reads they reported. The transcript is opened in the worker only.
 */
import { Config, Effect, Schema } from "effect"
import type { JobHistory, JobResume } from "../../contract/JobSpec.ts"
import type { StoreError } from "../../db/StoreError.ts"
import { applyTurn, type TranscriptMessage } from "../../job/Transcript.ts"
import { JobStore, type JobRow } from "../JobStore.ts"
import { replayHistory } from "./continuation.ts"
import { TranscriptStore } from "./TranscriptStore.ts"

/** `KINTSUGI_JOB_RESUMES` [2]: how many times a job whose worker was lost is resumed; 0 = never. */
export const MaxResumesConfig: Effect.Effect<number> = Config.integer("KINTSUGI_JOB_RESUMES").pipe(
  Config.withDefault(2),
  Effect.map((n) => Math.max(0, n)),
  Effect.orElseSucceed(() => 2)
)

/** The totals of the job's last `usage` event (absent fields, from an event of an older runtime: 0). */
const Totals = Schema.Struct({
  turns: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  inputTokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  outputTokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  cacheReadTokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  cacheWriteTokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  costUsd: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  compactions: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  compactionSummaries: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  contextPeakPercent: Schema.optionalWith(Schema.Number, { default: () => 0 })
})
const decodeTotals = Schema.decodeUnknownOption(Totals)

/** Where the job's earlier runs left it: the history to go on from and the `resume` for the job child; none when its transcript is gone. */
export const resumeOf = (
  job: JobRow
): Effect.Effect<{ readonly history: JobHistory; readonly resume: JobResume } | undefined, StoreError, TranscriptStore | JobStore> =>
  Effect.gen(function* () {
    const turns = (yield* Effect.flatMap(TranscriptStore, (s) => s.read(job.id))).map((t) => t.record)
    const history = replayHistory(turns)
    if (history === undefined) return undefined
    const answered = turns.filter((t) => t.answer !== undefined)
    const answeredMessages = answered.reduce<ReadonlyArray<TranscriptMessage>>(applyTurn, []).length
    const { nextSeq, elapsedMs, outputs, shown } = yield* Effect.flatMap(JobStore, (s) => s.earlierRuns(job.id))
    const totals = decodeTotals(job.usage ?? {})
    const spent = totals._tag === "Some" ? totals.value : Schema.decodeSync(Totals)({})
    return {
      history,
      resume: {
        resume: Math.max(1, job.resumes.length),
        nextSeq,
        turn: answered[answered.length - 1]?.turn ?? 0,
        answeredMessages,
        spent: { ...spent, elapsedMs },
        outputs,
        shown
      }
    }
  })
