/**
 * Where the worker's job children come from: the Bun bytecode bundle of the job child
 * (jobChildBundle.ts) once it is built — until then, and whenever the sources changed since, the
 * sources themselves — and one child started ahead, waiting for its envelope, so a queued job starts
 * at once. A child serves one job only: `take` hands it out and forgets it, then starts the next
 * while a worker loop of the process waits for a job (`whileIdle`), else when one falls idle.
 * A waiting child started from the sources is replaced by one of the bundle as soon as the bundle
 * is there (BUNDLE_POLL).
 * The waiting child holds nothing secret: the scrubbed environment of every job child, and no
 * envelope (secrets travel only there, on stdin).
 */
import { Config, Context, Duration, Effect, Layer, Schedule, type Scope } from "effect"
import { resolve } from "node:path"
import { makeSandbox, SANDBOX_PROBED_ENV, sandboxConfig } from "../../tools/Sandbox.ts"
import { landlockProbedValue } from "../../tools/sandboxProbe.ts"
import { alive, childEnvironment, CLI_PATH, spawnJobChild, type SpawnedChild } from "./JobProcess.ts"
import { findBundle, jobChildCacheDir, sourceFingerprint, sourceKey, startBundleBuild, transpilerCacheDir } from "./jobChildBundle.ts"

export interface JobChildrenShape {
  /** A child that never had an envelope: the one started ahead when it is still good, else a new one. */
  readonly take: Effect.Effect<SpawnedChild>
  /** The entry new children start from: the bundle once built, else src/cli.ts. */
  readonly entry: Effect.Effect<string>
  /** The pid of the child waiting for its envelope, if one is. */
  readonly waiting: Effect.Effect<number | undefined>
  /**
   * Runs `wait` (a worker loop waiting for a job) as an idle worker, starting the next child when none
   * waits. Once a worker waited here, a child is started ahead only while one waits: a process whose
   * every worker is busy starts each job's child when it takes it, with none warming up beside the jobs.
   */
  readonly whileIdle: <A, E, R>(wait: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export class JobChildren extends Context.Tag("worker/JobChildren")<JobChildren, JobChildrenShape>() {}

export interface JobChildrenOptions {
  /** Where bundles and the transpiler cache live (jobChildCacheDir). */
  readonly cacheDir: string
  /** Where a bundle made at install is looked for before `cacheDir` (INSTALL_CACHE unless told). */
  readonly installCache?: string | undefined
  /** Use (and build) the bytecode bundle; false = always the sources. */
  readonly bundle: boolean
  /** Start one child ahead: "always" (after each take, the next), "once" (one job expected), "never". */
  readonly prestart: "always" | "once" | "never"
  /**
   * When the next child starts: once the taken one printed its first event ("started"), or once its
   * job is over ("ended"). A child is dumpable for the first milliseconds of its start, so an
   * unconfined job running meanwhile could open its stdin from /proc and read the next envelope:
   * "ended" unless the process tools run in the sandbox (where a job sees no host process).
   */
  readonly refillWhen: "started" | "ended"
  /**
   * Start the first child (and check the bundle) this long after the pool is made rather than at once:
   * `kintsugi serve`'s start-up (the database opening on a 2-core machine) is not slowed by it. A job
   * taken before starts its own child, as when none waits.
   */
  readonly firstAfter?: Duration.DurationInput | undefined
  /**
   * The bubblewrap binary this process's probe found working: given to each child (SANDBOX_PROBED_ENV)
   * so a cold child starts its job without probing again (sandboxProbe.ts startProbeFromEnv).
   */
  readonly sandboxProbed?: string | undefined
}

interface Warm {
  readonly spawned: SpawnedChild
  /** The sources' fingerprint when it started: a child of older sources is never handed out. */
  readonly fingerprint: string
  /** What it runs: the bundle's entry, or CLI_PATH (the sources). */
  readonly entry: string
}

/** How often the pool looks whether the bundle is there while the waiting child runs from the sources. */
const BUNDLE_POLL = Duration.millis(250)

/** A pool of (at most) one waiting child; its scope's end kills the waiting child. */
export const makeJobChildren = (options: JobChildrenOptions): Effect.Effect<JobChildrenShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    let fingerprint = sourceFingerprint()
    let key = options.bundle ? sourceKey() : ""
    let warm: Warm | undefined
    let closed = false
    // Children started from the sources keep Bun's transpiler output across restarts and fresh HOMEs.
    const base = yield* childEnvironment
    const env: Record<string, string> = {
      ...base,
      ...(base["BUN_RUNTIME_TRANSPILER_CACHE_PATH"] === undefined
        ? { BUN_RUNTIME_TRANSPILER_CACHE_PATH: transpilerCacheDir(options.cacheDir) }
        : {}),
      ...(options.sandboxProbed === undefined ? {} : { [SANDBOX_PROBED_ENV]: options.sandboxProbed })
    }

    /** The entry for a child started now (`now`: the sources' fingerprint); never a bundle of other sources than those on disk. */
    const currentEntry = (now: string = sourceFingerprint()): string => {
      if (now !== fingerprint) {
        fingerprint = now
        if (options.bundle) key = sourceKey()
      }
      if (!options.bundle) return CLI_PATH
      const built = findBundle(options.cacheDir, key, options.installCache)
      if (built !== undefined) return built
      startBundleBuild(options.cacheDir, key)
      return CLI_PATH
    }

    const start = (ahead: boolean, entry: string, next?: () => void): SpawnedChild => {
      const spawned = spawnJobChild(entry, env, ahead)
      return next === undefined ? spawned : withNext(spawned, next)
    }
    const withNext = (spawned: SpawnedChild, next: () => void): SpawnedChild =>
      options.refillWhen === "started" ? { ...spawned, onStarted: next } : { ...spawned, onEnded: next }

    let prestarted = 0
    // The worker loops waiting in `whileIdle`, and whether any ever did (else every refill is wanted).
    let idleWorkers = 0
    let workersSeen = false
    // Whether the first child is due (firstAfter has passed).
    let due = false
    const refill = () => {
      if (closed || options.prestart === "never" || (options.prestart === "once" && prestarted > 0) || warm !== undefined) return
      prestarted++
      try {
        const entry = currentEntry()
        warm = { spawned: start(true, entry), fingerprint, entry }
      } catch {
        // Cannot start a child now (no bun on PATH, out of pids): the next take starts one itself.
      }
    }

    const take = Effect.sync((): SpawnedChild => {
      const held = warm
      warm = undefined
      const now = sourceFingerprint()
      // The next one starts once this one has taken its job, so the two do not load at the same time,
      // and only while a worker waits for a job (else when one falls idle: whileIdle).
      const next = () => {
        if (!workersSeen || idleWorkers > 0) refill()
      }
      if (held !== undefined && alive(held.spawned.child) && held.fingerprint === now) return withNext(held.spawned, next)
      if (held !== undefined) held.spawned.child.kill("SIGKILL")
      return start(false, currentEntry(now), next)
    })

    /**
     * A waiting child of the sources gives way to one of the bundle once it is built for the same
     * sources (it holds no envelope yet: killing it loses nothing); the build itself is never started here.
     */
    const preferBundle = Effect.sync(() => {
      const held = warm
      if (closed || held === undefined || held.entry !== CLI_PATH || held.fingerprint !== fingerprint) return
      if (findBundle(options.cacheDir, key, options.installCache) === undefined) return
      warm = undefined
      held.spawned.child.kill("SIGKILL")
      prestarted--
      refill()
    })

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        if (warm !== undefined && alive(warm.spawned.child)) warm.spawned.child.kill("SIGKILL")
        warm = undefined
      })
    )
    const warmUp = Effect.sync(() => {
      due = true
      if (options.bundle) currentEntry()
      refill()
    })
    const whileIdle = <A, E, R>(wait: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          workersSeen = true
          idleWorkers++
          if (due) refill()
        }),
        () => wait,
        () => Effect.sync(() => void idleWorkers--)
      )
    if (options.firstAfter === undefined) yield* warmUp
    else yield* Effect.forkScoped(Effect.delay(warmUp, options.firstAfter))
    if (options.bundle && options.prestart !== "never") yield* Effect.forkScoped(Effect.repeat(preferBundle, Schedule.spaced(BUNDLE_POLL)))
    return { take, entry: Effect.sync(() => currentEntry()), waiting: Effect.sync(() => warm?.spawned.child.pid), whileIdle }
  })

const SERVE_FIRST_CHILD_AFTER = Duration.seconds(1)

const live = (prestart: JobChildrenOptions["prestart"]): Layer.Layer<JobChildren> =>
  Layer.scoped(
    JobChildren,
    Effect.gen(function* () {
      const dataDir = yield* Config.string("KINTSUGI_DATA_DIR").pipe(
        Config.withDefault(".kintsugi"),
        Effect.orElseSucceed(() => ".kintsugi")
      )
      // The job children read KINTSUGI_SANDBOX from the same environment (childEnvironment).
      const sandbox = yield* makeSandbox(yield* sandboxConfig).status
      return yield* makeJobChildren({
        cacheDir: jobChildCacheDir(resolve(dataDir)),
        bundle: true,
        prestart,
        refillWhen: sandbox._tag === "Bwrap" ? "started" : "ended",
        sandboxProbed:
          sandbox._tag === "Bwrap" ? sandbox.bwrap : sandbox._tag === "Landlock" ? landlockProbedValue(sandbox.abi) : undefined,
        // `kintsugi run` wants its one child while the database starts; serve, its start-up first.
        firstAfter: prestart === "always" ? SERVE_FIRST_CHILD_AFTER : undefined
      })
    })
  )

/** `kintsugi serve`: the bundle under jobChildCacheDir(KINTSUGI_DATA_DIR), always one child started ahead (the first a second after start-up). */
export const JobChildrenLive: Layer.Layer<JobChildren> = live("always")

/** `kintsugi run` (one job): the bundle, its one child started while the database starts. */
export const JobChildrenOnce: Layer.Layer<JobChildren> = live("once")
