/**
 * Transcripts at rest (`runtime.transcript_turn`): one row per turn of a job, sealed with the
 * installation's secret key (SecretBox, as provider keys are), appended as the job runs and deleted
 * once older than its project's retention. The only reader and writer of the table.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { TranscriptTurn } from "../../job/Transcript.ts"
import { SecretBox } from "../../providers/SecretBox.ts"
import { decodeRows, Num, Timestamp } from "../../db/rowSchema.ts"
import { RowInvalid, type StoreError, storeMethod } from "../../db/StoreError.ts"
import { traced } from "../../telemetry/traced.ts"
import { DEFAULT_TRANSCRIPT_RETENTION_DAYS } from "../Projects.ts"

/** One stored turn, opened. */
export interface StoredTurn {
  readonly turn: number
  readonly createdAt: Date
  readonly record: TranscriptTurn
}

const turnRows = decodeRows(Schema.Struct({ turn: Num, ciphertext: Schema.String, createdAt: Timestamp }))
const countRows = decodeRows(Schema.Struct({ count: Num }))
const keptRows = decodeRows(Schema.Struct({ kept: Schema.Boolean }))
const decodeTurn = Schema.decodeUnknown(Schema.parseJson(TranscriptTurn), { errors: "all", onExcessProperty: "error" })

export class TranscriptStore extends Context.Tag("worker/TranscriptStore")<
  TranscriptStore,
  {
    /**
     * Stores `record` as turn `record.turn` of the job, sealed. An answered record replaces the turn's
     * unanswered one; a turn stored answered is kept as it is (a retried append).
     */
    readonly append: (jobId: string, record: TranscriptTurn) => Effect.Effect<void, StoreError>
    /** The job's turns in order, opened (none for a job without a transcript). A row that does not open or decode is RowInvalid. */
    readonly read: (jobId: string) => Effect.Effect<ReadonlyArray<StoredTurn>, StoreError>
    /** Whether the job kept a transcript (a turn at least), without opening it. */
    readonly kept: (jobId: string) => Effect.Effect<boolean, StoreError>
    /** Deletes every turn older than its project's retention (a job without a project: the default's); the number deleted. */
    readonly sweep: Effect.Effect<number, StoreError>
  }
>() {}

const makeTranscriptStore: Effect.Effect<TranscriptStore["Type"], never, SqlClient | SecretBox> = Effect.gen(function* () {
  const sql = yield* SqlClient
  const box = yield* SecretBox
  const open = (jobId: string, row: { readonly turn: number; readonly ciphertext: string; readonly createdAt: Date }) =>
    Effect.try({
      try: () => box.open(row.ciphertext),
      catch: (cause) => new RowInvalid({ operation: "TranscriptStore.read", cause })
    }).pipe(
      // The decoder's error would quote the turn (and the edge logs a RowInvalid's cause): the cause names the row only.
      Effect.flatMap((text) =>
        Effect.mapError(
          decodeTurn(text),
          () => new RowInvalid({ operation: "TranscriptStore.read", cause: `turn ${row.turn} of job ${jobId} is not a transcript turn` })
        )
      ),
      Effect.filterOrFail(
        (record) => record.turn === row.turn,
        () => new RowInvalid({ operation: "TranscriptStore.read", cause: `turn ${row.turn} of job ${jobId} holds another turn's record` })
      ),
      Effect.map((record): StoredTurn => ({ turn: row.turn, createdAt: row.createdAt, record }))
    )
  return {
    append: storeMethod("TranscriptStore.append", (jobId: string, record: TranscriptTurn) =>
      Effect.gen(function* () {
        const now = new Date(yield* Clock.currentTimeMillis)
        const sealed = box.seal(JSON.stringify(record))
        const answered = record.answer !== undefined
        yield* sql`INSERT INTO runtime.transcript_turn (job_id, turn, ciphertext, created_at, answered)
          VALUES (${jobId}, ${record.turn}, ${sealed}, ${now}, ${answered})
          ON CONFLICT (job_id, turn) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, created_at = EXCLUDED.created_at,
            answered = EXCLUDED.answered
          WHERE NOT runtime.transcript_turn.answered`
      })
    ),
    read: storeMethod("TranscriptStore.read", (jobId: string) =>
      Effect.flatMap(
        turnRows(sql`SELECT turn, ciphertext, created_at FROM runtime.transcript_turn WHERE job_id = ${jobId} ORDER BY turn`),
        (rows) => Effect.forEach(rows, (row) => open(jobId, row))
      )
    ),
    kept: storeMethod("TranscriptStore.kept", (jobId: string) =>
      Effect.map(
        keptRows(sql`SELECT EXISTS (SELECT 1 FROM runtime.transcript_turn WHERE job_id = ${jobId}) AS kept`),
        (rows) => rows[0]?.kept === true
      )
    ),
    sweep: storeMethod("TranscriptStore.sweep", () =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* countRows(sql`WITH gone AS (
            DELETE FROM runtime.transcript_turn t
            USING runtime.job j LEFT JOIN runtime.project p ON p.id = j.project_id
            WHERE j.id = t.job_id
              AND t.created_at < ${new Date(now)}::timestamptz
                - make_interval(days => COALESCE(p.transcript_retention_days, ${DEFAULT_TRANSCRIPT_RETENTION_DAYS}::int))
            RETURNING 1
          ) SELECT count(*) AS count FROM gone`)
        return rows[0]?.count ?? 0
      })
    )()
  }
})

export const TranscriptStoreLive: Layer.Layer<TranscriptStore, never, SqlClient | SecretBox> = Layer.effect(
  TranscriptStore,
  Effect.map(makeTranscriptStore, (s) => traced("TranscriptStore", s))
)
