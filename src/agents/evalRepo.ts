/**
 * SQL of evaluation runs and results (migration 051, docs/evals.md): the one owner of
 * `admin.agent_eval_run` and `admin.agent_eval_result`. Every function needs a `SqlClient`.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { decodeRows, Jsonb, Num, Timestamp } from "../db/rowSchema.ts"

type EvalRunStatus = "waiting" | "running" | "passed" | "failed" | "error"

/** The grounding counts of an eval's job, as the job stores them (migration 050). */
interface EvalGrounding {
  readonly grounded: number
  readonly ungrounded: number
  readonly unknown: number
}

export interface EvalResult {
  readonly eval: string
  readonly passed: boolean
  /** Every expectation the job missed, one sentence each ([] = passed). */
  readonly problems: ReadonlyArray<string>
  readonly costUsd: number | null
  readonly durationMs: number
  readonly grounding: EvalGrounding | null
  readonly jobId: string | null
}

export interface EvalRun {
  readonly id: string
  readonly agent: string
  readonly version: number
  readonly project: string
  /** Started by a save of a `gate: evals` agent: all passing makes the version current. */
  readonly gate: boolean
  readonly status: EvalRunStatus
  readonly message: string
  readonly startedBy: string
  readonly startedAt: Date
  readonly finishedAt: Date | null
  readonly results: ReadonlyArray<EvalResult>
}

const RunRow = Schema.Struct({
  id: Schema.String,
  agentName: Schema.String,
  version: Schema.Number,
  projectId: Schema.String,
  gate: Schema.Boolean,
  status: Schema.Literal("waiting", "running", "passed", "failed", "error"),
  message: Schema.String,
  startedBy: Schema.String,
  startedAt: Timestamp,
  finishedAt: Schema.NullOr(Timestamp)
})
type RunRow = typeof RunRow.Type

const Count = Schema.optionalWith(Schema.Number, { default: () => 0 })
const ResultRow = Schema.Struct({
  runId: Schema.String,
  evalName: Schema.String,
  passed: Schema.Boolean,
  problems: Jsonb(Schema.Array(Schema.String)),
  costUsd: Schema.NullOr(Num),
  durationMs: Num,
  grounding: Schema.NullOr(Jsonb(Schema.Struct({ grounded: Count, ungrounded: Count, unknown: Count }))),
  jobId: Schema.NullOr(Schema.String)
})

const runRows = decodeRows(RunRow)
const resultRows = decodeRows(ResultRow)
const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
const abandonedRows = decodeRows(Schema.Struct({ id: Schema.String, agentName: Schema.String, version: Schema.Number }))

const RUN_COLUMNS = "id, agent_name, version, project_id, gate, status, message, started_by, started_at, finished_at"

/** Runs with their results, in the order of `rows`. */
const withResults = (rows: ReadonlyArray<RunRow>) =>
  Effect.flatMap(SqlClient, (sql) =>
    rows.length === 0
      ? Effect.succeed([])
      : Effect.map(
          resultRows(sql`SELECT run_id, eval_name, passed, problems, cost_usd, duration_ms, grounding, job_id
            FROM admin.agent_eval_result WHERE run_id IN ${sql.in(rows.map((r) => r.id))} ORDER BY eval_name`),
          (results): Array<EvalRun> =>
            rows.map(({ agentName, projectId, ...r }) => ({
              ...r,
              agent: agentName,
              project: projectId,
              results: results
                .filter((x) => x.runId === r.id)
                .map((x) => ({
                  eval: x.evalName,
                  passed: x.passed,
                  problems: x.problems,
                  costUsd: x.costUsd,
                  durationMs: x.durationMs,
                  grounding: x.grounding,
                  jobId: x.jobId
                }))
            }))
        )
  )

/** A new run; `waiting` (a gated save, claimed later by the Evals service) or `running`. */
/** A `running` run starts under a lease of `leaseMs` (the executing process renews it with `beat`). */
export const insertRun = (
  r: { readonly agent: string; readonly version: number; readonly project: string; readonly gate: boolean; readonly by: string } & (
    | { readonly status: "waiting" }
    | { readonly status: "running"; readonly leaseMs: number }
  )
) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.flatMap(
      idRows(sql`INSERT INTO admin.agent_eval_run (agent_name, version, project_id, gate, status, started_by, heartbeat_at, lease_expires_at)
        VALUES (${r.agent}, ${r.version}, ${r.project}, ${r.gate}, ${r.status}, ${r.by},
          ${r.status === "running" ? sql`now()` : null}, ${r.status === "running" ? sql`now() + make_interval(secs => ${r.leaseMs / 1000})` : null}) RETURNING id`),
      // An INSERT … RETURNING that succeeded returns its row: none means the database broke its contract.
      (rows) => (rows[0] === undefined ? Effect.dieMessage("an inserted eval run returned no row") : Effect.succeed(rows[0].id))
    )
  )

/** Takes every waiting run (a gated save's) as running under a lease of `leaseMs`, at most once across processes. */
export const claimWaiting = (leaseMs: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.flatMap(
      runRows(sql`UPDATE admin.agent_eval_run
      SET status = 'running', started_at = now(), heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
      WHERE id IN (SELECT id FROM admin.agent_eval_run WHERE status = 'waiting' ORDER BY started_at FOR UPDATE SKIP LOCKED)
      RETURNING ${sql.literal(RUN_COLUMNS)}`),
      withResults
    )
  )

export const insertResult = (runId: string, r: EvalResult) =>
  Effect.flatMap(
    SqlClient,
    (sql) =>
      sql`INSERT INTO admin.agent_eval_result (run_id, eval_name, passed, problems, cost_usd, duration_ms, grounding, job_id)
      VALUES (${runId}, ${r.eval}, ${r.passed}, ${JSON.stringify(r.problems)}::jsonb, ${r.costUsd}, ${Math.round(r.durationMs)},
              ${r.grounding === null ? null : JSON.stringify(r.grounding)}::jsonb, ${r.jobId})
      ON CONFLICT (run_id, eval_name) DO NOTHING`
  )

export const finishRun = (runId: string, status: "passed" | "failed" | "error", message: string) =>
  Effect.flatMap(
    SqlClient,
    (sql) =>
      sql`UPDATE admin.agent_eval_run SET status = ${status}, message = ${message}, finished_at = now() WHERE id = ${runId} AND finished_at IS NULL`
  )

/**
 * The executing process renews its lease on a running run (see `endAbandoned`) for `leaseMs` more: false
 * when the run is no longer running (a sweep ended it), so its executor stops.
 */
export const beat = (runId: string, leaseMs: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql`UPDATE admin.agent_eval_run SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
        WHERE id = ${runId} AND status = 'running' RETURNING id`,
      (rows) => rows.length > 0
    )
  )

/**
 * Ends a gated run that every eval passed, in one transaction: the version is made current only while
 * the run is still unfinished (a run a sweep already ended as `error` promotes nothing). The message says
 * what happened; undefined when the run had already ended.
 */
export const finishPassedGate = (runId: string, agent: string, version: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const open = yield* sql`SELECT id FROM admin.agent_eval_run WHERE id = ${runId} AND finished_at IS NULL FOR UPDATE`
        if (open.length === 0) return undefined
        const promoted = yield* promoteVersion(agent, version)
        const message = promoted
          ? `every eval passed: v${version} is now current`
          : `every eval passed; v${version} was not made current: a newer version is current`
        yield* finishRun(runId, "passed", message)
        return message
      })
    )
  )

/**
 * Ends as `error` every running run whose lease ran out (its process was killed outright and will never
 * finish it), as the job sweep settles a job; a run without a lease (from before leases) once its last
 * heartbeat is `unleasedAfterSec` old. Returns them; two sweeps at once end each run once.
 */
export const endAbandoned = (unleasedAfterSec: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    abandonedRows(sql`UPDATE admin.agent_eval_run
      SET status = 'error', finished_at = now(),
          message = 'the server running it stopped before it finished (its lease ran out); start a new run'
      WHERE status = 'running'
        AND coalesce(lease_expires_at, coalesce(heartbeat_at, started_at) + make_interval(secs => ${unleasedAfterSec})) < now()
      RETURNING id, agent_name, version`)
  )

/** Runs of one agent (one version, or all), newest first, with their results. */
export const selectRuns = (agent: string, version?: number, limit = 50) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.flatMap(
      runRows(sql`SELECT ${sql.literal(RUN_COLUMNS)} FROM admin.agent_eval_run
        WHERE agent_name = ${agent} ${version === undefined ? sql`` : sql`AND version = ${version}`}
        ORDER BY started_at DESC, id DESC LIMIT ${limit}`),
      withResults
    )
  )

export const selectRun = (id: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      Effect.flatMap(
        /^[0-9a-f-]{36}$/i.test(id)
          ? runRows(sql`SELECT ${sql.literal(RUN_COLUMNS)} FROM admin.agent_eval_run WHERE id = ${id}`)
          : Effect.succeed([]),
        withResults
      ),
      (runs) => runs[0]
    )
  )

/**
 * The gated version of `agent` newer than `current` whose latest gate run is the newest: what keeps a
 * saved version from being current (waiting, running or failed). Undefined when there is none.
 */
export const selectPendingGate = (agent: string, current: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.flatMap(
      runRows(sql`SELECT ${sql.literal(RUN_COLUMNS)} FROM admin.agent_eval_run
        WHERE agent_name = ${agent} AND gate AND version > ${current}
        ORDER BY version DESC, started_at DESC, id DESC LIMIT 1`),
      (rows) => Effect.map(withResults(rows), (runs) => runs[0])
    )
  )

/** Makes a passing gated version current, unless the agent's current version is already as new. */
const promoteVersion = (agent: string, version: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql`UPDATE admin.agent SET current_version = ${version}, updated_at = now(),
          audience = (SELECT package->>'audience' FROM admin.agent_version WHERE name = ${agent} AND version = ${version})
        WHERE name = ${agent} AND current_version < ${version}
          AND EXISTS (SELECT 1 FROM admin.agent_version WHERE name = ${agent} AND version = ${version}
                      AND saved_at >= (SELECT created_at FROM admin.agent WHERE name = ${agent}))
        RETURNING name`,
      (rows) => rows.length > 0
    )
  )

/** What a version's latest run says, for the API's version list and agent view. */
export interface EvalVerdict {
  readonly runId: string
  readonly version: number
  readonly gate: boolean
  readonly status: EvalRunStatus
  readonly message: string
  readonly passed: number
  readonly failed: number
  /** Each failing eval and its problems. */
  readonly failures: ReadonlyArray<{ readonly eval: string; readonly problems: ReadonlyArray<string> }>
}

export const verdictOf = (run: EvalRun): EvalVerdict => ({
  runId: run.id,
  version: run.version,
  gate: run.gate,
  status: run.status,
  message: run.message,
  passed: run.results.filter((r) => r.passed).length,
  failed: run.results.filter((r) => !r.passed).length,
  failures: run.results.filter((r) => !r.passed).map((r) => ({ eval: r.eval, problems: r.problems }))
})

/** The latest run of each version of `agent`. */
export const selectLatestRuns = (agent: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.flatMap(
      runRows(sql`SELECT DISTINCT ON (version) ${sql.literal(RUN_COLUMNS)} FROM admin.agent_eval_run
        WHERE agent_name = ${agent} ORDER BY version, started_at DESC, id DESC`),
      withResults
    )
  )
