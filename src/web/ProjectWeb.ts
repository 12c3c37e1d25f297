/**
 * A project's web settings (design/memory-and-web.md §4): which agent ids get `web_search`, the separate
 * `web_fetch` opt-in, and the budgets; and the usage counted against them. A call is counted by one
 * transaction of two conditional upserts (the job's count, then the project's count for the UTC day),
 * each counting only while under its budget: parallel jobs and several serve processes never overspend.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { decodeAll, Problem } from "../contract/Problem.ts"
import { decodeRows, Jsonb, Num } from "../db/rowSchema.ts"
import { type StoreError, storeDefects, storeMethod } from "../db/StoreError.ts"
import { traced } from "../telemetry/traced.ts"
import { ProjectNotFound, Projects } from "../worker/Projects.ts"

const Budget = Schema.Number.pipe(
  Schema.int({ message: () => "must be a whole number" }),
  Schema.between(0, 100_000, { message: () => "must be between 0 and 100000" })
)
const AgentId = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9-]{0,63}$/, { message: () => "must be an agent id: [a-z][a-z0-9-]* (at most 64 characters)" })
)

/** `PUT /api/projects/:id/web`: every field optional; an absent one keeps its stored (else default) value. */
const WebSettingsInput = Schema.Struct({
  searchAgents: Schema.optionalWith(Schema.Array(AgentId).pipe(Schema.maxItems(200)), { exact: true }),
  fetch: Schema.optionalWith(Schema.Boolean, { exact: true }),
  dailySearches: Schema.optionalWith(Budget, { exact: true }),
  dailyFetches: Schema.optionalWith(Budget, { exact: true }),
  jobSearches: Schema.optionalWith(Budget, { exact: true }),
  jobFetches: Schema.optionalWith(Budget, { exact: true })
})

export interface WebSettings {
  readonly searchAgents: ReadonlyArray<string>
  readonly fetch: boolean
  readonly dailySearches: number
  readonly dailyFetches: number
  readonly jobSearches: number
  readonly jobFetches: number
}

const DEFAULT_WEB_SETTINGS: WebSettings = {
  searchAgents: [],
  fetch: false,
  dailySearches: 100,
  dailyFetches: 200,
  jobSearches: 10,
  jobFetches: 20
}

/** One UTC day's counts of a project. */
export interface WebUsageDay {
  /** YYYY-MM-DD (UTC). */
  readonly day: string
  readonly searches: number
  readonly fetches: number
}

export type WebCallKind = "search" | "fetch"

export class WebSettingsInvalid extends Schema.TaggedError<WebSettingsInvalid>()("WebSettingsInvalid", {
  problems: Schema.Array(Problem)
}) {
  override get message(): string {
    return "the web settings have problems"
  }
}

/** The budget of a call is used up: a tool error for the model, never a job failure. */
export class WebBudgetExhausted extends Schema.TaggedError<WebBudgetExhausted>()("WebBudgetExhausted", {
  kind: Schema.Literal("search", "fetch"),
  scope: Schema.Literal("day", "job"),
  limit: Schema.Number
}) {
  override get message(): string {
    const what = this.kind === "search" ? "web search" : "web fetch"
    return this.scope === "day"
      ? `${what} budget for today is used up (the project's ${this.limit} per UTC day)`
      : `${what} budget for this job is used up (${this.limit} per job)`
  }
}

export class ProjectWeb extends Context.Tag("web/ProjectWeb")<
  ProjectWeb,
  {
    /** The project's settings (the defaults when never set). */
    readonly get: (projectId: string) => Effect.Effect<WebSettings, ProjectNotFound | StoreError>
    readonly put: (
      projectId: string,
      input: unknown,
      by: string
    ) => Effect.Effect<WebSettings, ProjectNotFound | WebSettingsInvalid | StoreError>
    /** The project's counts for the last `days` UTC days (today first; days without a call are 0). */
    readonly usage: (projectId: string, days: number) => Effect.Effect<ReadonlyArray<WebUsageDay>, ProjectNotFound | StoreError>
    /** One job's counts. */
    readonly jobUsage: (jobId: string) => Effect.Effect<{ readonly searches: number; readonly fetches: number }, StoreError>
    /**
     * Counts one call against the job's and the project's daily budget, atomically, or refuses it
     * (nothing counted) when either is used up.
     */
    readonly take: (projectId: string, jobId: string, kind: WebCallKind) => Effect.Effect<void, WebBudgetExhausted>
  }
>() {}

const settingsRows = decodeRows(
  Schema.Struct({
    searchAgents: Jsonb(Schema.Array(Schema.String)),
    fetchEnabled: Schema.Boolean,
    dailySearches: Num,
    dailyFetches: Num,
    jobSearches: Num,
    jobFetches: Num
  })
)
const Counts = { searches: Num, fetches: Num }
const dayRows = decodeRows(Schema.Struct({ ...Counts, day: Schema.NullOr(Schema.String), today: Schema.String }))
const jobRows = decodeRows(Schema.Struct(Counts))

const isoDay = (d: Date): string => d.toISOString().slice(0, 10)

const makeProjectWeb: Effect.Effect<ProjectWeb["Type"], never, SqlClient | Projects> = Effect.gen(function* () {
  const sql = yield* SqlClient
  const projects = yield* Projects
  const stored = (projectId: string) =>
    Effect.map(
      settingsRows(
        sql`SELECT search_agents, fetch_enabled, daily_searches, daily_fetches, job_searches, job_fetches FROM runtime.project_web WHERE project_id = ${projectId}`
      ),
      (rows): WebSettings => {
        const r = rows[0]
        if (r === undefined) return DEFAULT_WEB_SETTINGS
        const { fetchEnabled, ...rest } = r
        return { ...rest, fetch: fetchEnabled }
      }
    )

  const service: ProjectWeb["Type"] = {
    get: storeMethod("ProjectWeb.get", (projectId: string) => Effect.zipRight(projects.get(projectId), stored(projectId))),
    put: storeMethod("ProjectWeb.put", (projectId: string, input: unknown, by: string) =>
      Effect.gen(function* () {
        yield* projects.get(projectId)
        const decoded = decodeAll(WebSettingsInput)(input)
        if (Either.isLeft(decoded)) return yield* Effect.fail(new WebSettingsInvalid({ problems: decoded.left }))
        const s: WebSettings = { ...(yield* stored(projectId)), ...decoded.right }
        const agents = [...new Set(s.searchAgents)].sort()
        yield* sql`INSERT INTO runtime.project_web (project_id, search_agents, fetch_enabled, daily_searches, daily_fetches, job_searches, job_fetches, updated_by)
          VALUES (${projectId}, ${JSON.stringify(agents)}::jsonb, ${s.fetch}, ${s.dailySearches}, ${s.dailyFetches}, ${s.jobSearches}, ${s.jobFetches}, ${by})
          ON CONFLICT (project_id) DO UPDATE SET search_agents = EXCLUDED.search_agents, fetch_enabled = EXCLUDED.fetch_enabled,
            daily_searches = EXCLUDED.daily_searches, daily_fetches = EXCLUDED.daily_fetches, job_searches = EXCLUDED.job_searches,
            job_fetches = EXCLUDED.job_fetches, updated_by = EXCLUDED.updated_by, updated_at = now()`
        return yield* stored(projectId)
      })
    ),
    usage: storeMethod("ProjectWeb.usage", (projectId: string, days: number) =>
      Effect.gen(function* () {
        yield* projects.get(projectId)
        const n = Math.max(1, Math.min(90, Math.trunc(days)))
        const rows = yield* dayRows(sql`
          SELECT to_char(day, 'YYYY-MM-DD') AS day, searches, fetches, to_char((now() AT TIME ZONE 'utc')::date, 'YYYY-MM-DD') AS today
          FROM runtime.web_usage_day WHERE project_id = ${projectId} AND day > (now() AT TIME ZONE 'utc')::date - ${n}::int
          UNION ALL SELECT NULL, 0, 0, to_char((now() AT TIME ZONE 'utc')::date, 'YYYY-MM-DD')`)
        const today = rows[0]?.today ?? isoDay(new Date())
        const byDay = new Map(rows.flatMap((r) => (r.day === null ? [] : [[r.day, r] as const])))
        return Array.from({ length: n }, (_, i) => {
          const day = isoDay(new Date(Date.parse(`${today}T00:00:00Z`) - i * 86_400_000))
          const r = byDay.get(day)
          return { day, searches: r?.searches ?? 0, fetches: r?.fetches ?? 0 }
        })
      })
    ),
    jobUsage: storeMethod("ProjectWeb.jobUsage", (jobId: string) =>
      Effect.map(
        jobRows(sql`SELECT searches, fetches FROM runtime.web_usage_job WHERE job_id = ${jobId}`),
        (rows) => rows[0] ?? { searches: 0, fetches: 0 }
      )
    ),
    take: (projectId, jobId, kind) => {
      const column = sql(kind === "search" ? "searches" : "fetches")
      const counted = Effect.gen(function* () {
        const s = yield* stored(projectId)
        const jobLimit = kind === "search" ? s.jobSearches : s.jobFetches
        const dayLimit = kind === "search" ? s.dailySearches : s.dailyFetches
        // The row lock of ON CONFLICT DO UPDATE serialises concurrent callers; its WHERE sees the latest count.
        const job =
          yield* sql`INSERT INTO runtime.web_usage_job AS u (job_id, project_id, ${column}) SELECT ${jobId}, ${projectId}, 1 WHERE ${jobLimit}::int > 0
          ON CONFLICT (job_id) DO UPDATE SET ${column} = u.${column} + 1 WHERE u.${column} < ${jobLimit}::int RETURNING u.job_id`
        if (job.length === 0) return yield* Effect.fail(new WebBudgetExhausted({ kind, scope: "job", limit: jobLimit }))
        const day = yield* sql`INSERT INTO runtime.web_usage_day AS u (project_id, day, ${column})
          SELECT ${projectId}, (now() AT TIME ZONE 'utc')::date, 1 WHERE ${dayLimit}::int > 0
          ON CONFLICT (project_id, day) DO UPDATE SET ${column} = u.${column} + 1 WHERE u.${column} < ${dayLimit}::int RETURNING u.day`
        // Failing inside the transaction rolls the job's count back: a refused call counts nowhere.
        if (day.length === 0) return yield* Effect.fail(new WebBudgetExhausted({ kind, scope: "day", limit: dayLimit }))
      })
      // A tool call's only refusal is the budget; a store failure there ends the job as an error (a defect).
      return sql.withTransaction(counted).pipe(storeDefects("ProjectWeb.take"))
    }
  }
  return service
})

export const ProjectWebLive: Layer.Layer<ProjectWeb, never, SqlClient | Projects> = Layer.effect(
  ProjectWeb,
  Effect.map(makeProjectWeb, (service) => traced("ProjectWeb", service))
)
