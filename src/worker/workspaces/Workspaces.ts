/**
 * Workspaces: folders under the job roots laid out for a job (`<name>/src` the sources, `<name>/out`
 * the outDir), listed for the run form and created by an admin from a git URL or an uploaded archive.
 * A new folder is made inside a job root the server lists, never over anything that exists, and is
 * removed again when filling it fails.
 */
import { Clock, Context, Effect, Either, Exit, Layer, Ref, type Scope } from "effect"
import type { Problem } from "../../contract/Problem.ts"
import { decodeAll } from "../../contract/Problem.ts"
import { traced } from "../../telemetry/traced.ts"
import { JobRoots } from "../JobRoots.ts"
import { readArchive, WORKSPACE_ARCHIVE_CAPS } from "./archiveFiles.ts"
import type { CheckedTarget } from "../../net/urlPolicy.ts"
import { checkGitUrl, cloneRepository, DEFAULT_CLONE_LIMITS, DEFAULT_CLONE_POLICY, type CloneLimits, type ClonePolicy } from "./gitClone.ts"
import type { TarCaps } from "./tarGz.ts"
import { NewWorkspace, WorkspaceCloneFailed, WorkspaceExists, WorkspaceInvalid } from "./workspaceErrors.ts"
import { claimFolder, findWorkspaces, folderOf, isErrno, releaseFolder, writeFiles, type WorkspaceFolder } from "./workspaceFolder.ts"

/** A clone started by `startClone`: running (`failure` undefined) or failed; a finished one is a workspace. */
export interface CloneStatus {
  readonly name: string
  readonly jobRoot: string
  readonly url: string
  readonly startedAt: Date
  readonly failure: string | undefined
}

export interface UploadedArchive {
  readonly fileName: string
  readonly bytes: Uint8Array
}

export class Workspaces extends Context.Tag("worker/Workspaces")<
  Workspaces,
  {
    /** The workspaces under the job roots (each holding `src/` and `out/`), by root then name. */
    readonly list: Effect.Effect<ReadonlyArray<WorkspaceFolder>>
    /**
     * Creates `<root>/<name>` with the archive's files in `src/` and an empty `out/`. Every problem of
     * the request at once (root, name, the archive's entries and caps); nothing is written unless the
     * whole archive was read. Never replaces an existing folder.
     */
    readonly fromArchive: (
      target: NewWorkspace,
      archive: UploadedArchive
    ) => Effect.Effect<WorkspaceFolder, WorkspaceInvalid | WorkspaceExists>
    /**
     * Creates `<root>/<name>` with a shallow clone of `url` in `src/` and an empty `out/`: an https URL
     * the outbound policy allows, cloned under the time and size caps. Nothing stays behind on failure.
     */
    readonly fromGit: (
      target: NewWorkspace,
      url: string
    ) => Effect.Effect<WorkspaceFolder, WorkspaceInvalid | WorkspaceExists | WorkspaceCloneFailed>
    /**
     * `fromGit` that returns once the request is checked and the folder claimed; the clone runs on in
     * the service's scope (interrupted, and its folder removed, when the server stops). `list` leaves
     * the folder out until the clone is done; `clones` shows it running, then failed or gone.
     */
    readonly startClone: (target: NewWorkspace, url: string) => Effect.Effect<WorkspaceFolder, WorkspaceInvalid | WorkspaceExists>
    /** Clones started here that run or failed, newest first (the last MAX_CLONES). */
    readonly clones: Effect.Effect<ReadonlyArray<CloneStatus>>
  }
>() {}

export interface WorkspacesOptions {
  readonly archiveCaps?: Partial<TarCaps>
  readonly clone?: Partial<CloneLimits>
  /** Who a clone may reach and how hosts resolve (default: public addresses, the system resolver). */
  readonly policy?: ClonePolicy
}

const decodeTarget = decodeAll(NewWorkspace)
/** Failed clones kept for the page, besides the running ones. */
const MAX_CLONES = 20

const makeWorkspaces = (options: WorkspacesOptions = {}): Effect.Effect<Workspaces["Type"], never, JobRoots | Scope.Scope> =>
  Effect.gen(function* () {
    const roots = (yield* JobRoots).boundary.jobRoots
    const scope = yield* Effect.scope
    const clones = yield* Ref.make<ReadonlyArray<CloneStatus & { readonly path: string }>>([])
    const caps: TarCaps = { ...WORKSPACE_ARCHIVE_CAPS, ...options.archiveCaps }
    const limits: CloneLimits = { ...DEFAULT_CLONE_LIMITS, ...options.clone }
    const policy = options.policy ?? DEFAULT_CLONE_POLICY

    const targetProblems = (target: NewWorkspace): Array<Problem> => {
      const decoded = decodeTarget(target)
      const problems = Either.isLeft(decoded) ? decoded.left : []
      if (target.root !== "" && !roots.includes(target.root))
        problems.push({ path: "root", message: "is not one of this server's job roots" })
      return problems
    }

    /** Makes the folder (never over an existing one), or fails with WorkspaceExists. */
    const claim = (target: NewWorkspace): Effect.Effect<WorkspaceFolder, WorkspaceExists> => {
      const folder = folderOf(target.root, target.name)
      return Effect.try({ try: () => claimFolder(folder), catch: (e) => e }).pipe(
        // Only EEXIST is the caller's; any other file-system error under the data directory is a broken installation.
        Effect.catchAll((e) => (isErrno(e, "EEXIST") ? Effect.fail(new WorkspaceExists({ name: target.name })) : Effect.die(e))),
        Effect.as(folder)
      )
    }
    /** Fills a claimed folder; removes it again when filling fails or is interrupted. */
    const fill = <E>(folder: WorkspaceFolder, filling: Effect.Effect<void, E>): Effect.Effect<WorkspaceFolder, E> =>
      filling.pipe(
        Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => releaseFolder(folder)))),
        Effect.as(folder)
      )
    /** The request's problems with the URL's, or the checked URL. */
    const checkClone = (target: NewWorkspace, url: string) =>
      Effect.gen(function* () {
        const problems = targetProblems(target)
        const checked = yield* Effect.promise(() => checkGitUrl(url, policy))
        if (Either.isLeft(checked)) problems.push({ path: "url", message: checked.left })
        if (problems.length > 0 || Either.isLeft(checked)) return yield* Effect.fail(new WorkspaceInvalid({ problems }))
        return checked.right
      })
    const clone = (checked: CheckedTarget, folder: WorkspaceFolder): Effect.Effect<void, WorkspaceCloneFailed> =>
      Effect.flatMap(cloneRepository(checked, folder.path, folder.src, policy, limits), (outcome) =>
        outcome.ok ? Effect.void : Effect.fail(new WorkspaceCloneFailed({ problem: outcome.problem }))
      )

    const service: Workspaces["Type"] = {
      list: Effect.gen(function* () {
        const running = new Set((yield* Ref.get(clones)).filter((c) => c.failure === undefined).map((c) => c.path))
        return findWorkspaces(roots).filter((w) => !running.has(w.path))
      }),
      fromArchive: (target, archive) =>
        Effect.gen(function* () {
          const problems = targetProblems(target)
          const files = yield* Effect.either(readArchive(archive.fileName, archive.bytes, caps))
          if (Either.isLeft(files)) problems.push(...files.left.map((p) => ({ path: "archive", message: `${p.path}: ${p.message}` })))
          if (problems.length > 0 || Either.isLeft(files)) return yield* Effect.fail(new WorkspaceInvalid({ problems }))
          const folder = yield* claim(target)
          // The files were checked above and the folder is ours: a write error is a broken installation (disk full, permissions).
          return yield* fill(folder, Effect.orDie(Effect.try({ try: () => writeFiles(folder.src, files.right), catch: (e) => e })))
        }),
      fromGit: (target, url) =>
        Effect.gen(function* () {
          const checked = yield* checkClone(target, url)
          const folder = yield* claim(target)
          return yield* fill(folder, clone(checked, folder))
        }),
      startClone: (target, url) =>
        Effect.gen(function* () {
          const checked = yield* checkClone(target, url)
          const folder = yield* claim(target)
          const startedAt = new Date(yield* Clock.currentTimeMillis)
          const entry = {
            name: folder.name,
            jobRoot: folder.jobRoot,
            path: folder.path,
            url: checked.url.href,
            startedAt,
            failure: undefined
          }
          yield* Ref.update(clones, (all) => [entry, ...all].slice(0, MAX_CLONES))
          const settle = (failure: string | undefined) =>
            Ref.update(clones, (all) =>
              failure === undefined ? all.filter((c) => c !== entry) : all.map((c) => (c === entry ? { ...c, failure } : c))
            )
          yield* fill(folder, clone(checked, folder)).pipe(
            Effect.matchEffect({ onFailure: (e) => settle(e.problem), onSuccess: () => settle(undefined) }),
            Effect.forkIn(scope)
          )
          return folder
        }),
      clones: Effect.map(Ref.get(clones), (all) => all.map(({ path: _path, ...c }) => c))
    }
    return service
  })

export const layer = (options: WorkspacesOptions = {}): Layer.Layer<Workspaces, never, JobRoots> =>
  Layer.scoped(
    Workspaces,
    Effect.map(makeWorkspaces(options), (service) => traced("Workspaces", service))
  )

export const WorkspacesLive: Layer.Layer<Workspaces, never, JobRoots> = layer()
