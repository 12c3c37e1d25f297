/**
 * The database layer: `DATABASE_URL` selects a PostgreSQL server; without it, the embedded PostgreSQL
 * (PGlite in a Bun Worker, see embeddedWorker.ts) at `${KINTSUGI_DATA_DIR}/data`. One PgClient either way.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, type Scope, String as Str } from "effect"
import fs from "node:fs"
import path from "node:path"
import { type Embedded, startEmbedded } from "./embeddedDatabase.ts"
import { DbError, innermost, innermostMessage } from "./DbError.ts"
import { DbWrites, unknownWrites } from "./DbWrites.ts"
import { describeMigrationFailure, runMigrations } from "./migrations.ts"
import { makeServerWrites, type ServerWrites, usesTls } from "./serverWrites.ts"
import { ensureTemplate, findTemplate, seedDataDir } from "./dataDirTemplate.ts"

export { DbError } from "./DbError.ts"
export { DbWrites } from "./DbWrites.ts"

/**
 * What the Db layers provide: the same client under both tags. Values as node-postgres decodes them:
 * int8 (`count(*)`, bigserial) and numeric arrive as strings (cast `::int` or decode with
 * `Schema.NumberFromString`), timestamptz as `Date`, json/jsonb parsed and with their keys untouched.
 * And DbWrites: what this process knows of writes (the embedded database: all of them; a server: its
 * own through the pool's watcher and the others' through a LISTEN connection, none over TLS).
 */
export type Db = PgClient.PgClient | SqlClient | DbWrites

export interface DbOptions {
  /** A `postgres://` URL: use that server (`dataDir` and `snapshot` are then ignored). */
  readonly url?: string | Redacted.Redacted<string> | undefined
  /** Embedded only: a persistent data dir; absent = a throwaway in-memory database. */
  readonly dataDir?: string | undefined
  /**
   * Embedded only: a `makeSnapshot` tarball to start from when `dataDir` holds no database yet. Prefer
   * `Bun.file(path)`: bytes are copied whole on this thread, a file is read by the worker.
   */
  readonly snapshot?: Uint8Array | Blob | undefined
  /**
   * A statement running longer is cancelled (default `STATEMENT_TIMEOUT`): `statement_timeout` on a
   * server (unless the URL sets its own), the embedded worker replaced on the embedded database.
   */
  readonly statementTimeout?: Duration.DurationInput | undefined
  /** Apply the project's migrations before the layer is ready (default false). */
  readonly migrate?: boolean | undefined
  /**
   * Embedded only: a `dataDir` holding no database yet starts as a private copy of the migrated
   * template (dataDirTemplate.ts) instead of initdb + every migration. Without a ready template it is
   * initialised by initdb + every migration, and the template is then built in the background for the next new data dir.
   */
  readonly template?: boolean | undefined
}

/**
 * Pool sizes. A server gets 10 connections (node-postgres' default; a queued request waits at most
 * `CONNECT_TIMEOUT` for one). The embedded database gets ONE: PGlite is a single session that runs one
 * statement at a time anyway, and pglite-socket interleaves extended-protocol messages of concurrent
 * connections (electric-sql/pglite#1046: one client's Bind can hit another's unnamed statement, a cursor
 * loses its portal), so a single connection is the only safe setting. Requests queue in the pool instead;
 * a transaction holds the connection, as it would gate the other connections in PGlite.
 */
const SERVER_POOL_SIZE = 10
/** How long an idle connection of the server pool stays open. */
const SERVER_POOL_IDLE = Duration.minutes(5)
const EMBEDDED_POOL_SIZE = 1
const CONNECT_TIMEOUT = Duration.seconds(10)
/** How long after start-up a missing data-dir template is built (start-up itself is not slowed). */
const TEMPLATE_BUILD_DELAY = Duration.seconds(5)
/** The default statement timeout: on a server `statement_timeout`, on the embedded database the watchdog's limit. */
const STATEMENT_TIMEOUT = Duration.seconds(30)

// camelCase in TypeScript, snake_case in SQL. JSON values are stored and returned verbatim (job
// metadata and tool inputs must not have their keys rewritten).
const clientOptions = {
  transformQueryNames: Str.camelToSnake,
  transformResultNames: Str.snakeToCamel,
  transformJson: false,
  applicationName: "kintsugi"
} as const

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

const isErrno = (e: unknown, code: string) => typeof e === "object" && e !== null && "code" in e && e.code === code
/** Whether a process with this pid exists (one we may not signal exists too). */
export const isProcessAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return isErrno(e, "EPERM")
  }
}

/** The pid in `<dataDir>.lock` when another live process holds it (our own pid, after a restart as PID 1, is stale). */
export const dataDirLockHolder = (dataDir: string): number | undefined => {
  try {
    const holder = Number(fs.readFileSync(`${dataDir}.lock`, "utf8").trim())
    return Number.isInteger(holder) && holder > 0 && holder !== process.pid && isProcessAlive(holder) ? holder : undefined
  } catch {
    return undefined
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
          const holder = dataDirLockHolder(dataDir)
          if (holder !== undefined) throw new Error(`it is in use by process ${holder} (lock file ${file})`)
          fs.writeFileSync(file, String(process.pid))
        }
        openDataDirs.add(dataDir)
      },
      catch: (e) => new DbError({ message: `cannot open the embedded database at ${dataDir}: ${innermostMessage(e)}`, cause: e })
    }),
    () =>
      Effect.sync(() => {
        openDataDirs.delete(dataDir)
        fs.rmSync(file, { force: true })
      })
  )
}

const connect = (config: PgClient.PgClientConfig, describeFailure: (e: SqlError) => string) =>
  Layer.build(PgClient.layer({ ...clientOptions, ...config })).pipe(Effect.mapError((e) => new DbError({ message: describeFailure(e) })))

const connectEmbedded = (db: Embedded) => Effect.map(connectEmbeddedClient(db), Context.add(DbWrites, db.writes))

const connectEmbeddedClient = (db: Embedded) =>
  connect(
    {
      host: db.socketDir,
      port: 5432,
      username: "postgres",
      database: "postgres",
      maxConnections: EMBEDDED_POOL_SIZE,
      stream: db.socket,
      idleTimeout: Duration.zero // never close the one connection (0 disables the pool's idle timer)
    },
    (e) => `cannot connect to the embedded database: ${innermostMessage(e)}`
  )

const embedded = (options: DbOptions, seeded?: (result: ReturnType<typeof seedDataDir>) => void) =>
  startEmbedded(
    {
      dataDir: options.dataDir,
      snapshot: options.snapshot,
      // One spare slot: a reconnect is not refused while the server still counts the dropped socket.
      maxConnections: EMBEDDED_POOL_SIZE + 1,
      statementTimeout: Duration.decode(options.statementTimeout ?? STATEMENT_TIMEOUT)
    },
    options.template === true
      ? (dataDir) =>
          // Under the lock: no other process seeds or opens this data dir meanwhile.
          Effect.zipLeft(
            lockDataDir(dataDir),
            Effect.try({
              try: () => seeded?.(seedDataDir(dataDir, findTemplate())),
              catch: (e) =>
                new DbError({
                  message: `cannot create the embedded database at ${dataDir} from its template: ${innermostMessage(e)}`,
                  cause: e
                })
            })
          )
      : lockDataDir
  )

/**
 * Builds the embedded database's data-dir template for the current PGlite and migrations unless it is
 * there (what the Docker image does at build time, so a new data volume starts without initdb);
 * resolves to its path, or undefined when templates are disabled (`KINTSUGI_DB_TEMPLATES=off`).
 */
export const buildDataDirTemplate = (): Promise<string | undefined> =>
  ensureTemplate((dataDir) => Effect.runPromise(Effect.scoped(Layer.build(makeDbLayer({ dataDir, migrate: true })))).then(() => undefined))

/** The URL with `statement_timeout` (ms) as a startup parameter, unless the operator set one in it. */
const withStatementTimeout = (url: string, timeout: Duration.Duration): string => {
  const u = new URL(url)
  if (!u.searchParams.has("statement_timeout"))
    u.searchParams.set("statement_timeout", String(Math.max(1, Math.round(Duration.toMillis(timeout)))))
  return u.toString()
}

const connectServer = (given: Redacted.Redacted<string>, statementTimeout: Duration.Duration) => {
  const where = describeServer(Redacted.value(given))
  if (where === undefined) {
    return Effect.fail(new DbError({ message: "DATABASE_URL is not a postgres:// URL (postgres://user:password@host:port/database)" }))
  }
  const password = Option.getOrUndefined(Option.liftThrowable(() => decodeURIComponent(new URL(Redacted.value(given)).password))())
  const plain = withStatementTimeout(Redacted.value(given), statementTimeout)
  const url = Redacted.make(plain)
  const client = (stream?: ServerWrites["stream"]) =>
    connect(
      {
        url,
        maxConnections: SERVER_POOL_SIZE,
        connectTimeout: CONNECT_TIMEOUT,
        // An idle connection is kept for minutes, not node-postgres's 10 s: each new one empties the
        // hot-read caches (serverWrites' pid-reuse guard), so a pool that churns under bursts costs reads.
        idleTimeout: SERVER_POOL_IDLE,
        ...(stream === undefined ? {} : { stream })
      },
      (e) => scrub(`${isServerAnswer(e) ? "cannot connect to" : "cannot reach"} the database at ${where}: ${innermostMessage(e)}`, password)
    )
  if (usesTls(plain)) {
    // The pool's traffic is encrypted below node-postgres: own writes cannot be watched, so nothing is cached.
    return Effect.zipLeft(
      Effect.map(client(), Context.add(DbWrites, unknownWrites)),
      Effect.logInfo("the database connection uses TLS: hot reads (tokens, the catalog generation) ask the database on every request")
    )
  }
  const server = makeServerWrites(plain, (message) => scrub(message, password))
  return Effect.gen(function* () {
    const context = yield* client(server.stream)
    yield* server.listen
    // Up before the first request when the server answers at once; otherwise reads ask until it is.
    yield* server.writes.changed(undefined).pipe(Effect.timeout(CONNECT_TIMEOUT), Effect.ignore)
    return Context.add(context, DbWrites, server.writes)
  })
}

/**
 * A Db layer from explicit options: `url` = that server, else the embedded database (`dataDir` or in
 * memory, optionally from `snapshot`); `migrate: true` applies the migrations before it is ready.
 * Closing its scope ends the pool, then stops the worker with PGlite closed cleanly.
 */
export const makeDbLayer = (options: DbOptions): Layer.Layer<Db, DbError> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      let seeded: ReturnType<typeof seedDataDir> | undefined
      const context =
        options.url !== undefined
          ? yield* connectServer(
              typeof options.url === "string" ? Redacted.make(options.url) : options.url,
              Duration.decode(options.statementTimeout ?? STATEMENT_TIMEOUT)
            )
          : yield* Effect.flatMap(
              embedded(options, (r) => (seeded = r)),
              connectEmbedded
            )
      if (options.migrate === true) {
        yield* runMigrations.pipe(
          Effect.provide(context),
          Effect.mapError((e) => new DbError({ message: `cannot migrate the database: ${describeMigrationFailure(e)}`, cause: e }))
        )
      }
      if (seeded === "no-template") {
        // For the next new data dir; this one is up. A failure only costs that one its initdb again.
        yield* Effect.forkDaemon(
          Effect.tryPromise(buildDataDirTemplate).pipe(
            Effect.delay(TEMPLATE_BUILD_DELAY),
            Effect.tapError((e) => Effect.logWarning(`cannot build the embedded database template: ${innermostMessage(e)}`)),
            Effect.ignore
          )
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
        dataDir: Config.string("KINTSUGI_DATA_DIR").pipe(Config.withDefault(".kintsugi")),
        statementTimeoutSec: Config.number("KINTSUGI_DB_STATEMENT_TIMEOUT").pipe(
          Config.validate({ message: "must be a positive number of seconds", validation: (n) => n > 0 }),
          Config.withDefault(Duration.toSeconds(STATEMENT_TIMEOUT))
        )
      }),
      ({ url, dataDir, statementTimeoutSec }) =>
        makeDbLayer({
          url: Option.getOrUndefined(Option.filter(url, (u) => Redacted.value(u).trim() !== "")),
          dataDir: path.join(dataDir, "data"),
          statementTimeout: Duration.seconds(statementTimeoutSec),
          migrate,
          template: true
        })
    ).pipe(Effect.mapError((e) => new DbError({ message: `invalid database configuration: ${e.message}` })))
  )

/**
 * The Db layer from the environment (`DATABASE_URL`, `KINTSUGI_DATA_DIR`, `KINTSUGI_DB_STATEMENT_TIMEOUT`
 * in seconds); applies no migrations.
 */
export const DbLive: Layer.Layer<Db, DbError> = fromConfig(false)

/** `DbLive`, with the project's migrations applied at start (what `kintsugi serve` uses). */
export const DbMigratedLive: Layer.Layer<Db, DbError> = fromConfig(true)

/**
 * Boots a fresh in-memory embedded database, runs `prepare` on it (e.g. `runMigrations`) and returns a
 * `dumpDataDir` tarball for `makeDbLayer({ snapshot })`: a boot without initdb. Reopening a
 * copied data dir is faster still (bench/db.ts); test/support/db.ts does that.
 */
export const makeSnapshot = <E>(prepare: Effect.Effect<unknown, E, Db>): Effect.Effect<Uint8Array, DbError | E> =>
  Effect.scoped(
    Effect.gen(function* () {
      const db = yield* embedded({})
      // The client's scope (its pool) ends before the dump.
      yield* Effect.scoped(Effect.flatMap(connectEmbedded(db), (context) => Effect.provide(prepare, context)))
      return yield* db.dump
    })
  )
