/**
 * The job queue and its events in PostgreSQL. `claim` takes the oldest queued job with
 * `FOR UPDATE SKIP LOCKED` and gives it a lease, so workers in several processes never run one job
 * twice; `settle` and `settleExpired` are the only ways out of `running`, and happen once per job.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import { FailureReason, JobEvent } from "../contract/JobEvent.ts"
import { Limits } from "../contract/JobSpec.ts"
import { decodeRows, Jsonb, Num, Timestamp } from "../db/rowSchema.ts"
import { type StoreError, storeErrors, storeMethod } from "../db/StoreError.ts"
import { formatTraceParent, parseTraceParent } from "../telemetry/traceParent.ts"
import { traced } from "../telemetry/traced.ts"

export const JobInput = Schema.Struct({
  project: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/)), { exact: true }),
  agent: Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
  task: Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
  workspace: Schema.Struct({
    root: Schema.String.pipe(Schema.minLength(1)),
    readOnly: Schema.Array(Schema.String).pipe(Schema.minItems(1)),
    outDir: Schema.String.pipe(Schema.minLength(1))
  }),
  limits: Limits,
  metadata: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { exact: true }),
  /** Run this stored version of the agent instead of the current one (evals; `agents.manage` through the API). */
  agentVersion: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.int({ message: () => "must be a whole number" }),
      Schema.positive({ message: () => "must be a version number (1 or more)" })
    ),
    { exact: true }
  )
})
export type JobInput = typeof JobInput.Type

const JOB_STATUSES = ["queued", "running", "completed", "failed"] as const
export type JobStatus = (typeof JOB_STATUSES)[number]

const GroundingCounts = Schema.Struct({
  grounded: Schema.Number,
  ungrounded: Schema.Number,
  unknown: Schema.Number,
  required: Schema.Boolean
})
type GroundingCounts = typeof GroundingCounts.Type

const NullableString = Schema.NullOr(Schema.String)
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** A number field that may be absent (as the JSON of a decoded JobInput leaves it). */
const OptionalNumber = Schema.optionalWith(Schema.Number, { exact: true })
/**
 * The stored workspace and limits: their shape only. Admission (JobInput) applies the rules; a stored
 * row is read as it was written, also by an older version.
 */
const StoredWorkspace = Schema.Struct({ root: Schema.String, readOnly: Schema.Array(Schema.String), outDir: Schema.String })
const StoredLimits = Schema.Struct({
  timeoutSec: Schema.Number,
  idleTimeoutSec: OptionalNumber,
  maxTurns: OptionalNumber,
  maxCostUsd: OptionalNumber,
  resources: Schema.optionalWith(
    Schema.Struct({
      memoryMb: OptionalNumber,
      processes: OptionalNumber,
      cpuSec: OptionalNumber,
      tmpMb: OptionalNumber,
      outDirMb: OptionalNumber
    }),
    { exact: true }
  )
})

/** One resume of a job (migration 060): when, from which answered transcript turn, and which worker was lost. */
const JobResumeRecord = Schema.Struct({ at: Schema.String, fromTurn: Schema.NullOr(Num), lostWorker: NullableString })

/** A row of runtime.job as both drivers return it (jsonb parsed or as text, numeric as text or number). */
const JobRowSchema = Schema.Struct({
  id: Schema.String,
  projectId: Schema.String,
  agentName: Schema.String,
  agentVersion: NullableString,
  task: Schema.String,
  workspace: Jsonb(StoredWorkspace),
  limits: Jsonb(StoredLimits),
  metadata: Jsonb(JsonObject),
  status: Schema.Literal(...JOB_STATUSES),
  reason: Schema.NullOr(FailureReason),
  message: NullableString,
  summary: NullableString,
  usage: Schema.NullOr(Jsonb(JsonObject)),
  costUsd: Schema.NullOr(Num),
  outputs: NullableString,
  model: NullableString,
  workerId: NullableString,
  abortRequested: Schema.Boolean,
  createdBy: Schema.String,
  createdAt: Timestamp,
  startedAt: Schema.NullOr(Timestamp),
  finishedAt: Schema.NullOr(Timestamp),
  /** Who asked to abort it, and when; null when nobody did. */
  abortedBy: NullableString,
  abortedAt: Schema.NullOr(Timestamp),
  /** The grounding check's counts; null when the job was not checked. */
  grounding: Schema.NullOr(Jsonb(GroundingCounts)),
  /** The agent version the job must run (evals and continued jobs); null = the current version. */
  agentVersionPin: Schema.NullOr(Schema.Number),
  /** The job this one continues (it starts from that job's transcript); null for a job of its own. */
  parentJobId: NullableString,
  /** Each time the job was resumed after its worker was lost, oldest first; empty for a job that never was. */
  resumes: Jsonb(Schema.Array(JobResumeRecord))
})
export type JobRow = typeof JobRowSchema.Type
const jobRows = decodeRows(JobRowSchema)
const ClaimedRow = Schema.Struct({ ...JobRowSchema.fields, traceParent: NullableString })
const claimedRows = decodeRows(ClaimedRow)
const ExistingRow = Schema.Struct({ ...JobRowSchema.fields, requestHash: NullableString })
const IdRow = Schema.Struct({ id: Schema.String })
const StatusCount = Schema.Struct({ status: Schema.Literal(...JOB_STATUSES), n: Num })
const EVENT_TYPES: ReadonlySet<string> = new Set(JobEvent.members.map((m) => m.fields.type.literals[0]))
/**
 * A stored event: appendEvent writes only JobEvents, so a read checks the discriminant and `seq` and
 * keeps the rest as stored (decoding every field of every event would dominate the event read path).
 */
const StoredEvent = Schema.declare(
  (u: unknown): u is JobEvent =>
    typeof u === "object" &&
    u !== null &&
    "type" in u &&
    typeof u.type === "string" &&
    EVENT_TYPES.has(u.type) &&
    "seq" in u &&
    typeof u.seq === "number",
  { identifier: "StoredJobEvent" }
)
const EventRow = Schema.Struct({ event: StoredEvent })

/** A page of the jobs list: filters, at most `limit` rows, older than the job `before` (its id: the cursor). */
export interface JobFilter {
  readonly status?: JobStatus
  readonly agent?: string
  readonly project?: string
  readonly before?: string
  readonly limit: number
}

export class JobNotFound extends Schema.TaggedError<JobNotFound>()("JobNotFound", { id: Schema.String }) {
  override get message(): string {
    return `no job "${this.id}"`
  }
}

/** An Idempotency-Key the same user already used for a different job request. */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", { key: Schema.String }) {
  override get message(): string {
    return `the Idempotency-Key "${this.key}" was already used for a different job request; use a new key for a new job`
  }
}

/** An Idempotency-Key: 1-255 visible ASCII characters (what the column and its unique index hold). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/

/** The message of a job settled because its worker's lease expired. */
export const WORKER_LOST = "worker lost"

export type Settlement =
  | { readonly status: "completed"; readonly summary: string }
  | { readonly status: "failed"; readonly reason: FailureReason; readonly message: string }

/** A job as claimed by a worker: with the `traceparent` of the span that queued it (migration 043). */
export type ClaimedJob = typeof ClaimedRow.Type

/** The traceparent of the current span (the one queuing the job), stored so the job joins its trace. */
const currentTraceParent = Effect.map(Effect.option(Effect.currentSpan), (span) => {
  const value = Option.getOrUndefined(Option.map(span, formatTraceParent))
  return parseTraceParent(value) === undefined ? null : (value ?? null)
})

/** The job lifecycle's first log line (the worker writes "job started" and "job settled"). */
const logQueued = (job: JobRow) =>
  Effect.logInfo("job queued").pipe(
    Effect.annotateLogs({
      jobId: job.id,
      agent: job.agentName,
      by: job.createdBy,
      ...(job.projectId === "" ? {} : { project: job.projectId })
    })
  )

const COLUMNS = `id, project_id, agent_name, agent_version, task, workspace, limits, metadata, status, reason, message, summary,
  usage, cost_usd, outputs, model, worker_id, abort_requested, created_by, created_at, started_at, finished_at, aborted_by, aborted_at, grounding, agent_version_pin,
  parent_job_id, resumes`

/** What JobStore.earlierRuns reads. */
export interface EarlierRuns {
  readonly nextSeq: number
  readonly elapsedMs: number
  readonly outputs: ReadonlyArray<string>
  readonly shown: ReadonlyArray<{ readonly path: string; readonly firstLine: number; readonly lastLine: number | null }>
}

const earlierRows = decodeRows(Schema.Struct({ nextSeq: Num, elapsedMs: Num }))
const sideRows = decodeRows(
  Schema.Struct({
    event: Jsonb(
      Schema.Union(
        Schema.Struct({ type: Schema.Literal("output"), path: Schema.String }),
        Schema.Struct({
          type: Schema.Literal("source.read"),
          path: Schema.String,
          firstLine: Schema.Number,
          lastLine: Schema.NullOr(Schema.Number)
        })
      )
    )
  })
)

export class JobStore extends Context.Tag("worker/JobStore")<
  JobStore,
  {
    /** Queues a job (pinned to `input.agentVersion` when given, else it runs the agent's current version at its start). */
    readonly enqueue: (input: JobInput, by: string) => Effect.Effect<JobRow, StoreError>
    /**
     * `enqueue` once per (`by`, `key`): the first call creates the job (`created: true`), any later one
     * with the same request returns that job, even when both race; another request with the key fails.
     */
    readonly enqueueOnce: (
      input: JobInput,
      by: string,
      key: string
    ) => Effect.Effect<{ readonly job: JobRow; readonly created: boolean }, IdempotencyKeyReused | StoreError>
    readonly get: (id: string) => Effect.Effect<JobRow, JobNotFound | StoreError>
    /** Newest first (created_at, then id): a page after the cursor `before`; an unknown cursor gives an empty page. */
    readonly list: (filter: JobFilter) => Effect.Effect<ReadonlyArray<JobRow>, StoreError>
    /**
     * The oldest queued job (or this one, when given), now `running` under `workerId` with a lease of
     * `leaseMs`; none when the queue is empty.
     */
    readonly claim: (workerId: string, leaseMs: number, only?: string) => Effect.Effect<ClaimedJob | undefined, StoreError>
    /** Renews the lease of a job running under `workerId`; false when it no longer is (settled or lost). */
    readonly heartbeat: (id: string, workerId: string, leaseMs: number) => Effect.Effect<boolean, StoreError>
    /** Settles every running job whose lease expired as failed/error "worker lost" (sweepExpired resuming none); returns their ids. */
    readonly settleExpired: Effect.Effect<ReadonlyArray<string>, StoreError>
    /**
     * Every running job whose lease expired: one that kept a transcript and was resumed fewer than
     * `maxResumes` times (and not asked to abort) goes back to the queue with the resume recorded on its
     * row; every other is settled failed/error "worker lost". Their services tokens are deleted.
     */
    readonly sweepExpired: (
      maxResumes: number
    ) => Effect.Effect<{ readonly lost: ReadonlyArray<string>; readonly resumed: ReadonlyArray<string> }, StoreError>
    /** Records what the worker resolved at start. */
    readonly started: (id: string, agentVersion: string, model: string) => Effect.Effect<void, StoreError>
    /** Stores an event of a running job; an event of a settled job (a lost worker's) is dropped. */
    readonly appendEvent: (id: string, event: JobEvent) => Effect.Effect<void, StoreError>
    /**
     * Stores events of a running job in one INSERT (one notification); a seq already stored is skipped,
     * so a batch sent again after a lost answer stores nothing twice. Events of a settled job are dropped,
     * and with `workerId` those of a job no longer running under it (a lost worker's, its job resumed).
     */
    readonly appendEvents: (id: string, events: ReadonlyArray<JobEvent>, workerId?: string) => Effect.Effect<void, StoreError>
    /**
     * The job running under `workerId` that has not started (its claim committed but the answer was
     * lost), with its lease renewed; none when there is none.
     */
    readonly reclaim: (workerId: string, leaseMs: number) => Effect.Effect<ClaimedJob | undefined, StoreError>
    /**
     * Where a job's earlier runs left its events (a resumed job goes on from there): the next `seq`, the
     * milliseconds since it first started, its `output` paths and its `source.read` ranges, in order.
     */
    readonly earlierRuns: (id: string) => Effect.Effect<EarlierRuns, StoreError>
    /** The typed answer of a completed job, read from its stored `job.completed` event; undefined when it has none. */
    readonly answer: (id: string) => Effect.Effect<unknown, StoreError>
    /** Events with seq > `after`, in order. */
    readonly events: (id: string, after: number) => Effect.Effect<ReadonlyArray<JobEvent>, StoreError>
    /**
     * Moves a running job to its final state once; a second settle is a no-op, and with `workerId` so is
     * one of a job no longer running under that worker (its lease was lost and the job resumed elsewhere).
     */
    readonly settle: (id: string, outcome: Settlement, outputs: string | null, workerId?: string) => Effect.Effect<void, StoreError>
    /** Asks a job to stop (a queued one is settled aborted at once); the first request records `by` and the time. */
    readonly requestAbort: (id: string, by: string) => Effect.Effect<JobRow, JobNotFound | StoreError>
    readonly abortRequested: (id: string) => Effect.Effect<boolean, StoreError>
    /** How many jobs the database holds in each status (every status present, 0 when none). */
    readonly countByStatus: Effect.Effect<Readonly<Record<JobStatus, number>>, StoreError>
  }
>() {}

const existingJob = SqlSchema.findOne({
  Request: Schema.Struct({ by: Schema.String, key: Schema.String }),
  Result: ExistingRow,
  execute: (r: { readonly by: string; readonly key: string }) =>
    Effect.flatMap(
      SqlClient,
      (sql) => sql`SELECT ${sql.literal(COLUMNS)}, request_hash FROM runtime.job WHERE created_by = ${r.by} AND idempotency_key = ${r.key}`
    )
})
const jobById = SqlSchema.findOne({
  Request: Schema.String,
  Result: JobRowSchema,
  execute: (id: string) => Effect.flatMap(SqlClient, (sql) => sql`SELECT ${sql.literal(COLUMNS)} FROM runtime.job WHERE id = ${id}`)
})
const jobEvents = SqlSchema.findAll({
  Request: Schema.Struct({ id: Schema.String, after: Schema.Number }),
  Result: EventRow,
  execute: (r: { readonly id: string; readonly after: number }) =>
    Effect.flatMap(SqlClient, (sql) => sql`SELECT event FROM runtime.job_event WHERE job_id = ${r.id} AND seq > ${r.after} ORDER BY seq`)
})
/** The `answer` of a stored `job.completed` event (absent when the agent declares none). */
const completedAnswer = SqlSchema.findOne({
  Request: Schema.String,
  Result: Schema.Struct({ event: Jsonb(Schema.Struct({ answer: Schema.optionalWith(Schema.Unknown, { exact: true }) })) }),
  execute: (id: string) =>
    Effect.flatMap(SqlClient, (sql) => sql`SELECT event FROM runtime.job_event WHERE job_id = ${id} AND type = 'job.completed'`)
})
const idRows = decodeRows(IdRow)
const statusCounts = decodeRows(StatusCount)
const abortFlags = decodeRows(Schema.Struct({ abortRequested: Schema.Boolean }))

/** The row an INSERT … RETURNING gave: one, always. */
const inserted = (rows: ReadonlyArray<JobRow>) =>
  // A plain INSERT … RETURNING answers its row or fails: none is a bug.
  rows[0] === undefined ? Effect.dieMessage("an INSERT … RETURNING answered no row") : Effect.succeed(rows[0])

export const makeJobStore = Effect.gen(function* () {
  const sql = yield* SqlClient
  const withSql = Effect.provideService(SqlClient, sql)
  const one = (id: string) =>
    Effect.flatMap(
      // A malformed id is simply not found (and must not reach the uuid cast).
      /^[0-9a-f-]{36}$/i.test(id) ? withSql(jobById(id)) : Effect.succeedNone,
      Option.match({ onNone: () => Effect.fail(new JobNotFound({ id })), onSome: Effect.succeed })
    )

  /**
   * The `job.failed` event of each job in `settled` (a CTE of id, reason, message) that started but has
   * no terminal event (its worker was lost, or could not run it to its end), as its next seq: every
   * started job's events end with one.
   */
  const endEvents = (settled: string) => sql`INSERT INTO runtime.job_event (job_id, seq, type, event)
    SELECT s.id, n.seq, 'job.failed', jsonb_build_object('type', 'job.failed', 'seq', n.seq,
      'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'reason', s.reason, 'message', s.message)
    FROM ${sql.literal(settled)} s, LATERAL (SELECT COALESCE(max(e.seq) + 1, 0) AS seq FROM runtime.job_event e WHERE e.job_id = s.id) n
    WHERE n.seq > 0 AND NOT EXISTS (
      SELECT 1 FROM runtime.job_event e WHERE e.job_id = s.id AND e.type IN ('job.completed', 'job.failed'))
    ON CONFLICT DO NOTHING`

  /** The condition that the job runs under `workerId`, when given. */
  const ownedBy = (workerId: string | undefined) => (workerId === undefined ? sql`` : sql`AND worker_id = ${workerId}`)

  const enqueue = (input: JobInput, by: string) =>
    Effect.gen(function* () {
      const traceParent = yield* currentTraceParent
      const job = yield* Effect.flatMap(
        jobRows(sql`
          INSERT INTO runtime.job (project_id, agent_name, task, workspace, limits, metadata, created_by, trace_parent, agent_version_pin)
          VALUES (${input.project ?? ""}, ${input.agent}, ${input.task}, ${JSON.stringify(input.workspace)}::jsonb,
                  ${JSON.stringify(input.limits)}::jsonb, ${JSON.stringify(input.metadata ?? {})}::jsonb, ${by}, ${traceParent},
                  ${input.agentVersion ?? null})
          RETURNING ${sql.literal(COLUMNS)}`),
        inserted
      )
      yield* logQueued(job)
      return job
    })

  const enqueueOnce = (input: JobInput, by: string, key: string) =>
    Effect.gen(function* () {
      const hash = createHash("sha256").update(JSON.stringify(input)).digest("hex")
      const traceParent = yield* currentTraceParent
      // ON CONFLICT DO NOTHING: of two racing requests, one inserts and the other reads its row.
      const rows = yield* jobRows(sql`
        INSERT INTO runtime.job (project_id, agent_name, task, workspace, limits, metadata, created_by, idempotency_key, request_hash, trace_parent, agent_version_pin)
        VALUES (${input.project ?? ""}, ${input.agent}, ${input.task}, ${JSON.stringify(input.workspace)}::jsonb,
                ${JSON.stringify(input.limits)}::jsonb, ${JSON.stringify(input.metadata ?? {})}::jsonb, ${by}, ${key}, ${hash}, ${traceParent},
                ${input.agentVersion ?? null})
        ON CONFLICT (created_by, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING ${sql.literal(COLUMNS)}`)
      if (rows[0] !== undefined) {
        yield* logQueued(rows[0])
        return { job: rows[0], created: true }
      }
      const existing = yield* withSql(existingJob({ by, key }))
      // The conflict means a row holds the key, and rows are never deleted: none is a bug.
      if (Option.isNone(existing)) return yield* Effect.dieMessage("an idempotent job insert conflicted but no job holds its key")
      const { requestHash, ...job } = existing.value
      if (requestHash !== hash) return yield* new IdempotencyKeyReused({ key })
      return { job, created: false }
    })

  const list = (f: JobFilter) =>
    jobRows(sql`SELECT ${sql.literal(COLUMNS)} FROM runtime.job WHERE true
      ${f.status === undefined ? sql`` : sql`AND status = ${f.status}`}
      ${f.agent === undefined ? sql`` : sql`AND agent_name = ${f.agent}`}
      ${f.project === undefined ? sql`` : sql`AND project_id = ${f.project}`}
      ${
        f.before === undefined
          ? sql``
          : /^[0-9a-f-]{36}$/i.test(f.before)
            ? sql`AND (created_at, id) < (SELECT created_at, id FROM runtime.job WHERE id = ${f.before})`
            : sql`AND false`
      }
      ORDER BY created_at DESC, id DESC LIMIT ${f.limit}`)

  const claim = (workerId: string, leaseMs: number, only?: string) =>
    Effect.map(
      claimedRows(sql`
        UPDATE runtime.job SET status = 'running', worker_id = ${workerId}, started_at = COALESCE(started_at, now()), heartbeat_at = now(),
          lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
        WHERE id = (SELECT id FROM runtime.job WHERE status = 'queued' ${only === undefined ? sql`` : sql`AND id = ${only}`}
                    ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1)
        RETURNING ${sql.literal(COLUMNS)}, trace_parent`),
      (rows) => rows[0]
    )

  const heartbeat = (id: string, workerId: string, leaseMs: number) =>
    Effect.map(
      idRows(sql`UPDATE runtime.job SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
        WHERE id = ${id} AND status = 'running' AND worker_id = ${workerId} RETURNING id`),
      (rows) => rows.length > 0
    )

  const sweepRows = decodeRows(Schema.Struct({ id: Schema.String, resumed: Schema.Boolean }))
  const sweepExpired = (maxResumes: number) =>
    Effect.map(
      sweepRows(sql`
        WITH expired AS (
          SELECT j.id, j.worker_id,
            (NOT j.abort_requested AND jsonb_array_length(j.resumes) < ${Math.max(0, Math.floor(maxResumes))}
              AND EXISTS (SELECT 1 FROM runtime.transcript_turn t WHERE t.job_id = j.id)) AS resumable
          FROM runtime.job j WHERE j.status = 'running' AND j.lease_expires_at < now()
          FOR UPDATE SKIP LOCKED
        ), requeued AS (
          UPDATE runtime.job j SET status = 'queued', worker_id = NULL, heartbeat_at = NULL, lease_expires_at = NULL,
            resumes = j.resumes || jsonb_build_array(jsonb_build_object(
              'at', to_jsonb(now()),
              'fromTurn', (SELECT max(t.turn) FROM runtime.transcript_turn t WHERE t.job_id = j.id AND t.answered),
              'lostWorker', e.worker_id))
          FROM expired e WHERE j.id = e.id AND e.resumable
          RETURNING j.id
        ), revoked AS (
          -- The lost run's services tokens die with it (a token is accepted while its job runs, and a
          -- resumed job runs again, with its own).
          DELETE FROM runtime.service_token s USING expired e WHERE s.job_id = e.id
        ), lost AS (
          UPDATE runtime.job j SET status = 'failed', reason = 'error', message = ${WORKER_LOST}, finished_at = now()
          FROM expired e WHERE j.id = e.id AND NOT e.resumable
          RETURNING j.id, j.reason, j.message
        ), ended AS (${endEvents("lost")})
        SELECT id, true AS resumed FROM requeued UNION ALL SELECT id, false AS resumed FROM lost`),
      (rows) => ({ lost: rows.filter((r) => !r.resumed).map((r) => r.id), resumed: rows.filter((r) => r.resumed).map((r) => r.id) })
    )

  const earlierRuns = (id: string) =>
    Effect.gen(function* () {
      const [row] = yield* earlierRows(sql`SELECT
          (SELECT COALESCE(max(seq) + 1, 0) FROM runtime.job_event WHERE job_id = ${id}) AS next_seq,
          (SELECT COALESCE(extract(epoch FROM now() - started_at) * 1000, 0) FROM runtime.job WHERE id = ${id})::float8 AS elapsed_ms`)
      const side = (yield* sideRows(sql`SELECT event FROM runtime.job_event
        WHERE job_id = ${id} AND type IN ('output', 'source.read') ORDER BY seq`)).map((r) => r.event)
      const runs: EarlierRuns = {
        nextSeq: row?.nextSeq ?? 0,
        elapsedMs: Math.max(0, row?.elapsedMs ?? 0),
        outputs: side.flatMap((e) => (e.type === "output" ? [e.path] : [])),
        shown: side.flatMap((e) => (e.type === "source.read" ? [{ path: e.path, firstLine: e.firstLine, lastLine: e.lastLine }] : []))
      }
      return runs
    })

  const reclaim = (workerId: string, leaseMs: number) =>
    Effect.map(
      claimedRows(sql`
        UPDATE runtime.job SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
        WHERE id = (SELECT id FROM runtime.job WHERE status = 'running' AND worker_id = ${workerId} AND model IS NULL LIMIT 1)
        RETURNING ${sql.literal(COLUMNS)}, trace_parent`),
      (rows) => rows[0]
    )

  const appendEvents = (id: string, events: ReadonlyArray<JobEvent>, workerId?: string) =>
    Effect.gen(function* () {
      if (events.length === 0) return
      // The seq and type columns are read from each event, as the child wrote them.
      yield* sql`INSERT INTO runtime.job_event (job_id, seq, type, event)
        SELECT ${id}, (e->>'seq')::int, e->>'type', e FROM jsonb_array_elements(${JSON.stringify(events)}::jsonb) AS e
        WHERE EXISTS (SELECT 1 FROM runtime.job WHERE id = ${id} AND status = 'running' ${ownedBy(workerId)})
        ON CONFLICT DO NOTHING`
      const usage = events.findLast((e) => e.type === "usage")
      if (usage?.type === "usage") {
        yield* sql`UPDATE runtime.job SET usage = ${JSON.stringify(usage)}::jsonb, cost_usd = ${usage.costUsd}
          WHERE id = ${id} AND status = 'running' ${ownedBy(workerId)}`
      }
      const event = events.findLast((e) => e.type === "grounding")
      if (event?.type === "grounding") {
        const counts: GroundingCounts = {
          grounded: event.grounded,
          ungrounded: event.ungrounded,
          unknown: event.unknown,
          required: event.required
        }
        yield* sql`UPDATE runtime.job SET grounding = ${JSON.stringify(counts)}::jsonb WHERE id = ${id} AND status = 'running' ${ownedBy(workerId)}`
      }
    })

  const settle = (id: string, outcome: Settlement, outputs: string | null, workerId?: string) =>
    Effect.asVoid(
      outcome.status === "completed"
        ? sql`UPDATE runtime.job SET status = 'completed', summary = ${outcome.summary}, outputs = ${outputs}, finished_at = now()
              WHERE id = ${id} AND status = 'running' ${ownedBy(workerId)}`
        : sql`WITH settled AS (
                UPDATE runtime.job SET status = 'failed', reason = ${outcome.reason}, message = ${outcome.message}, outputs = ${outputs},
                  finished_at = now() WHERE id = ${id} AND status = 'running' ${ownedBy(workerId)}
                RETURNING id, reason, message
              ) ${endEvents("settled")}`
    )

  const requestAbort = (id: string, by: string) =>
    Effect.gen(function* () {
      yield* one(id)
      yield* sql`UPDATE runtime.job SET aborted_by = ${by}, aborted_at = now()
        WHERE id = ${id} AND status IN ('queued', 'running') AND aborted_by IS NULL`
      // A queued job never starts: it is settled as aborted right here.
      yield* sql`UPDATE runtime.job SET status = 'failed', reason = 'aborted', message = 'aborted before it started', finished_at = now(),
        abort_requested = true WHERE id = ${id} AND status = 'queued'`
      yield* sql`UPDATE runtime.job SET abort_requested = true WHERE id = ${id} AND status = 'running'`
      return yield* one(id)
    })

  const countByStatus = Effect.map(statusCounts(sql`SELECT status, count(*) AS n FROM runtime.job GROUP BY status`), (rows) => {
    const counts: Record<JobStatus, number> = { queued: 0, running: 0, completed: 0, failed: 0 }
    for (const r of rows) counts[r.status] = r.n
    return counts
  })

  // Every method's SqlError and ParseError become the StoreError naming it.
  const service: JobStore["Type"] = {
    enqueue: storeMethod("JobStore.enqueue", enqueue),
    enqueueOnce: storeMethod("JobStore.enqueueOnce", enqueueOnce),
    get: storeMethod("JobStore.get", one),
    list: storeMethod("JobStore.list", list),
    claim: storeMethod("JobStore.claim", claim),
    heartbeat: storeMethod("JobStore.heartbeat", heartbeat),
    settleExpired: storeErrors("JobStore.settleExpired")(Effect.map(sweepExpired(0), (swept) => swept.lost)),
    sweepExpired: storeMethod("JobStore.sweepExpired", sweepExpired),
    started: storeMethod("JobStore.started", (id, agentVersion, model) =>
      Effect.asVoid(sql`UPDATE runtime.job SET agent_version = ${agentVersion}, model = ${model} WHERE id = ${id}`)
    ),
    appendEvent: storeMethod("JobStore.appendEvent", (id: string, event: JobEvent) => appendEvents(id, [event])),
    appendEvents: storeMethod("JobStore.appendEvents", appendEvents),
    reclaim: storeMethod("JobStore.reclaim", reclaim),
    earlierRuns: storeMethod("JobStore.earlierRuns", earlierRuns),
    answer: storeMethod("JobStore.answer", (id) =>
      Effect.map(withSql(completedAnswer(id)), (row) => (Option.isSome(row) ? row.value.event.answer : undefined))
    ),
    events: storeMethod("JobStore.events", (id, after) =>
      Effect.map(withSql(jobEvents({ id, after })), (rows) => rows.map((r) => r.event))
    ),
    settle: storeMethod("JobStore.settle", settle),
    requestAbort: storeMethod("JobStore.requestAbort", requestAbort),
    abortRequested: storeMethod("JobStore.abortRequested", (id) =>
      Effect.map(abortFlags(sql`SELECT abort_requested FROM runtime.job WHERE id = ${id}`), (r) => r[0]?.abortRequested === true)
    ),
    countByStatus: storeErrors("JobStore.countByStatus")(countByStatus)
  }
  return service
})

export const JobStoreLive = Layer.effect(
  JobStore,
  Effect.map(makeJobStore, (service) => traced("JobStore", service))
)
