/**
 * The database layer: `DATABASE_URL` selects a PostgreSQL server; without it, the embedded PostgreSQL
 * (PGlite in a Bun Worker, see embeddedWorker.ts) at `${KINTSUGI_DATA_DIR}/data`. One PgClient either way.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Config, Duration, Effect, Layer, Option, Redacted, Schema, type Scope, String as Str } from "effect"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import type { WorkerReply, WorkerRequest } from "./embeddedWorker.ts"
import { describeMigrationFailure, runMigrations } from "./migrations.ts"

/** The database could not be configured, reached or started; `message` is one line, never a password. */
export class DbError extends Schema.TaggedError<DbError>()("DbError", { message: Schema.String }) {}

/**
 * What the Db layers provide: the same client under both tags. Values as node-postgres decodes them:
 * int8 (`count(*)`, bigserial) and numeric arrive as strings (cast `::int` or decode with
 * `Schema.NumberFromString`), timestamptz as `Date`, json/jsonb parsed and with their keys untouched.
 */
export type Db = PgClient.PgClient | SqlClient

export interface DbOptions {
  /** A `postgres://` URL: use that server (`dataDir` and `snapshot` are then ignored). */
  readonly url?: string | Redacted.Redacted<string> | undefined
  /** Embedded only: a persistent data dir; absent = a throwaway in-memory database. */
  readonly dataDir?: string | undefined
  /**
   * Embedded only: a `makeSnapshot` tarball to start from when `dataDir` holds no database yet. Prefer
   * `Bun.file(path)`: bytes are copied on this thread (~40 MB), a file is read by the worker.
   */
  readonly snapshot?: Uint8Array | Blob | undefined
  /** Apply the project's migrations before the layer is ready (default false). */
  readonly migrate?: boolean | undefined
}

/**
 * Pool sizes. A server gets 10 connections (node-postgres' default; a queued request waits at most
 * `CONNECT_TIMEOUT` for one). The embedded database gets ONE: PGlite is a single session that runs one
 * statement at a time anyway, and pglite-socket interleaves extended-protocol messages of concurrent
 * connections (electric-sql/pglite#1046: one client's Bind can hit another's unnamed statement, a cursor
 * loses its portal), so a single connection is the only safe setting. Requests queue in the pool instead;
 * a transaction holds the connection, as it would gate the other connections in PGlite.
 */
export const SERVER_POOL_SIZE = 10
export const EMBEDDED_POOL_SIZE = 1
const CONNECT_TIMEOUT = Duration.seconds(10)
const WORKER_STOP_TIMEOUT = Duration.seconds(30)

// camelCase in TypeScript, snake_case in SQL. JSON values are stored and returned verbatim (job
// metadata and tool inputs must not have their keys rewritten).
const clientOptions = {
  transformQueryNames: Str.camelToSnake,
  transformResultNames: Str.snakeToCamel,
  transformJson: false,
  applicationName: "kintsugi"
} as const

const innermost = (error: unknown): unknown => {
  let found = error
  let cause = error
  for (let depth = 0; depth < 6 && cause instanceof Error; depth++) {
    if (cause.message !== "") found = cause
    cause = cause instanceof AggregateError && cause.errors.length > 0 ? cause.errors[0] : cause.cause
  }
  return found
}
const innermostMessage = (error: unknown): string => {
  const e = innermost(error)
  return e instanceof Error && e.message !== "" ? e.message : "unknown error"
}
/** PostgreSQL answered (a SQLSTATE code) rather than the network failing. */
const isServerAnswer = (error: unknown): boolean => {
  const e = innermost(error)
  return typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)
}

// Defence in depth: node-postgres does not echo passwords. Very short ones are left alone, as masking
// them would mangle ordinary words of the message.
const scrub = (message: string, secret: string | undefined) =>
  secret === undefined || secret.length < 4 ? message : message.split(secret).join("***")

/** `host:port/database` of a postgres URL, or undefined when it is not one. Never includes the password. */
const describeServer = (url: string): string | undefined => {
  try {
    const u = new URL(url)
    if (u.protocol !== "postgres:" && u.protocol !== "postgresql:") return undefined
    const host = u.hostname !== "" ? u.hostname : (u.searchParams.get("host") ?? "localhost")
    return `${host}:${u.port !== "" ? u.port : "5432"}${u.pathname.length > 1 ? u.pathname : ""}`
  } catch {
    return undefined
  }
}

interface Embedded {
  /** Directory of the unix socket (libpq convention: host = dir, file `.s.PGSQL.5432`). */
  readonly socketDir: string
  /** A `dumpDataDir` tarball of the running database. */
  readonly dump: Effect.Effect<Uint8Array, DbError>
}

// The first worker compiles pglite.wasm (~0.3-1 s, off this thread) and hands the modules back; later
// workers of the process (tests, restarts) reuse them.
let compiledWasm: { readonly pglite: WebAssembly.Module; readonly initdb: WebAssembly.Module } | undefined

/** Sends one request and waits for the worker's next reply (requests are never concurrent). */
const call = (worker: Worker, request: WorkerRequest, transfer: Array<Bun.Transferable> = []): Promise<WorkerReply> =>
  new Promise((resolve, reject) => {
    const done = () => {
      worker.removeEventListener("message", onMessage)
      worker.removeEventListener("error", onError)
      worker.removeEventListener("close", onClose)
    }
    const onMessage = (e: MessageEvent<WorkerReply>) => (done(), resolve(e.data))
    const onError = (e: ErrorEvent) => (done(), reject(new Error(e.message)))
    const onClose = () => (done(), reject(new Error("the database worker exited")))
    worker.addEventListener("message", onMessage)
    worker.addEventListener("error", onError)
    worker.addEventListener("close", onClose)
    worker.postMessage(request, transfer)
  })

const isErrno = (e: unknown, code: string) => typeof e === "object" && e !== null && "code" in e && e.code === code
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return isErrno(e, "EPERM")
  }
}

// PGlite takes no lock of its own, and two processes on one data dir corrupt it: `<dataDir>.lock`
// holds the owner's pid. A lock whose process is gone (or is us, after a restart as PID 1) is stale.
const openDataDirs = new Set<string>()
const lockDataDir = (dataDir: string): Effect.Effect<void, DbError, Scope.Scope> => {
  const file = `${dataDir}.lock`
  return Effect.acquireRelease(
    Effect.try({
      try: () => {
        if (openDataDirs.has(dataDir)) throw new Error("it is already open in this process")
        fs.mkdirSync(path.dirname(dataDir), { recursive: true })
        try {
          fs.writeFileSync(file, String(process.pid), { flag: "wx" })
        } catch (e) {
          if (!isErrno(e, "EEXIST")) throw e
          const holder = Number(fs.readFileSync(file, "utf8").trim())
          if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
            throw new Error(`it is in use by process ${holder} (lock file ${file})`)
          }
          fs.writeFileSync(file, String(process.pid))
        }
        openDataDirs.add(dataDir)
      },
      catch: (e) => new DbError({ message: `cannot open the embedded database at ${dataDir}: ${innermostMessage(e)}` })
    }),
    () =>
      Effect.sync(() => {
        openDataDirs.delete(dataDir)
        fs.rmSync(file, { force: true })
      })
  )
}

// The worker is owned by the scope from its creation: a failed or interrupted start still stops it.
const startWorker = (
  request: WorkerRequest,
  transfer: Array<Bun.Transferable>,
  where: string
): Effect.Effect<Worker, DbError, Scope.Scope> =>
  Effect.gen(function*() {
    let exited = false
    const worker = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const w = new Worker(new URL("./embeddedWorker.ts", import.meta.url).href)
        w.addEventListener("close", () => void (exited = true))
        return w
      }),
      // Clean shutdown: the worker closes PGlite (a checkpoint) before it is terminated.
      (w) =>
        (exited ? Effect.void : Effect.ignore(Effect.timeout(Effect.tryPromise(() => call(w, { type: "stop" })), WORKER_STOP_TIMEOUT)))
          .pipe(Effect.ensuring(Effect.sync(() => w.terminate())))
    )
    const reply = yield* Effect.tryPromise({
      try: () => call(worker, request, transfer),
      catch: (e) => new DbError({ message: `cannot start the embedded database (${where}): ${innermostMessage(e)}` })
    })
    if (reply.type !== "listening") {
      const reason = reply.type === "failed" ? reply.message : `unexpected reply ${reply.type}`
      return yield* new DbError({ message: `cannot start the embedded database (${where}): ${reason}` })
    }
    compiledWasm ??= { pglite: reply.pgliteWasmModule, initdb: reply.initdbWasmModule }
    return worker
  })

/** Starts PGlite in a worker for the current scope; stops it (PGlite closed) when the scope closes. */
const startEmbedded = (options: DbOptions): Effect.Effect<Embedded, DbError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataDir = options.dataDir === undefined ? undefined : path.resolve(options.dataDir)
    if (dataDir !== undefined) yield* lockDataDir(dataDir)
    const socketDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-db-"))), // mode 0700: only us
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const fresh = dataDir === undefined || !fs.existsSync(path.join(dataDir, "PG_VERSION"))
    // A Blob is posted as is (a `Bun.file()` costs nothing: the worker reads the file); bytes are
    // copied once and the copy transferred (a structured clone of 40 MB would stall this thread longer).
    const given = fresh ? options.snapshot : undefined
    const snapshot = given instanceof Uint8Array ? given.slice() : given
    const worker = yield* startWorker({
      type: "start",
      dataDir,
      snapshot,
      socketPath: path.join(socketDir, ".s.PGSQL.5432"),
      // One spare slot: a reconnect is not refused while the server still counts the dropped socket.
      maxConnections: EMBEDDED_POOL_SIZE + 1,
      pgliteWasmModule: compiledWasm?.pglite,
      initdbWasmModule: compiledWasm?.initdb
    }, snapshot instanceof Uint8Array ? [snapshot.buffer] : [], dataDir ?? "in memory")
    const dump = Effect.tryPromise({
      try: async () => {
        const reply = await call(worker, { type: "dump" })
        if (reply.type === "dumped") return reply.tarball
        throw new Error(reply.type === "failed" ? reply.message : `unexpected reply ${reply.type}`)
      },
      catch: (e) => new DbError({ message: `cannot dump the embedded database: ${innermostMessage(e)}` })
    })
    return { socketDir, dump }
  })

const connect = (config: PgClient.PgClientConfig, describeFailure: (e: SqlError) => string) =>
  Layer.build(PgClient.layer({ ...clientOptions, ...config })).pipe(
    Effect.mapError((e) => new DbError({ message: describeFailure(e) }))
  )

const connectEmbedded = (db: Embedded) =>
  connect(
    {
      host: db.socketDir,
      port: 5432,
      username: "postgres",
      database: "postgres",
      maxConnections: EMBEDDED_POOL_SIZE,
      idleTimeout: Duration.zero // never close the one connection (0 disables the pool's idle timer)
    },
    (e) => `cannot connect to the embedded database: ${innermostMessage(e)}`
  )

const connectServer = (url: Redacted.Redacted<string>) => {
  const where = describeServer(Redacted.value(url))
  if (where === undefined) {
    return Effect.fail(new DbError({ message: "DATABASE_URL is not a postgres:// URL (postgres://user:password@host:port/database)" }))
  }
  const password = Option.getOrUndefined(Option.liftThrowable(() => decodeURIComponent(new URL(Redacted.value(url)).password))())
  return connect(
    { url, maxConnections: SERVER_POOL_SIZE, connectTimeout: CONNECT_TIMEOUT },
    (e) =>
      scrub(
        `${isServerAnswer(e) ? "cannot connect to" : "cannot reach"} the database at ${where}: ${innermostMessage(e)}`,
        password
      )
  )
}

/**
 * A Db layer from explicit options: `url` = that server, else the embedded database (`dataDir` or in
 * memory, optionally from `snapshot`); `migrate: true` applies the migrations before it is ready.
 * Closing its scope ends the pool, then stops the worker with PGlite closed cleanly.
 */
export const makeDbLayer = (options: DbOptions): Layer.Layer<Db, DbError> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const context = options.url !== undefined
        ? yield* connectServer(typeof options.url === "string" ? Redacted.make(options.url) : options.url)
        : yield* Effect.flatMap(startEmbedded(options), connectEmbedded)
      if (options.migrate === true) {
        yield* runMigrations.pipe(
          Effect.provide(context),
          Effect.mapError((e) => new DbError({ message: `cannot migrate the database: ${describeMigrationFailure(e)}` }))
        )
      }
      return context
    })
  )

const fromConfig = (migrate: boolean): Layer.Layer<Db, DbError> =>
  Layer.unwrapEffect(
    Effect.map(
      Config.all({
        url: Config.option(Config.redacted("DATABASE_URL")),
        dataDir: Config.string("KINTSUGI_DATA_DIR").pipe(Config.withDefault(".kintsugi"))
      }),
      ({ url, dataDir }) =>
        makeDbLayer({
          url: Option.getOrUndefined(Option.filter(url, (u) => Redacted.value(u).trim() !== "")),
          dataDir: path.join(dataDir, "data"),
          migrate
        })
    ).pipe(Effect.mapError((e) => new DbError({ message: `invalid database configuration: ${e.message}` })))
  )

/** The Db layer from the environment (`DATABASE_URL`, `KINTSUGI_DATA_DIR`); applies no migrations. */
export const DbLive: Layer.Layer<Db, DbError> = fromConfig(false)

/** `DbLive`, with the project's migrations applied at start (what `kintsugi serve` uses). */
export const DbMigratedLive: Layer.Layer<Db, DbError> = fromConfig(true)

/**
 * Boots a fresh in-memory embedded database, runs `prepare` on it (e.g. `runMigrations`) and returns a
 * `dumpDataDir` tarball (~40 MB) for `makeDbLayer({ snapshot })`: a boot without initdb. Reopening a
 * copied data dir is faster still (bench/db.ts); test/support/db.ts does that.
 */
export const makeSnapshot = <E>(prepare: Effect.Effect<unknown, E, Db>): Effect.Effect<Uint8Array, DbError | E> =>
  Effect.scoped(
    Effect.gen(function*() {
      const db = yield* startEmbedded({})
      // The client's scope (its pool) ends before the dump.
      yield* Effect.scoped(Effect.flatMap(connectEmbedded(db), (context) => Effect.provide(prepare, context)))
      return yield* db.dump
    })
  )
