/**
 * One job child: `kintsugi run-job` with the envelope on stdin (the only place secrets travel), its
 * NDJSON events handed over in order, its end reported as what the worker must record. A child that
 * dies without a terminal event (crash, SIGKILL, OOM) is a failure, never a job left running.
 */
import { Chunk, Config, Duration, Effect, Exit, Fiber, Option, Queue, Schedule, Schema, Stream } from "effect"
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
import { storableJson } from "../../db/storable.ts"

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

/**
 * How a run hands over the child's events, in seq order: one at a time (`onEvent`) or in batches
 * (`onEvents`). Either way the child's output is read on while the hook runs, into a buffer of
 * EVENT_BUFFER events: the child waits only when the buffer is full. A failure of the hook ends the
 * run (the child is killed); every event read before the child's end is handed over before the run returns.
 */
type EventHook<E, R> =
  | { readonly onEvent: (event: JobEvent) => Effect.Effect<void, E, R> }
  | {
      /** At most MAX_BATCH events or MAX_BATCH_BYTES of the child's lines (one oversized event alone), never empty. */
      readonly onEvents: (events: ReadonlyArray<JobEvent>) => Effect.Effect<void, E, R>
    }

export type JobProcessHooks<E, R> = EventHook<E, R> & {
  /** Polled about once a second: true = end the job as aborted (SIGTERM, then SIGKILL after the grace). Failures count as false. */
  readonly abortRequested: Effect.Effect<boolean, unknown, R>
  /** Diagnostics from the child's stderr (the child redacts its own secrets). */
  readonly log: (line: string) => Effect.Effect<void, never, R>
}

/** The high-water mark: events read from the child and not yet handed over; beyond it the child's output waits. */
export const EVENT_BUFFER = 4096
/** A batch's bounds: events, and bytes of the child's lines. */
const MAX_BATCH = 500
const MAX_BATCH_BYTES = 1 << 20
/** How long a batch smaller than MAX_BATCH waits for more events before it is handed over. */
const LINGER = Duration.millis(2)

/** What the reader puts in the buffer after the child's last line. */
const END = "end" as const

interface Buffered {
  readonly event: JobEvent
  readonly bytes: number
}

/** Splits what was taken from the buffer into batches within MAX_BATCH_BYTES (an oversized event alone). */
const batches = (items: ReadonlyArray<Buffered>): ReadonlyArray<ReadonlyArray<JobEvent>> => {
  const out: Array<Array<JobEvent>> = []
  let current: Array<JobEvent> = []
  let bytes = 0
  for (const item of items) {
    if (current.length > 0 && bytes + item.bytes > MAX_BATCH_BYTES) {
      out.push(current)
      current = []
      bytes = 0
    }
    current.push(item.event)
    bytes += item.bytes
  }
  if (current.length > 0) out.push(current)
  return out
}

/**
 * Hands the buffer's events to the hook until `end` is taken: each batch is what arrived while the last
 * one was handled (a small one lingers LINGER for more).
 */
const handOver = <E, R>(buffer: Queue.Dequeue<Buffered | typeof END>, hook: EventHook<E, R>): Effect.Effect<void, E, R> => {
  const each =
    "onEvents" in hook ? hook.onEvents : (events: ReadonlyArray<JobEvent>) => Effect.forEach(events, hook.onEvent, { discard: true })
  return Effect.gen(function* () {
    while (true) {
      let taken = Chunk.toReadonlyArray(yield* Queue.takeBetween(buffer, 1, MAX_BATCH))
      if (taken.length < MAX_BATCH && !taken.includes(END)) {
        yield* Effect.sleep(LINGER)
        taken = [...taken, ...Chunk.toReadonlyArray(yield* Queue.takeUpTo(buffer, MAX_BATCH - taken.length))]
      }
      const end = taken.indexOf(END)
      const items = (end < 0 ? taken : taken.slice(0, end)).filter((i): i is Buffered => i !== END)
      for (const batch of batches(items)) yield* each(batch)
      if (end >= 0) return
    }
  })
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
 * only the event hook can fail the run. Interrupted, the child gets SIGTERM, then SIGKILL after the grace;
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
      const buffer = yield* Queue.bounded<Buffered | typeof END>(EVENT_BUFFER)
      /** A chunk of the child's lines: its events into the buffer (waiting there when it is full), the rest noted or logged. */
      const read = (chunk: Chunk.Chunk<string>): Effect.Effect<void, never, R> => {
        started()
        const events: Array<Buffered> = []
        let ignored = 0
        for (const line of chunk) {
          const parsed = safeJson(line)
          const event = decodeEvent(parsed)
          if (event._tag === "Right") {
            // Model text may hold what no row can (U+0000, unpaired surrogates): replaced before it is stored.
            const e = storableJson(event.right)
            if (e.type === "job.completed") terminal = { status: "completed", summary: e.summary }
            if (e.type === "job.failed") terminal = { status: "failed", reason: e.reason, message: e.message }
            events.push({ event: e, bytes: line.length })
            continue
          }
          const refusal = decodeRefusal(parsed)
          if (refusal._tag === "Right") refused = storableJson(refusal.right.problems.map((p) => `${p.path}: ${p.message}`).join("; "))
          else ignored++
        }
        return Effect.gen(function* () {
          for (let i = 0; i < ignored; i++) yield* hooks.log("job child printed a line that is not an event (ignored)")
          yield* Queue.offerAll(buffer, events)
        })
      }
      const reader = Effect.zipRight(Stream.runForEachChunk(lines(child.stdout), read), Queue.offer(buffer, END))
      yield* Effect.raceFirst(Effect.all([reader, handOver(buffer, hooks)], { concurrency: 2, discard: true }), abortWhenRequested)

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
