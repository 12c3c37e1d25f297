/**
 * The job queue and its events in PostgreSQL. `claim` takes the oldest queued job with
 * `FOR UPDATE SKIP LOCKED` and gives it a lease, so workers in several processes never run one job
 * twice; `settle` and `settleExpired` are the only ways out of `running`, and happen once per job.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import type { FailureReason, JobEvent } from "../contract/JobEvent.ts"
import { Limits } from "../contract/JobSpec.ts"
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
    Schema.Number.pipe(Schema.int({ message: () => "must be a whole number" }), Schema.positive({ message: () => "must be a version number (1 or more)" })),
    { exact: true }
  )
})
export type JobInput = typeof JobInput.Type

export type JobStatus = "queued" | "running" | "completed" | "failed"

export interface JobRow {
  readonly id: string
  readonly projectId: string
  readonly agentName: string
  readonly agentVersion: string | null
  readonly task: string
  readonly workspace: JobInput["workspace"]
  readonly limits: JobInput["limits"]
  readonly metadata: Record<string, unknown>
  readonly status: JobStatus
  readonly reason: FailureReason | null
  readonly message: string | null
  readonly summary: string | null
  readonly usage: Record<string, unknown> | null
  readonly costUsd: number | null
  readonly outputs: string | null
  readonly model: string | null
  readonly workerId: string | null
  readonly abortRequested: boolean
  readonly createdBy: string
  readonly createdAt: Date
  readonly startedAt: Date | null
  readonly finishedAt: Date | null
  /** Who asked to abort it, and when (migration 049); null when nobody did. */
  readonly abortedBy: string | null
  readonly abortedAt: Date | null
  /** The grounding check's counts (migration 050); null when the job was not checked. */
  readonly grounding: GroundingCounts | null
  /** The agent version the job must run (migration 051, evals only); null = the current version. */
  readonly agentVersionPin: number | null
}

export interface GroundingCounts {
  readonly grounded: number
  readonly ungrounded: number
  readonly unknown: number
  readonly required: boolean
}

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
export type ClaimedJob = JobRow & { readonly traceParent: string | null }

/** The traceparent of the current span (the one queuing the job), stored so the job joins its trace. */
const currentTraceParent = Effect.map(Effect.option(Effect.currentSpan), (span) => {
  const value = Option.getOrUndefined(Option.map(span, formatTraceParent))
  return parseTraceParent(value) === undefined ? null : (value ?? null)
})

/** The job lifecycle's first log line (the worker writes "job started" and "job settled"). */
const logQueued = (job: JobRow) =>
  Effect.logInfo("job queued").pipe(
    Effect.annotateLogs({ jobId: job.id, agent: job.agentName, by: job.createdBy, ...(job.projectId === "" ? {} : { project: job.projectId }) })
  )

const COLUMNS = `id, project_id, agent_name, agent_version, task, workspace, limits, metadata, status, reason, message, summary,
  usage, cost_usd, outputs, model, worker_id, abort_requested, created_by, created_at, started_at, finished_at, aborted_by, aborted_at, grounding, agent_version_pin`

export class JobStore extends Context.Tag("worker/JobStore")<
  JobStore,
  {
    /** Queues a job (pinned to `input.agentVersion` when given, else it runs the agent's current version at its start). */
    readonly enqueue: (input: JobInput, by: string) => Effect.Effect<JobRow>
    /**
     * `enqueue` once per (`by`, `key`): the first call creates the job (`created: true`), any later one
     * with the same request returns that job, even when both race; another request with the key fails.
     */
    readonly enqueueOnce: (
      input: JobInput,
      by: string,
      key: string
    ) => Effect.Effect<{ readonly job: JobRow; readonly created: boolean }, IdempotencyKeyReused>
    readonly get: (id: string) => Effect.Effect<JobRow, JobNotFound>
    /** Newest first (created_at, then id): a page after the cursor `before`; an unknown cursor gives an empty page. */
    readonly list: (filter: JobFilter) => Effect.Effect<ReadonlyArray<JobRow>>
    /**
     * The oldest queued job (or this one, when given), now `running` under `workerId` with a lease of
     * `leaseMs`; none when the queue is empty.
     */
    readonly claim: (workerId: string, leaseMs: number, only?: string) => Effect.Effect<ClaimedJob | undefined>
    /** Renews the lease of a job running under `workerId`; false when it no longer is (settled or lost). */
    readonly heartbeat: (id: string, workerId: string, leaseMs: number) => Effect.Effect<boolean>
    /** Settles every running job whose lease expired as failed/error "worker lost"; returns their ids. */
    readonly settleExpired: Effect.Effect<ReadonlyArray<string>>
    /** Records what the worker resolved at start. */
    readonly started: (id: string, agentVersion: string, model: string) => Effect.Effect<void>
    /** Stores an event of a running job; an event of a settled job (a lost worker's) is dropped. */
    readonly appendEvent: (id: string, event: JobEvent) => Effect.Effect<void>
    /** Events with seq > `after`, in order. */
    readonly events: (id: string, after: number) => Effect.Effect<ReadonlyArray<JobEvent>>
    /** Moves a running job to its final state once; a second settle is a no-op. */
    readonly settle: (id: string, outcome: Settlement, outputs: string | null) => Effect.Effect<void>
    /** Asks a job to stop (a queued one is settled aborted at once); the first request records `by` and the time. */
    readonly requestAbort: (id: string, by: string) => Effect.Effect<JobRow, JobNotFound>
    readonly abortRequested: (id: string) => Effect.Effect<boolean>
    /** How many jobs the database holds in each status (every status present, 0 when none). */
    readonly countByStatus: Effect.Effect<Readonly<Record<JobStatus, number>>>
  }
>() {}

const eventType = Schema.decodeUnknownSync(Schema.Struct({ type: Schema.String }))

export const makeJobStore = Effect.gen(function* () {
  const sql = yield* SqlClient
  const one = (id: string) =>
    Effect.flatMap(
      // A malformed id is simply not found (and must not reach the uuid cast).
      /^[0-9a-f-]{36}$/i.test(id) ? sql<JobRow>`SELECT ${sql.literal(COLUMNS)} FROM runtime.job WHERE id = ${id}` : Effect.succeed([]),
      (rows) => (rows[0] === undefined ? Effect.fail(new JobNotFound({ id })) : Effect.succeed(rows[0]))
    )
  const fix = (row: JobRow): JobRow => ({ ...row, costUsd: row.costUsd === null ? null : Number(row.costUsd) })

  const service: JobStore["Type"] = {
    enqueue: (input, by) =>
      Effect.gen(function* () {
        const traceParent = yield* currentTraceParent
        const rows = yield* sql<JobRow>`
          INSERT INTO runtime.job (project_id, agent_name, task, workspace, limits, metadata, created_by, trace_parent, agent_version_pin)
          VALUES (${input.project ?? ""}, ${input.agent}, ${input.task}, ${JSON.stringify(input.workspace)}::jsonb,
                  ${JSON.stringify(input.limits)}::jsonb, ${JSON.stringify(input.metadata ?? {})}::jsonb, ${by}, ${traceParent},
                  ${input.agentVersion ?? null})
          RETURNING ${sql.literal(COLUMNS)}`
        yield* logQueued(rows[0]!)
        return fix(rows[0]!)
      }).pipe(Effect.orDie),
    enqueueOnce: (input, by, key) =>
      Effect.gen(function* () {
        const hash = createHash("sha256").update(JSON.stringify(input)).digest("hex")
        const traceParent = yield* currentTraceParent
        // ON CONFLICT DO NOTHING: of two racing requests, one inserts and the other reads its row.
        const inserted = yield* sql<JobRow>`
          INSERT INTO runtime.job (project_id, agent_name, task, workspace, limits, metadata, created_by, idempotency_key, request_hash, trace_parent, agent_version_pin)
          VALUES (${input.project ?? ""}, ${input.agent}, ${input.task}, ${JSON.stringify(input.workspace)}::jsonb,
                  ${JSON.stringify(input.limits)}::jsonb, ${JSON.stringify(input.metadata ?? {})}::jsonb, ${by}, ${key}, ${hash}, ${traceParent},
                  ${input.agentVersion ?? null})
          ON CONFLICT (created_by, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
          RETURNING ${sql.literal(COLUMNS)}`
        if (inserted[0] !== undefined) {
          yield* logQueued(inserted[0])
          return { job: fix(inserted[0]), created: true }
        }
        const existing = yield* sql<JobRow & { requestHash: string | null }>`
          SELECT ${sql.literal(COLUMNS)}, request_hash FROM runtime.job WHERE created_by = ${by} AND idempotency_key = ${key}`
        const row = existing[0]
        if (row === undefined) return yield* Effect.die(new Error("an idempotent job insert conflicted but no job holds its key"))
        if (row.requestHash !== hash) return yield* new IdempotencyKeyReused({ key })
        const { requestHash: _, ...job } = row
        return { job: fix(job), created: false }
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    get: (id) => Effect.map(one(id), fix).pipe(Effect.catchTag("SqlError", Effect.die)),
    list: (f) =>
      Effect.map(
        sql<JobRow>`SELECT ${sql.literal(COLUMNS)} FROM runtime.job WHERE true
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
          ORDER BY created_at DESC, id DESC LIMIT ${f.limit}`,
        (rows) => rows.map(fix)
      ).pipe(Effect.orDie),
    claim: (workerId, leaseMs, only) =>
      Effect.map(
        sql<ClaimedJob>`
          UPDATE runtime.job SET status = 'running', worker_id = ${workerId}, started_at = now(), heartbeat_at = now(),
            lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
          WHERE id = (SELECT id FROM runtime.job WHERE status = 'queued' ${only === undefined ? sql`` : sql`AND id = ${only}`}
                      ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1)
          RETURNING ${sql.literal(COLUMNS)}, trace_parent`,
        (rows) => (rows[0] === undefined ? undefined : { ...fix(rows[0]), traceParent: rows[0].traceParent })
      ).pipe(Effect.orDie),
    heartbeat: (id, workerId, leaseMs) =>
      Effect.map(
        sql<{ id: string }>`UPDATE runtime.job SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
          WHERE id = ${id} AND status = 'running' AND worker_id = ${workerId} RETURNING id`,
        (rows) => rows.length > 0
      ).pipe(Effect.orDie),
    settleExpired: Effect.map(
      sql<{ id: string }>`UPDATE runtime.job SET status = 'failed', reason = 'error', message = ${WORKER_LOST}, finished_at = now()
        WHERE status = 'running' AND lease_expires_at < now() RETURNING id`,
      (rows) => rows.map((r) => r.id)
    ).pipe(Effect.orDie),
    started: (id, agentVersion, model) =>
      Effect.orDie(sql`UPDATE runtime.job SET agent_version = ${agentVersion}, model = ${model} WHERE id = ${id}`),
    appendEvent: (id, event) =>
      Effect.gen(function* () {
        yield* sql`INSERT INTO runtime.job_event (job_id, seq, type, event)
          SELECT ${id}, ${event.seq}, ${event.type}, ${JSON.stringify(event)}::jsonb
          WHERE EXISTS (SELECT 1 FROM runtime.job WHERE id = ${id} AND status = 'running')
          ON CONFLICT DO NOTHING`
        if (event.type === "usage") {
          yield* sql`UPDATE runtime.job SET usage = ${JSON.stringify(event)}::jsonb, cost_usd = ${event.costUsd} WHERE id = ${id} AND status = 'running'`
        }
        if (event.type === "grounding") {
          const counts: GroundingCounts = { grounded: event.grounded, ungrounded: event.ungrounded, unknown: event.unknown, required: event.required }
          yield* sql`UPDATE runtime.job SET grounding = ${JSON.stringify(counts)}::jsonb WHERE id = ${id} AND status = 'running'`
        }
      }).pipe(Effect.orDie),
    events: (id, after) =>
      Effect.map(
        sql<{ event: unknown }>`SELECT event FROM runtime.job_event WHERE job_id = ${id} AND seq > ${after} ORDER BY seq`,
        (rows) => rows.map((r) => (eventType(r.event), r.event as JobEvent))
      ).pipe(Effect.orDie),
    settle: (id, outcome, outputs) =>
      Effect.orDie(
        outcome.status === "completed"
          ? sql`UPDATE runtime.job SET status = 'completed', summary = ${outcome.summary}, outputs = ${outputs}, finished_at = now()
                WHERE id = ${id} AND status = 'running'`
          : sql`UPDATE runtime.job SET status = 'failed', reason = ${outcome.reason}, message = ${outcome.message}, outputs = ${outputs},
                finished_at = now() WHERE id = ${id} AND status = 'running'`
      ),
    requestAbort: (id, by) =>
      Effect.gen(function* () {
        yield* one(id)
        yield* sql`UPDATE runtime.job SET aborted_by = ${by}, aborted_at = now()
          WHERE id = ${id} AND status IN ('queued', 'running') AND aborted_by IS NULL`
        // A queued job never starts: it is settled as aborted right here.
        yield* sql`UPDATE runtime.job SET status = 'failed', reason = 'aborted', message = 'aborted before it started', finished_at = now(),
          abort_requested = true WHERE id = ${id} AND status = 'queued'`
        yield* sql`UPDATE runtime.job SET abort_requested = true WHERE id = ${id} AND status = 'running'`
        return fix(yield* one(id))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    abortRequested: (id) =>
      Effect.map(sql<{ abortRequested: boolean }>`SELECT abort_requested FROM runtime.job WHERE id = ${id}`, (r) => r[0]?.abortRequested === true).pipe(Effect.orDie),
    countByStatus: Effect.map(sql<{ status: JobStatus; n: string }>`SELECT status, count(*) AS n FROM runtime.job GROUP BY status`, (rows) => {
      const counts: Record<JobStatus, number> = { queued: 0, running: 0, completed: 0, failed: 0 }
      for (const r of rows) counts[r.status] = Number(r.n)
      return counts
    }).pipe(Effect.orDie)
  }
  return service
})

export const JobStoreLive = Layer.effect(JobStore, Effect.map(makeJobStore, (service) => traced("JobStore", service)))
