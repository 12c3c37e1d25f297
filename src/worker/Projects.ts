/**
 * Projects (`runtime.project`): the one owner of the table's reads and writes. A project may carry a
 * root inside the job roots; its jobs' workspaces must then lie inside it (JobRoots enforces that).
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { Problem } from "../contract/Problem.ts"
import { traced } from "../telemetry/traced.ts"
import { JobRoots } from "./JobRoots.ts"

export interface Project {
  readonly id: string
  readonly name: string
  /** As given at creation; every job of the project resolves it again (symlinks followed). */
  readonly root: string | null
  readonly createdAt: Date
}

export const ProjectInput = Schema.Struct({
  id: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/, { message: () => "must match [a-z0-9][a-z0-9._-]* (at most 64 characters)" })),
  name: Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
  /** A directory inside the job roots that the project's job workspaces must lie inside. */
  root: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })), { exact: true })
})
export type ProjectInput = typeof ProjectInput.Type

/** A project's settings (everything but the id, which never changes): absent `root` = no root. */
export const ProjectSettings = Schema.Struct({ name: ProjectInput.fields.name, root: ProjectInput.fields.root })
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
export class ProjectRootInvalid extends Schema.TaggedError<ProjectRootInvalid>()("ProjectRootInvalid", { problems: Schema.Array(Problem) }) {
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
     * Replaces a project's name and root (checked as at creation; absent = none). Every job of the
     * project that starts from now on is confined to the new root (a queued one outside it is refused
     * at its start); jobs already running keep the workspace they were admitted with.
     */
    readonly update: (id: string, settings: ProjectSettings) => Effect.Effect<Project, ProjectNotFound | ProjectRootInvalid>
  }
>() {}

export const makeProjects: Effect.Effect<Projects["Type"], never, SqlClient | JobRoots> = Effect.gen(function* () {
  const sql = yield* SqlClient
  const roots = yield* JobRoots
  const checkRoot = (root: string | undefined) =>
    Effect.gen(function* () {
      if (root === undefined) return
      const resolved = yield* roots.projectRoot(root)
      if (Either.isLeft(resolved)) return yield* Effect.fail(new ProjectRootInvalid({ problems: resolved.left }))
    })
  const service: Projects["Type"] = {
    list: Effect.orDie(sql<Project>`SELECT id, name, root, created_at FROM runtime.project ORDER BY id`),
    get: (id) =>
      Effect.flatMap(Effect.orDie(sql<Project>`SELECT id, name, root, created_at FROM runtime.project WHERE id = ${id}`), (rows) =>
        rows[0] === undefined ? Effect.fail(new ProjectNotFound({ id })) : Effect.succeed(rows[0])
      ),
    create: (p) =>
      Effect.gen(function* () {
        yield* checkRoot(p.root)
        const rows = yield* Effect.orDie(sql<Project>`INSERT INTO runtime.project (id, name, root) VALUES (${p.id}, ${p.name}, ${p.root ?? null})
          ON CONFLICT (id) DO NOTHING RETURNING id, name, root, created_at`)
        const created = rows[0]
        return created === undefined ? yield* Effect.fail(new ProjectExists({ id: p.id })) : created
      }),
    update: (id, p) =>
      Effect.gen(function* () {
        yield* checkRoot(p.root)
        const rows = yield* Effect.orDie(sql<Project>`UPDATE runtime.project SET name = ${p.name}, root = ${p.root ?? null} WHERE id = ${id}
          RETURNING id, name, root, created_at`)
        const updated = rows[0]
        return updated === undefined ? yield* Effect.fail(new ProjectNotFound({ id })) : updated
      })
  }
  return service
})

export const ProjectsLive: Layer.Layer<Projects, never, SqlClient | JobRoots> = Layer.effect(Projects, Effect.map(makeProjects, (service) => traced("Projects", service)))
