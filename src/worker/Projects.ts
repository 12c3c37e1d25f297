/**
 * Projects (`runtime.project`): the one owner of the table's reads and writes. A project may carry a
 * root inside the job roots; its jobs' workspaces must then lie inside it (JobRoots enforces that). It
 * may also lower the resources its jobs' process tools may take (buildEnvelope applies them), and turn on
 * transcripts of its jobs (what each job's model saw, kept encrypted for its retention days).
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { ResourceLimits } from "../contract/JobSpec.ts"
import { Problem } from "../contract/Problem.ts"
import { Num } from "../db/rowSchema.ts"
import { traced } from "../telemetry/traced.ts"
import { JobRoots } from "./JobRoots.ts"

export interface Project {
  readonly id: string
  readonly name: string
  /** As given at creation; every job of the project resolves it again (symlinks followed). */
  readonly root: string | null
  /** Lowers the server's job resources for the project's jobs; a field absent = the server's setting. */
  readonly resources: ResourceLimits
  /** `full`: every job of the project hands the worker its conversation per turn; `off` (default): nothing is kept. */
  readonly transcripts: TranscriptsSetting
  /** Days a stored transcript turn is kept. */
  readonly transcriptRetentionDays: number
  readonly createdAt: Date
}

const TranscriptsSetting = Schema.Literal("off", "full").annotations({
  message: () => ({ message: "must be off or full", override: true })
})
type TranscriptsSetting = typeof TranscriptsSetting.Type
/** The retention of a project that does not set one. */
export const DEFAULT_TRANSCRIPT_RETENTION_DAYS = 30
const RetentionDays = Schema.Number.pipe(
  Schema.int({ message: () => "must be a whole number of days from 1 to 3650" }),
  Schema.between(1, 3650, { message: () => "must be a whole number of days from 1 to 3650" })
)

/** A row as stored: `resources` is jsonb, decoded rather than trusted. */
const ProjectRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  root: Schema.NullOr(Schema.String),
  resources: ResourceLimits,
  transcripts: TranscriptsSetting,
  transcriptRetentionDays: Num,
  createdAt: Schema.DateFromSelf
})
const decodeRows = Schema.decodeUnknown(Schema.Array(ProjectRow))

export const ProjectInput = Schema.Struct({
  id: Schema.String.pipe(
    Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/, { message: () => "must match [a-z0-9][a-z0-9._-]* (at most 64 characters)" })
  ),
  name: Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
  /** A directory inside the job roots that the project's job workspaces must lie inside. */
  root: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })), { exact: true }),
  /** Resource limits the project's jobs may not exceed (each lower than the server's to have an effect). */
  resources: Schema.optionalWith(ResourceLimits, { exact: true }),
  /** Absent = off. */
  transcripts: Schema.optionalWith(TranscriptsSetting, { exact: true }),
  /** Absent = 30. */
  transcriptRetentionDays: Schema.optionalWith(RetentionDays, { exact: true })
})
export type ProjectInput = typeof ProjectInput.Type

/**
 * A project's settings (everything but the id, which never changes): absent `root` = no root, absent
 * `resources` = the server's, absent `transcripts` = off, absent `transcriptRetentionDays` = 30.
 */
export const ProjectSettings = Schema.Struct({
  name: ProjectInput.fields.name,
  root: ProjectInput.fields.root,
  resources: ProjectInput.fields.resources,
  transcripts: ProjectInput.fields.transcripts,
  transcriptRetentionDays: ProjectInput.fields.transcriptRetentionDays
})
export type ProjectSettings = typeof ProjectSettings.Type

export class ProjectExists extends Schema.TaggedError<ProjectExists>()("ProjectExists", { id: Schema.String }) {
  override get message(): string {
    return `a project "${this.id}" already exists`
  }
}
export class ProjectNotFound extends Schema.TaggedError<ProjectNotFound>()("ProjectNotFound", { id: Schema.String }) {
  override get message(): string {
    return `no project "${this.id}"`
  }
}
/** The root is not an existing directory inside the job roots; `problems` name it as path "root", never the host path. */
export class ProjectRootInvalid extends Schema.TaggedError<ProjectRootInvalid>()("ProjectRootInvalid", {
  problems: Schema.Array(Problem)
}) {
  override get message(): string {
    return "the project's root has problems"
  }
}

export class Projects extends Context.Tag("worker/Projects")<
  Projects,
  {
    /** Every project, by id. */
    readonly list: Effect.Effect<ReadonlyArray<Project>>
    readonly get: (id: string) => Effect.Effect<Project, ProjectNotFound>
    /** Creates a project; a `root` must resolve (symlinks followed) to a directory inside the job roots. Ids are never reused. */
    readonly create: (input: ProjectInput) => Effect.Effect<Project, ProjectExists | ProjectRootInvalid>
    /**
     * Replaces a project's name, root, resources and transcript settings (checked as at creation; absent
     * = the default). Every job of the project that starts from now on is confined to the new root (a
     * queued one outside it is refused at its start) and gets the new resources and transcript setting;
     * jobs already running keep what they started with. A new retention applies to turns stored already.
     */
    readonly update: (id: string, settings: ProjectSettings) => Effect.Effect<Project, ProjectNotFound | ProjectRootInvalid>
  }
>() {}

const makeProjects: Effect.Effect<Projects["Type"], never, SqlClient | JobRoots> = Effect.gen(function* () {
  const sql = yield* SqlClient
  const roots = yield* JobRoots
  const checkRoot = (root: string | undefined) =>
    Effect.gen(function* () {
      if (root === undefined) return
      const resolved = yield* roots.projectRoot(root)
      if (Either.isLeft(resolved)) return yield* Effect.fail(new ProjectRootInvalid({ problems: resolved.left }))
    })
  // A row that does not decode is a broken database, not a caller's problem: a defect.
  const rows = <E>(query: Effect.Effect<ReadonlyArray<unknown>, E>): Effect.Effect<ReadonlyArray<Project>> =>
    Effect.orDie(Effect.flatMap(query, decodeRows))
  const COLUMNS = sql.literal("id, name, root, resources, transcripts, transcript_retention_days, created_at")
  const service: Projects["Type"] = {
    list: rows(sql`SELECT ${COLUMNS} FROM runtime.project ORDER BY id`),
    get: (id) =>
      Effect.flatMap(rows(sql`SELECT ${COLUMNS} FROM runtime.project WHERE id = ${id}`), (found) =>
        found[0] === undefined ? Effect.fail(new ProjectNotFound({ id })) : Effect.succeed(found[0])
      ),
    create: (p) =>
      Effect.gen(function* () {
        yield* checkRoot(p.root)
        const created = (yield* rows(sql`INSERT INTO runtime.project (id, name, root, resources, transcripts, transcript_retention_days)
          VALUES (${p.id}, ${p.name}, ${p.root ?? null}, ${JSON.stringify(p.resources ?? {})}::jsonb,
            ${p.transcripts ?? "off"}, ${p.transcriptRetentionDays ?? DEFAULT_TRANSCRIPT_RETENTION_DAYS})
          ON CONFLICT (id) DO NOTHING RETURNING ${COLUMNS}`))[0]
        return created === undefined ? yield* Effect.fail(new ProjectExists({ id: p.id })) : created
      }),
    update: (id, p) =>
      Effect.gen(function* () {
        yield* checkRoot(p.root)
        const updated =
          (yield* rows(sql`UPDATE runtime.project SET name = ${p.name}, root = ${p.root ?? null}, resources = ${JSON.stringify(p.resources ?? {})}::jsonb,
            transcripts = ${p.transcripts ?? "off"}, transcript_retention_days = ${p.transcriptRetentionDays ?? DEFAULT_TRANSCRIPT_RETENTION_DAYS}
          WHERE id = ${id} RETURNING ${COLUMNS}`))[0]
        return updated === undefined ? yield* Effect.fail(new ProjectNotFound({ id })) : updated
      })
  }
  return service
})

export const ProjectsLive: Layer.Layer<Projects, never, SqlClient | JobRoots> = Layer.effect(
  Projects,
  Effect.map(makeProjects, (service) => traced("Projects", service))
)
