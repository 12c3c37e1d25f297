/**
 * The embedded PostgreSQL's supervisor: PGlite in a Bun Worker (embeddedWorker.ts) on a private unix
 * socket, replaced by a fresh worker on the same data dir when a statement does not complete in time,
 * PGlite reports itself broken or the worker exits, so the database never stays wedged. Restarts in a
 * row back off (1 s, 2 s … 30 s apart) until a worker has answered for a minute; time is the Clock's.
 */
import { Clock, Duration, Effect, Runtime, type Scope } from "effect"
import fs from "node:fs"
import net from "node:net"
import os from "node:os"
import path from "node:path"
import type { Duplex } from "node:stream"
import type { StartRequest, WorkerReply, WorkerRequest } from "./embeddedWorker.ts"
import { DbError, innermostMessage } from "./DbError.ts"
import { type DbWrites, makeWriteCounter, watchConnection, watchSocket } from "./DbWrites.ts"
import { newWorker } from "./embeddedWorkerAhead.ts"
import { isDiskFull } from "./StoreError.ts"

/** How long a new connection waits for the embedded database to restart. */
const RESTART_WAIT_MS = 30_000

export interface EmbeddedOptions {
  /** Absolute path of a persistent data dir; absent = in memory (not restartable: its data lives in the worker). */
  readonly dataDir?: string | undefined
  readonly snapshot?: Uint8Array | Blob | undefined
  readonly maxConnections: number
  /**
   * PGlite ignores `statement_timeout` (no timers while a statement runs): a worker that has not
   * answered a ping for this long is stuck in a statement and is replaced.
   */
  readonly statementTimeout: Duration.Duration
  /** Makes each database worker; default `newWorker` (embeddedWorkerAhead.ts). Tests pass one that keeps the workers to stop them. */
  readonly newWorker?: () => Worker
}

export interface Embedded {
  /** Directory of the unix socket (libpq convention: host = dir, file `.s.PGSQL.5432`). */
  readonly socketDir: string
  /** A `dumpDataDir` tarball of the running database. */
  readonly dump: Effect.Effect<Uint8Array, DbError>
  /** How many times the worker was replaced since the start. */
  readonly restarts: () => number
  /** Every statement of this process passes `socket()`'s connections: writes are known here (DbWrites.ts). */
  readonly writes: DbWrites["Type"]
  /**
   * A socket for the client pool (node-postgres' `stream` option): it connects once a worker listens,
   * so connections opened while a worker is replaced wait instead of failing.
   */
  readonly socket: () => Duplex
}

const WORKER_STOP_TIMEOUT = Duration.seconds(30)
const PING_INTERVAL = Duration.millis(500)
const RESTART_BACKOFF_FIRST_MS = 1000
const RESTART_BACKOFF_MAX_MS = 30_000
/** A worker that has answered this long ends a run of restarts: the next restart is at once again. */
const HEALTHY_AFTER_MS = 60_000

/**
 * How long after the `streak`-th restart in a row (failed, or a worker that stopped before it was
 * healthy) the next may start: 1 s, 2 s, 4 s … at most 30 s.
 */
const restartDelayMs = (streak: number): number => Math.min(RESTART_BACKOFF_FIRST_MS * 2 ** Math.max(0, streak - 1), RESTART_BACKOFF_MAX_MS)

/** `why` with "disk full" in front when the failure says so, so an operator finds it in the log. */
const named = (why: string): string => (isDiskFull(why) ? `disk full: ${why}` : why)

/** Below this much room on the data dir's file system (or with no inode left) a failed start is put down to a full disk. */
const DISK_FULL_BYTES = 4 * 1024 * 1024

/**
 * What is left on `dir`'s file system when it is full ("12 KB free", "no inode free"), else undefined:
 * PGlite that cannot write its files at start says only that it "failed to initialize properly".
 */
const fullDisk = (dir: string): string | undefined => {
  try {
    const s = fs.statfsSync(dir)
    const free = s.bavail * s.bsize
    if (free < DISK_FULL_BYTES) return `${Math.floor(free / 1024)} KB free`
    return s.files > 0 && s.ffree === 0 ? "no inode free" : undefined
  } catch {
    return undefined
  }
}

// The first worker compiles pglite.wasm (slow, so off this thread) and hands the modules back; later
// workers of the process (tests, restarts) reuse them.
let compiledWasm: { readonly pglite: WebAssembly.Module; readonly initdb: WebAssembly.Module | undefined } | undefined

/** Sends one request and waits for the worker's reply of one of `expect`'s types (pongs and alarms pass by). */
const call = (
  worker: Worker,
  request: WorkerRequest,
  expect: ReadonlyArray<WorkerReply["type"]>,
  transfer: Array<Bun.Transferable> = []
): Promise<WorkerReply> =>
  new Promise((resolve, reject) => {
    const done = () => {
      worker.removeEventListener("message", onMessage)
      worker.removeEventListener("error", onError)
      worker.removeEventListener("close", onClose)
    }
    const onMessage = (e: MessageEvent<WorkerReply>) => {
      if (expect.includes(e.data.type)) done(), resolve(e.data)
    }
    const onError = (e: ErrorEvent) => (done(), reject(new Error(e.message)))
    const onClose = () => (done(), reject(new Error("the database worker exited")))
    worker.addEventListener("message", onMessage)
    worker.addEventListener("error", onError)
    worker.addEventListener("close", onClose)
    worker.postMessage(request, transfer)
  })

/** A started worker (listening), or an error; a worker that did not start is terminated. */
const spawn = async (
  make: () => Worker,
  request: StartRequest,
  transfer: Array<Bun.Transferable>,
  signal: AbortSignal
): Promise<Worker> => {
  const worker = make()
  const stop = () => worker.terminate()
  signal.addEventListener("abort", stop, { once: true })
  try {
    const reply = await call(worker, request, ["listening", "failed"], transfer)
    if (reply.type !== "listening") throw new Error(reply.type === "failed" ? reply.message : `unexpected reply ${reply.type}`)
    compiledWasm = { pglite: reply.pgliteWasmModule, initdb: reply.initdbWasmModule ?? compiledWasm?.initdb }
    return worker
  } catch (e) {
    worker.terminate()
    throw e
  } finally {
    signal.removeEventListener("abort", stop)
  }
}

/**
 * Starts PGlite in a worker for the current scope and supervises it; when the scope closes, the worker
 * is stopped with PGlite closed cleanly (a checkpoint), unless it was broken (then only terminated).
 */
export const startEmbedded = (
  options: EmbeddedOptions,
  lock: (dataDir: string) => Effect.Effect<void, DbError, Scope.Scope>
): Effect.Effect<Embedded, DbError, Scope.Scope> =>
  Effect.gen(function* () {
    const dataDir = options.dataDir === undefined ? undefined : path.resolve(options.dataDir)
    if (dataDir !== undefined) yield* lock(dataDir)
    const socketDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-db-"))), // mode 0700: only us
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const where = dataDir ?? "in memory"
    const socketPath = path.join(socketDir, ".s.PGSQL.5432")
    const request = (snapshot: StartRequest["snapshot"]): StartRequest => ({
      type: "start",
      dataDir,
      snapshot,
      socketPath,
      maxConnections: options.maxConnections,
      pgliteWasmModule: compiledWasm?.pglite,
      initdbWasmModule: compiledWasm?.initdb
    })
    const fresh = dataDir === undefined || !fs.existsSync(path.join(dataDir, "PG_VERSION"))
    // A Blob is posted as is (a `Bun.file()` costs nothing: the worker reads the file); bytes are
    // copied once and the copy transferred (a structured clone of the whole snapshot would stall this thread longer).
    const given = fresh ? options.snapshot : undefined
    const snapshot = given instanceof Uint8Array ? given.slice() : given

    const runtime = yield* Effect.runtime<never>()
    const log = (message: string) => Runtime.runFork(runtime)(Effect.logWarning(message))
    /** The runtime's clock (TestClock in tests), read from the worker's callbacks as from the watchdog. */
    const now = () => Runtime.runSync(runtime)(Clock.currentTimeMillis)
    const make = options.newWorker ?? newWorker
    const timeoutMs = Duration.toMillis(options.statementTimeout)
    // A restart reopens the data dir (crash recovery included): seconds on a loaded machine, whatever the
    // statement timeout. A connection waits this long for it rather than failing while it is under way.
    const restartWaitMs = Math.max(timeoutMs, RESTART_WAIT_MS)
    const counter = makeWriteCounter()
    const state = {
      current: undefined as Worker | undefined,
      broken: false,
      closed: false,
      restarting: false,
      restarts: 0,
      /** Restarts since the last healthy period, when the next may start (the backoff), why it is needed. */
      streak: 0,
      retryAt: 0,
      why: "",
      /** When the current worker started listening. */
      upSince: 0,
      pingSentAt: undefined as number | undefined,
      waiting: [] as Array<() => void>
    }
    const wake = () => {
      for (const w of state.waiting.splice(0)) w()
    }
    /** Resolves once a worker listens; fails when none will (closed, an in-memory database lost, or too long). */
    const ready = (): Promise<void> =>
      state.current !== undefined
        ? Promise.resolve()
        : state.broken || state.closed
          ? Promise.reject(new Error("the embedded database is not running"))
          : new Promise((resolve, reject) => {
              const timer = setTimeout(() => reject(new Error("the embedded database did not restart in time")), restartWaitMs)
              state.waiting.push(
                () => (
                  clearTimeout(timer), state.current === undefined ? reject(new Error("the embedded database is not running")) : resolve()
                )
              )
            })
    const watch = (worker: Worker) => {
      worker.addEventListener("message", (e: MessageEvent<WorkerReply>) => {
        if (worker !== state.current) return
        if (e.data.type === "pong") state.pingSentAt = undefined
        if (e.data.type === "poisoned") replace(`PGlite failed inside a statement (${e.data.message})`)
      })
      // A worker replaced on purpose is no longer current when its close arrives.
      worker.addEventListener("close", () => {
        if (worker === state.current) replace("the database worker exited")
      })
    }
    /** Starts a worker on the data dir; either way the next restart waits restartDelayMs after this one. */
    const restart = async () => {
      state.restarting = true
      state.streak++
      log(`restarting the embedded database: ${named(state.why)}`)
      try {
        const worker = await spawn(make, request(undefined), [], new AbortController().signal)
        if (state.closed) return worker.terminate()
        state.current = worker
        state.upSince = now()
        state.retryAt = state.upSince + restartDelayMs(state.streak)
        state.restarts++
        watch(worker)
        wake()
      } catch (e) {
        const waitMs = restartDelayMs(state.streak)
        state.retryAt = now() + waitMs
        state.why = "the last restart failed"
        const left = dataDir === undefined ? undefined : fullDisk(dataDir)
        const message = `cannot restart the embedded database: ${innermostMessage(e)}${left === undefined ? "" : ` (its file system has ${left})`}; trying again in ${Math.round(waitMs / 1000)} s`
        log(isDiskFull(e) || left !== undefined ? `disk full: ${message}` : message)
      } finally {
        state.restarting = false
      }
    }
    /**
     * Stops the current worker and starts another: at once after a healthy period, else once the backoff
     * allows (the watchdog starts it then); connections opened meanwhile wait for it (`ready`).
     */
    const replace = (why: string) => {
      if (state.restarting || state.closed) return
      counter.bump()
      state.current?.terminate()
      state.current = undefined
      state.pingSentAt = undefined
      if (dataDir === undefined) {
        state.broken = true
        wake()
        return log(`the embedded in-memory database stopped (${why}); it cannot be restarted`)
      }
      const at = now()
      if (at - state.upSince >= HEALTHY_AFTER_MS) {
        state.streak = 0
        state.retryAt = 0
      }
      state.why = why
      if (at >= state.retryAt) return void restart()
      log(`the embedded database stopped: ${named(why)}; restarting it in ${Math.ceil((state.retryAt - at) / 1000)} s`)
    }

    const first = yield* Effect.tryPromise({
      try: (signal) => spawn(make, request(snapshot), snapshot instanceof Uint8Array ? [snapshot.buffer] : [], signal),
      catch: (e) => new DbError({ message: `cannot start the embedded database (${where}): ${innermostMessage(e)}`, cause: e })
    })
    state.current = first
    state.upSince = now()
    watch(first)
    yield* Effect.addFinalizer(() => {
      state.closed = true
      wake()
      const worker = state.current
      if (worker === undefined) return Effect.void
      // Clean shutdown: the worker closes PGlite (a checkpoint) before it is terminated.
      return Effect.ignore(
        Effect.timeout(
          Effect.tryPromise(() => call(worker, { type: "stop" }, ["stopped", "failed"])),
          WORKER_STOP_TIMEOUT
        )
      ).pipe(Effect.ensuring(Effect.sync(() => worker.terminate())))
    })

    // The watchdog: a worker answers a ping whenever no statement runs; one that stays silent longer
    // than the statement timeout is stuck (a runaway statement, or a PGlite spinning in a broken state).
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.zipRight(
          Effect.sleep(PING_INTERVAL),
          Effect.flatMap(Clock.currentTimeMillis, (at) =>
            Effect.sync(() => {
              if (state.closed || state.restarting) return
              const worker = state.current
              if (worker === undefined) {
                if (!state.broken && at >= state.retryAt) void restart()
                return
              }
              if (state.pingSentAt === undefined) {
                state.pingSentAt = at
                worker.postMessage({ type: "ping" } satisfies WorkerRequest)
              } else if (at - state.pingSentAt > timeoutMs) {
                replace(`a statement ran longer than ${Duration.format(options.statementTimeout)}`)
              }
            })
          )
        )
      )
    )

    const dump = Effect.tryPromise({
      try: async () => {
        const worker = state.current
        if (worker === undefined) throw new Error("the embedded database is restarting")
        const reply = await call(worker, { type: "dump" }, ["dumped", "failed"])
        if (reply.type === "dumped") return reply.tarball
        throw new Error(reply.type === "failed" ? reply.message : `unexpected reply ${reply.type}`)
      },
      catch: (e) => new DbError({ message: `cannot dump the embedded database: ${innermostMessage(e)}`, cause: e })
    })
    const socket = (): Duplex => {
      // Listening before node-postgres does: a write is counted before its client hears it completed.
      const s = watchSocket(new net.Socket(), watchConnection(counter.bump))
      const connect = s.connect.bind(s) as (path: string) => net.Socket
      // node-postgres calls connect(path) on a unix socket; hold it until a worker listens there.
      s.connect = ((target: string) => {
        ready().then(
          () => connect(target),
          (e: unknown) => s.destroy(e instanceof Error ? e : new Error(String(e)))
        )
        return s
      }) as typeof s.connect
      return s
    }
    return { socketDir, dump, restarts: () => state.restarts, writes: counter.writes, socket }
  })
