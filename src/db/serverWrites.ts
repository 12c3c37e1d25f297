/**
 * What this process knows of writes to a PostgreSQL server (DbWrites): its own pool's statements pass
 * the protocol watcher (as on the embedded database), and every other process's committed write to a
 * table a cached read may depend on arrives as a `kintsugi_writes` notification (migration 052) on one
 * dedicated listening connection, where it moves the epochs of that table's topics (`tableTopics`).
 * While that connection is not listening, nothing is known: the epochs are undefined and every read
 * asks the database.
 */
import { Duration, Effect, type Scope } from "effect"
import net from "node:net"
import pg from "pg"
import { innermostMessage } from "./DbError.ts"
import { type DbWrites, makeWriteCounter, tableTopics, watchConnection, watchSocket } from "./DbWrites.ts"

/** The channel migration 052's triggers notify, with the written table (`schema.table`) as payload. */
export const WRITES_CHANNEL = "kintsugi_writes"

/** The channel migration 055's triggers notify when a job's events are stored or it is settled, with the job's id as payload. */
const EVENTS_CHANNEL = "kintsugi_events"

/** The channel migration 061's triggers notify when a statement queued jobs. */
const QUEUED_CHANNEL = "kintsugi_queued"

/**
 * Tables of the app's schemas that notify nothing (migration 052): high-churn rows that no read cached
 * until a write depends on (a job's row moves and heartbeats, its events and transcript turns, web usage counters). Every
 * other table notifies; test/db/serverWrites.test.ts fails when a table is neither triggered nor listed.
 */
export const UNNOTIFIED_TABLES: ReadonlyArray<string> = [
  "runtime.job",
  "runtime.job_event",
  "runtime.web_usage_day",
  "runtime.transcript_turn",
  "runtime.web_usage_job"
]

/** The schemas whose tables notify (all of the app's). */
export const NOTIFYING_SCHEMAS: ReadonlyArray<string> = ["admin", "runtime", "memory"]

/** The listener's first reconnect delay, doubled per failed attempt up to `MAX_BACKOFF`. */
const MIN_BACKOFF = Duration.millis(100)
const MAX_BACKOFF = Duration.seconds(5)
/** How often the idle listener checks that its server still answers (a dead peer sends no FIN). */
const PING_INTERVAL = Duration.seconds(5)
const PING_TIMEOUT = Duration.seconds(5)

/**
 * Whether the URL asks node-postgres for TLS (`sslmode` other than disable, `ssl`, client
 * certificates): its traffic cannot be watched. TLS asked elsewhere (`PGSSLMODE`) is caught when the
 * pool's first connection is made (`stream`).
 */
export const usesTls = (url: string): boolean => {
  const params = new URL(url).searchParams
  const mode = params.get("sslmode")
  const ssl = params.get("ssl")
  if (mode !== null && mode !== "disable") return true
  if (ssl !== null && ssl !== "false" && ssl !== "0") return true
  return params.has("sslcert") || params.has("sslkey") || params.has("sslrootcert")
}

export interface ServerWrites {
  readonly writes: DbWrites["Type"]
  /** node-postgres' `stream` option for the pool: a socket whose traffic passes the watcher. */
  /** node-postgres calls it with its connection config (`ssl` among it), typed `() => Duplex` by @effect/sql-pg. */
  readonly stream: (config?: { readonly ssl?: unknown }) => net.Socket
  /** Starts the listener for the current scope (reconnecting with backoff until the scope closes). */
  readonly listen: Effect.Effect<void, never, Scope.Scope>
}

/**
 * The writes of a server at `url` (a plain TCP or unix-socket URL; see `usesTls`); `clean` scrubs what
 * the listener logs (the password, should a message ever carry it). The epoch is
 * undefined until `listen` has its LISTEN acknowledged, whenever the listener's connection is lost,
 * and for good if a pool connection ever negotiates TLS (unwatchable).
 */
export const makeServerWrites = (url: string, clean: (message: string) => string = (m) => m): ServerWrites => {
  const counter = makeWriteCounter(false)
  let blind = false
  let listening = false
  // The server processes of this pool's open connections: their writes are counted by the watcher
  // when they complete; the notifications they cause later would only empty the caches once more.
  // (The watcher misses a write only inside a function a SELECT calls; the app defines none, only
  // trigger functions, and the embedded database relies on the same.)
  const ownBackends = new Set<number>()
  const writes: DbWrites["Type"] = {
    epoch: (topic) => (blind ? undefined : counter.writes.epoch(topic)),
    changed: (from, topic) => counter.writes.changed(from, topic),
    jobsWritten: counter.writes.jobsWritten,
    jobsHeard: () => listening && !blind,
    jobsQueued: counter.writes.jobsQueued,
    statements: counter.writes.statements
  }
  const stream = (config?: { readonly ssl?: unknown }): net.Socket => {
    // node-postgres would wrap this socket in TLS and write through the wrapper: unwatchable, for good.
    if (config?.ssl !== undefined && config.ssl !== false) {
      if (!blind) counter.known(false)
      blind = true
      return new net.Socket()
    }
    let pid: number | undefined
    return watchSocket(
      new net.Socket(),
      watchConnection(counter.bump, (now) => {
        if (pid !== undefined) ownBackends.delete(pid)
        pid = now
        if (now !== undefined) {
          ownBackends.add(now)
          // A notification from another process's backend that had this pid before (pid reuse) is
          // ignored from now on: its write committed before the pid was ours, so drop what was read.
          counter.bump()
        }
      })
    )
  }
  /**
   * Fails unless `c` talks to the server process it was given at connect (BackendKeyData): a pooler in
   * transaction mode (PgBouncer, a managed "pooler" port) acknowledges LISTEN on a server connection it
   * then hands to others, so no notification would ever come. Such a setup is unwatchable, as TLS is:
   * caching stays off for good (`blind`), logged once.
   */
  const checkDirect = async (c: pg.Client): Promise<void> => {
    const r = await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")
    const given = (c as unknown as { readonly processID?: number | null }).processID
    if (r.rows[0]?.pid === given) return
    if (!blind) {
      blind = true
      counter.known(false)
      Effect.runFork(
        Effect.logWarning(
          "the database connection goes through a pooler (its server process changes between statements): hot reads ask the database on every request"
        )
      )
    }
    throw new Error("the listener's connection goes through a pooler")
  }
  const setListening = (now: boolean) => {
    if (listening === now) return
    listening = now
    counter.known(now && !blind)
  }

  /** One listening session: resolves (with the reason) when its connection is lost. */
  const session = Effect.gen(function* () {
    const lost = yield* Effect.makeLatch(false)
    let reason = "connection ended"
    const client = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const c = new pg.Client({
            connectionString: url,
            application_name: "kintsugi-listener",
            keepAlive: true,
            connectionTimeoutMillis: 10_000
          })
          c.on("notification", (n) => {
            // A job's events and settlement are heard from every process, this one's included.
            if (n.channel === EVENTS_CHANNEL && n.payload !== undefined) counter.jobWritten(n.payload)
            else if (n.channel === WRITES_CHANNEL && !ownBackends.has(n.processId)) counter.bump(tableTopics(n.payload ?? ""))
            // Jobs this process queued wake its workers through the JobBus already.
            else if (n.channel === QUEUED_CHANNEL && !ownBackends.has(n.processId)) counter.jobQueued()
          })
          c.on("error", (e) => {
            reason = clean(innermostMessage(e))
            Effect.runSync(lost.open)
          })
          c.on("end", () => Effect.runSync(lost.open))
          try {
            await c.connect()
            await c.query(`LISTEN ${WRITES_CHANNEL}`)
            await c.query(`LISTEN ${EVENTS_CHANNEL}`)
            await c.query(`LISTEN ${QUEUED_CHANNEL}`)
            await checkDirect(c)
          } catch (e) {
            void c.end().catch(() => undefined)
            throw e
          }
          return c
        },
        catch: (e) => clean(innermostMessage(e))
      }),
      (c) => Effect.sync(() => void c.end().catch(() => undefined))
    )
    // Heard from here on: a write committed after the LISTEN notifies us; one before it is covered by
    // the bump `known(true)` makes (nothing read before is reused).
    setListening(true)
    const ping = Effect.tryPromise(() => checkDirect(client)).pipe(
      Effect.timeoutFail({ duration: PING_TIMEOUT, onTimeout: () => new Error("the server did not answer a ping") }),
      Effect.delay(PING_INTERVAL),
      Effect.forever,
      Effect.catchAll((e) => Effect.sync(() => void (reason = clean(innermostMessage(e)))))
    )
    yield* Effect.raceFirst(lost.await, ping)
    return reason
  }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(() => setListening(false))))

  const listen = Effect.gen(function* () {
    let failures = 0
    for (;;) {
      const outcome = yield* Effect.either(session)
      // Behind a pooler nothing will ever be heard: no listener, every read asks (logged by checkDirect).
      if (blind) return
      if (outcome._tag === "Right") {
        failures = 0
        yield* Effect.logWarning(
          `the database write listener lost its connection (${outcome.right}); reads ask the database until it is back`
        )
      } else if (failures++ === 0) {
        yield* Effect.logWarning(`the database write listener cannot connect (${outcome.left}); reads ask the database until it can`)
      }
      const backoff = Math.min(Duration.toMillis(MAX_BACKOFF), Duration.toMillis(MIN_BACKOFF) * 2 ** Math.min(failures, 10))
      yield* Effect.sleep(Duration.millis(backoff * (0.8 + Math.random() * 0.4)))
    }
  }).pipe(Effect.forkScoped, Effect.asVoid)

  return { writes, stream, listen }
}
