/**
 * One job child: `kintsugi run-job` with the envelope on stdin (the only place secrets travel), its
 * NDJSON events handed over in order, its end reported as what the worker must record. A child that
 * dies without a terminal event (crash, SIGKILL, OOM) is a failure, never a job left running.
 */
import { Config, Effect, Exit, Fiber, Option, Schedule, Schema, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { JobEnvelope } from "../../contract/AgentRuntime.ts"
import { JobEvent, JobRefusedLine } from "../../contract/JobEvent.ts"
import { jobSessionsFile, jobTmpPrefix, RESOURCE_VARIABLES } from "../../tools/jobResources.ts"
import { readStat, RUN_PREFIX_VAR, sweepRunPrefix, sweepSessions } from "../../tools/processTree.ts"
import { JOB_CHILD_JIT_ENV, runJobArgs } from "../../jobChild/args.ts"
import type { Settlement } from "../JobStore.ts"

export const CLI_PATH = join(import.meta.dir, "..", "..", "cli.ts")
/** After SIGTERM, how long a child gets to emit its `aborted` event before SIGKILL. */
export const ABORT_GRACE_MS = 10_000

const decodeEvent = Schema.decodeUnknownEither(JobEvent)
const decodeRefusal = Schema.decodeUnknownEither(JobRefusedLine)

/**
 * The child's environment: what it needs to run and reach providers, nothing of the server's (no
 * DATABASE_URL, no KINTSUGI_SECRET_KEY): secrets come on stdin only. KINTSUGI_SANDBOX tells it how to
 * confine shell and git.
 */
// The job resource limits (KINTSUGI_JOB_MEMORY_MB…) are the kernel's configuration, read in the child.
const CHILD_VARIABLES = [
  "PATH",
  "HOME",
  "LANG",
  "TZ",
  "TMPDIR",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "KINTSUGI_SANDBOX",
  "KINTSUGI_ALLOW_UNCONFINED_ROOT",
  "KINTSUGI_TOOL_CONCURRENCY",
  "BUN_RUNTIME_TRANSPILER_CACHE_PATH",
  ...Object.values(RESOURCE_VARIABLES)
]

export const childEnvironment: Effect.Effect<Record<string, string>> = Effect.map(
  Effect.forEach(CHILD_VARIABLES, (k) =>
    Effect.map(
      Effect.orElseSucceed(Config.option(Config.string(k)), () => Option.none<string>()),
      (v) => [k, v] as const
    )
  ),
  (pairs) => {
    const env: Record<string, string> = {}
    for (const [k, v] of pairs) if (Option.isSome(v)) env[k] = v.value
    return env
  }
)

export interface JobProcessHooks<E, R> {
  /** Each event, in seq order; the next one waits until this settles. Its failure ends the run (the child is killed). */
  readonly onEvent: (event: JobEvent) => Effect.Effect<void, E, R>
  /** Polled about once a second: true = end the job as aborted (SIGTERM, then SIGKILL after the grace). Failures count as false. */
  readonly abortRequested: Effect.Effect<boolean, unknown, R>
  /** Diagnostics from the child's stderr (the child redacts its own secrets). */
  readonly log: (line: string) => Effect.Effect<void, never, R>
}

/** Non-empty text lines of a child's pipe; a read error is a defect (the pipe is ours). */
const lines = (pipe: ReadableStream<Uint8Array>): Stream.Stream<string> =>
  Stream.fromReadableStream(
    () => pipe,
    (e) => e
  ).pipe(
    Stream.orDie,
    Stream.decodeText(),
    Stream.splitLines,
    Stream.filter((line) => line !== "")
  )

export type Child = Bun.Subprocess<"pipe", "pipe", "pipe">

/** The session ids a job child listed for its Landlock calls (jobSessionsFile), the file removed. */
const takeJobSessions = (runPrefix: string): ReadonlySet<number> => {
  if (runPrefix === "") return new Set()
  const file = join(tmpdir(), jobSessionsFile(runPrefix))
  try {
    const sids = readFileSync(file, "latin1")
      .split("\n")
      .map(Number)
      .filter((n) => Number.isSafeInteger(n) && n > 1)
    rmSync(file, { force: true })
    return new Set(sids)
  } catch {
    return new Set()
  }
}

/** Removes the temporary directories a job child made for the job of `runPrefix` (the kernel's jobTmpDir), whatever is in them. */
const removeJobTmpDirs = (runPrefix: string): void => {
  if (runPrefix === "") return
  const name = jobTmpPrefix(runPrefix)
  let entries: Array<string>
  try {
    entries = readdirSync(tmpdir())
  } catch {
    return
  }
  for (const e of entries) if (e.startsWith(`${name}-`)) rmSync(join(tmpdir(), e), { recursive: true, force: true })
}

export const alive = (child: Child) => child.exitCode === null && child.signalCode === null

/** A job child that has not had its envelope yet. */
export interface SpawnedChild {
  readonly child: Child
  /** The run-token prefix of every process the job starts (see sweepRunPrefix). */
  readonly runPrefix: string
  /** The child's start time (clock ticks), so the sweep only looks at processes started since. */
  readonly childStart: string | undefined
  /** Called once, when the child printed its first line or ended (a pool then starts the next one). */
  readonly onStarted?: () => void
  /** Called once the child is gone and its processes swept. */
  readonly onEnded?: () => void
}

/**
 * Starts `bun <entry> run-job` with `env` (childEnvironment's scrubbed variables, plus the caller's, over
 * the job child's JIT settings: JOB_CHILD_JIT_ENV) and a fresh run-token prefix. It then waits for its
 * envelope on stdin: nothing secret is in it before that.
 * `ahead`: started before its job (`run-job --ahead`), it warms up while it waits (jobChild/warmUp.ts).
 */
export const spawnJobChild = (entry: string, env: Readonly<Record<string, string>>, ahead = false): SpawnedChild => {
  // Every process the job starts carries a run token with this prefix: after the child is gone,
  // whatever still carries it is swept (a SIGKILLed child cannot kill its own unconfined processes).
  const runPrefix = `${randomBytes(12).toString("hex")}-`
  const child: Child = Bun.spawn(["bun", entry, ...runJobArgs(ahead)], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...JOB_CHILD_JIT_ENV, ...env, [RUN_PREFIX_VAR]: runPrefix }
  })
  return { child, runPrefix, childStart: readStat(child.pid)?.startTime }
}

/**
 * Runs the child to its end and returns how the job ended: every end of the child is a settlement;
 * only `onEvent` can fail the run. Interrupted, the child gets SIGTERM, then SIGKILL after the grace;
 * on every exit whatever still carries the job's run token is swept.
 */
export const runJobProcess = <E, R>(
  envelope: JobEnvelope,
  hooks: JobProcessHooks<E, R>,
  /** A script to start (`bun <entry> run-job`), or where a fresh child comes from (JobChildren.take). */
  from: string | Effect.Effect<SpawnedChild> = CLI_PATH
): Effect.Effect<Settlement, E, R> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { child, onStarted } = yield* Effect.acquireRelease(
        typeof from === "string" ? Effect.map(childEnvironment, (env) => spawnJobChild(from, env)) : from,
        ({ child, childStart, runPrefix, onEnded }, exit) =>
          Effect.gen(function* () {
            if (alive(child) && Exit.isInterrupted(exit)) {
              // The worker is stopping: the child may still record its own end.
              child.kill("SIGTERM")
              yield* Effect.ignore(
                Effect.timeout(
                  Effect.promise(() => child.exited),
                  ABORT_GRACE_MS
                )
              )
            }
            if (alive(child)) child.kill("SIGKILL")
            yield* Effect.promise(() => child.exited)
            const sessions = yield* Effect.sync(() => takeJobSessions(runPrefix))
            const survivors = [
              ...(yield* Effect.promise(() => sweepRunPrefix(runPrefix, childStart))),
              ...(yield* Effect.promise(() => sweepSessions(sessions, childStart)))
            ]
            if (survivors.length > 0) yield* hooks.log(`${survivors.length} process(es) of the job survived SIGKILL`)
            // A child that died without closing its job's scope leaves the job's temporary directory behind.
            yield* Effect.sync(() => removeJobTmpDirs(runPrefix))
            onEnded?.()
          })
      )
      // A child that died at once cannot take its envelope: its exit says what happened.
      yield* Effect.ignore(
        Effect.tryPromise(async () => {
          child.stdin.write(JSON.stringify(envelope))
          await child.stdin.end()
        })
      )
      let first = true
      const started = () => {
        if (first) onStarted?.()
        first = false
      }
      let terminal: Settlement | undefined
      let refused: string | undefined
      let aborting = false

      const stderr = yield* Effect.forkScoped(Stream.runForEach(lines(child.stderr), hooks.log))
      // An abort asks the child to end: it still reports its `aborted` end on stdout, read below.
      const abortWhenRequested = hooks.abortRequested.pipe(
        Effect.catchAllCause(() => Effect.succeed(false)),
        Effect.repeat({ schedule: Schedule.spaced("1 second"), until: (yes) => yes }),
        Effect.zipRight(
          Effect.suspend(() => {
            aborting = true
            child.kill("SIGTERM")
            return Effect.forkScoped(
              Effect.delay(
                Effect.sync(() => alive(child) && child.kill("SIGKILL")),
                ABORT_GRACE_MS
              )
            )
          })
        ),
        Effect.zipRight(Effect.never)
      )
      const handle = (line: string): Effect.Effect<void, E, R> => {
        started()
        const parsed = safeJson(line)
        const event = decodeEvent(parsed)
        if (event._tag === "Right") {
          const e = event.right
          if (e.type === "job.completed") terminal = { status: "completed", summary: e.summary }
          if (e.type === "job.failed") terminal = { status: "failed", reason: e.reason, message: e.message }
          return hooks.onEvent(e)
        }
        const refusal = decodeRefusal(parsed)
        if (refusal._tag === "Right") {
          refused = refusal.right.problems.map((p) => `${p.path}: ${p.message}`).join("; ")
          return Effect.void
        }
        return hooks.log("job child printed a line that is not an event (ignored)")
      }
      yield* Effect.raceFirst(Stream.runForEach(lines(child.stdout), handle), abortWhenRequested)

      const code = yield* Effect.promise(() => child.exited)
      started()
      yield* Fiber.join(stderr)
      if (terminal !== undefined) return terminal
      if (refused !== undefined) return { status: "failed", reason: "error", message: `the job was refused: ${refused}` } as const
      const how = child.signalCode !== null ? `was killed by ${child.signalCode}` : `exited with code ${code}`
      return { status: "failed", reason: aborting ? "aborted" : "error", message: `the job process ${how} before the job ended` } as const
    })
  )

const safeJson = (line: string): unknown => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}
