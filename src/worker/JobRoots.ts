/**
 * Job roots (ARCHITECTURE §10): `KINTSUGI_JOB_ROOTS` read and checked at start-up, the server's own
 * paths forbidden, every job workspace checked before it is queued, the boundary each job child gets.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Config, Context, Effect, Either, Layer, Schema } from "effect"
import fs from "node:fs"
import path from "node:path"
import type { JobBoundary } from "../contract/AgentRuntime.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { secretKeyPath } from "../providers/SecretBox.ts"
import { isInside, resolveWorkspace, type WorkspaceSpec } from "../job/confinement.ts"
import { boundaryProblems, canonicalBoundary, canonicalPath, type CanonicalBoundary, type PathCheck } from "../tools/workspaceBoundary.ts"
import { JobInput } from "./JobStore.ts"
import { decodeRows } from "../db/rowSchema.ts"
import { storeDefects } from "../db/StoreError.ts"

/** The repository root this server runs from (src/worker → ..). */
export const INSTALL_DIR = path.resolve(import.meta.dir, "..", "..")

/** The configured job roots cannot be used; the message names the variable and the path (operator log only). */
export class JobRootsInvalid extends Schema.TaggedError<JobRootsInvalid>()("JobRootsInvalid", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

export class JobRoots extends Context.Tag("worker/JobRoots")<
  JobRoots,
  {
    /** The configured boundary, canonical: job roots and the server's forbidden paths. */
    readonly boundary: CanonicalBoundary
    /** The envelope's boundary for a job of `projectId`: the project's root replaces the job roots when it has one. */
    readonly boundaryFor: (projectId: string) => Effect.Effect<JobBoundary>
    /**
     * Every problem of a job workspace at once, as the job child would find them: missing or wrong-kind
     * entries, overlaps, paths (symlinks followed) outside the job roots or the project's root, inside or
     * above a forbidden path. Messages never name a host path. Empty = the workspace may be queued.
     */
    readonly check: (ws: WorkspaceSpec, projectId: string | undefined) => Effect.Effect<ReadonlyArray<Problem>>
    /** A job body decoded, or its schema and workspace problems together. */
    readonly decodeJob: (body: unknown) => Effect.Effect<Either.Either<JobInput, ReadonlyArray<Problem>>>
    /** A project root: its canonical path, or the problems (path "root"). */
    readonly projectRoot: (root: string) => Effect.Effect<Either.Either<string, ReadonlyArray<Problem>>>
  }
>() {}

const pluck = (doc: unknown, key: string): unknown =>
  doc !== null && typeof doc === "object" ? (doc as Record<string, unknown>)[key] : undefined
// Lenient on purpose (excess keys ignored): the strict decode of the whole body reports those.
const decodeWorkspace = Schema.decodeUnknownEither(JobInput.fields.workspace)

const rootRows = decodeRows(Schema.Struct({ root: Schema.NullOr(Schema.String) }))

/** The service over an already canonical boundary; project roots come from `runtime.project.root`. */
const makeJobRoots = (boundary: CanonicalBoundary): Effect.Effect<JobRoots["Type"], never, SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const projectRootOf = (projectId: string | undefined) =>
      projectId === undefined || projectId === ""
        ? Effect.succeed(undefined)
        : Effect.map(
            // check's callers (admission and the project pages) treat it as a pure check: a store failure is a defect.
            storeDefects("JobRoots.check")(rootRows(sql`SELECT root FROM runtime.project WHERE id = ${projectId}`)),
            (rows) => rows[0]?.root ?? undefined
          )
    const inRoots = (p: string) => boundaryProblems(boundary, "root", p)

    const check: JobRoots["Type"]["check"] = (ws, projectId) =>
      Effect.gen(function* () {
        const projectRoot = yield* projectRootOf(projectId)
        const canonicalProject = projectRoot === undefined ? undefined : yield* canonicalPath(projectRoot)
        const pathCheck: PathCheck = (field, p) => [
          ...boundaryProblems(boundary, field, p),
          ...(projectRoot !== undefined && (canonicalProject === undefined || !isInside(p, canonicalProject))
            ? [{ path: field, message: "resolves outside the project's root" }]
            : [])
        ]
        return yield* Effect.match(resolveWorkspace(ws, pathCheck), { onFailure: (e) => e.problems, onSuccess: () => [] })
      })

    return {
      boundary,
      boundaryFor: (projectId) =>
        Effect.gen(function* () {
          const forbidden = boundary.forbidden.map((f) => f.path)
          const projectRoot = yield* projectRootOf(projectId)
          if (projectRoot === undefined) return { jobRoots: boundary.jobRoots, forbidden }
          const canonical = yield* canonicalPath(projectRoot)
          // A project root the job roots no longer hold admits nothing (the job child then refuses).
          return { jobRoots: canonical !== undefined && inRoots(canonical).length === 0 ? [canonical] : [], forbidden }
        }),
      check,
      decodeJob: (body) =>
        Effect.gen(function* () {
          const decoded = decodeAll(JobInput)(body)
          const ws = decodeWorkspace(pluck(body, "workspace"))
          const project = pluck(body, "project")
          const wsProblems = Either.isRight(ws) ? yield* check(ws.right, typeof project === "string" ? project : undefined) : []
          if (Either.isLeft(decoded)) return Either.left([...decoded.left, ...wsProblems])
          return wsProblems.length > 0 ? Either.left(wsProblems) : Either.right(decoded.right)
        }),
      projectRoot: (root) =>
        Effect.gen(function* () {
          if (!path.isAbsolute(root)) return Either.left([{ path: "root", message: "must be an absolute path" }])
          const real = yield* Effect.either(Effect.tryPromise(() => fs.promises.realpath(root)))
          if (Either.isLeft(real)) return Either.left([{ path: "root", message: "does not exist or cannot be resolved" }])
          const problems = inRoots(real.right)
          const isDir = yield* Effect.promise(() =>
            fs.promises.stat(real.right).then(
              (st) => st.isDirectory(),
              () => false
            )
          )
          if (!isDir) problems.unshift({ path: "root", message: "is not a directory" })
          return problems.length > 0 ? Either.left(problems) : Either.right(real.right)
        })
    }
  })

/**
 * The configured boundary: `KINTSUGI_JOB_ROOTS` (colon-separated; default `<data dir>/workspaces`,
 * created here) and the forbidden paths — the data dir, the secret key file, the installation. A root
 * that is or contains a forbidden path, or lies inside one (other than under `<data dir>/workspaces`),
 * or does not exist, is a configuration error.
 */
export const configuredBoundary = (options: {
  readonly dataDir: string
  readonly jobRoots: string | undefined
  readonly installDir?: string
}): Effect.Effect<CanonicalBoundary, JobRootsInvalid> =>
  Effect.gen(function* () {
    const dataDir = path.resolve(options.dataDir)
    const workspaces = path.join(dataDir, "workspaces")
    const given = (options.jobRoots ?? "")
      .split(":")
      .filter((r) => r.trim() !== "")
      .map((r) => path.resolve(r))
    const fail = (message: string) => Effect.fail(new JobRootsInvalid({ message }))
    if (given.length === 0) {
      yield* Effect.try({
        try: () => fs.mkdirSync(workspaces, { recursive: true, mode: 0o700 }),
        catch: (cause) => new JobRootsInvalid({ message: `cannot create the default job root ${workspaces}`, cause })
      })
    }
    const roots = given.length === 0 ? [workspaces] : given
    const installDir = options.installDir ?? INSTALL_DIR
    const names = {
      [dataDir]: "the server's data directory",
      [secretKeyPath(dataDir)]: "the server's secret key file",
      [installDir]: "the server's installation directory"
    }
    const b = yield* canonicalBoundary({ jobRoots: [], forbidden: Object.keys(names) }, names)
    const carveOut = (yield* canonicalPath(workspaces)) ?? workspaces
    const jobRoots: Array<string> = []
    for (const r of roots) {
      const real = yield* Effect.either(Effect.tryPromise(() => fs.promises.realpath(r)))
      if (Either.isLeft(real) || !fs.statSync(real.right).isDirectory())
        return yield* fail(`KINTSUGI_JOB_ROOTS: ${r} is not an existing directory`)
      for (const f of b.forbidden) {
        if (isInside(f.path, real.right)) return yield* fail(`KINTSUGI_JOB_ROOTS: ${r} is or contains ${f.name} (${f.path})`)
        if (isInside(real.right, f.path) && !isInside(real.right, carveOut)) {
          return yield* fail(`KINTSUGI_JOB_ROOTS: ${r} is inside ${f.name} (${f.path}); only ${workspaces} may be`)
        }
      }
      jobRoots.push(real.right)
    }
    return { jobRoots, forbidden: b.forbidden }
  })

/** The service from the configuration (`KINTSUGI_DATA_DIR`, `KINTSUGI_JOB_ROOTS`). */
export const makeJobRootsFromConfig: Effect.Effect<JobRoots["Type"], JobRootsInvalid, SqlClient> = Effect.gen(function* () {
  const config = yield* Config.all({
    dataDir: Config.string("KINTSUGI_DATA_DIR").pipe(Config.withDefault(".kintsugi")),
    jobRoots: Config.option(Config.string("KINTSUGI_JOB_ROOTS"))
  }).pipe(Effect.mapError((e) => new JobRootsInvalid({ message: e.message, cause: e })))
  const boundary = yield* configuredBoundary({
    dataDir: config.dataDir,
    jobRoots: config.jobRoots._tag === "Some" ? config.jobRoots.value : undefined
  })
  return yield* makeJobRoots(boundary)
})

export const JobRootsLive: Layer.Layer<JobRoots, JobRootsInvalid, SqlClient> = Layer.effect(JobRoots, makeJobRootsFromConfig)
