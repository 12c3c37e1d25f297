/**
 * What this process knows about writes to its database, so hot reads (a token's principal, the
 * catalog generation) can be answered from memory without queueing behind the embedded database's one
 * connection — and never stale: after a statement that may have written to a table the read depends on
 * (its topic) completes, the next read asks the database again. Exact only where this process is the database's one client: the embedded
 * database (its data dir is locked to one process, and every statement of the process passes the
 * protocol watcher below, raw SQL and migrations included), and a PostgreSQL server while this
 * process's pool passes the same watcher and its listener hears the other processes' writes
 * (serverWrites.ts). Otherwise nothing is known: every read asks.
 */
import { Context, Deferred, Effect, PubSub, Queue, type Scope } from "effect"
import type net from "node:net"

/**
 * What a cached read depends on: `access` (users, permissions, sessions, API tokens) or `catalog`
 * (agents, their versions and bindings, shared skills, MCP servers, the catalog generation).
 */
export type WriteTopic = "access" | "catalog"

/** A topic's bit in the masks `statementTopics` and `tableTopics` return. */
export const TOPIC_BIT: Readonly<Record<WriteTopic, number>> = { access: 1, catalog: 2 }
const BIT = TOPIC_BIT
/** Every topic: what a write that cannot be classified changes. */
export const ALL_TOPICS = BIT.access | BIT.catalog

export class DbWrites extends Context.Tag("db/DbWrites")<
  DbWrites,
  {
    /**
     * A number that changes whenever a statement that may have written to `topic`'s tables completes
     * (this process's, or another process's once its notification arrived: serverWrites.ts); without a
     * topic, one that changes on a write to any. A value read while it stayed the same is still the
     * database's. Undefined whenever writes cannot be known (a server's listener not listening, TLS):
     * then nothing read may be reused.
     */
    readonly epoch: (topic?: WriteTopic) => number | undefined
    /** Completes once `epoch(topic)` differs from `from` (at once when it already does); never fails. */
    readonly changed: (from: number | undefined, topic?: WriteTopic) => Effect.Effect<void>
    /**
     * The ids of jobs whose events or settlement any process committed, as a PostgreSQL server
     * announces them (heard while `epoch()` is defined); nothing on the embedded database, where the
     * in-process JobBus announces them. A subscription lives as long as its scope.
     */
    readonly jobsWritten: Effect.Effect<Queue.Dequeue<string>, never, Scope.Scope>
    /** Whether `jobsWritten` hears every job written now, this process's too (a server's listener listening). */
    readonly jobsHeard: () => boolean
    /**
     * One item per statement of another process that queued jobs, as a PostgreSQL server announces them
     * (heard while its listener listens); nothing on the embedded database, where the in-process JobBus
     * announces them. A subscription lives as long as its scope.
     */
    readonly jobsQueued: Effect.Effect<Queue.Dequeue<void>, never, Scope.Scope>
    /** How many statements (round trips ending in ReadyForQuery) this process's watched connections completed. */
    readonly statements: () => number
  }
>() {}

/** Nothing is known about other processes' writes (a server whose traffic cannot be watched: TLS). */
export const unknownWrites: DbWrites["Type"] = {
  epoch: () => undefined,
  changed: (from) => (from === undefined ? Effect.never : Effect.void),
  jobsWritten: Queue.unbounded<string>(),
  jobsHeard: () => false,
  jobsQueued: Queue.unbounded<void>(),
  statements: () => 0
}

/**
 * A write counter per topic: `bump(topics)` (a mask, every topic by default) on every statement that
 * may write (at its completion; `bump(0)`: a statement that wrote nothing cached, only counted), on a connection lost, on a worker replaced, on another process's
 * write heard. `known(false)` makes the epochs undefined (nothing may be reused) until `known(true)`,
 * which bumps every topic: what was read before is never reused. `jobWritten(id)` announces a job
 * whose events or settlement were heard, `jobQueued()` jobs queued by another process.
 */
export const makeWriteCounter = (initiallyKnown = true) => {
  const counts = { access: 0, catalog: 0 }
  const jobs = Effect.runSync(PubSub.sliding<string>(4096))
  const queued = Effect.runSync(PubSub.sliding<void>(64))
  let statements = 0
  let known = initiallyKnown
  const waiters = new Set<() => void>()
  const epoch = (topic?: WriteTopic) => (known ? (topic === undefined ? counts.access + counts.catalog : counts[topic]) : undefined)
  const wake = () => {
    for (const waiter of [...waiters]) waiter()
  }
  const changed = (from: number | undefined, topic?: WriteTopic): Effect.Effect<void> =>
    Effect.async<void>((resume) => {
      if (epoch(topic) !== from) return resume(Effect.void)
      const waiter = () => {
        if (epoch(topic) === from) return
        waiters.delete(waiter)
        resume(Effect.void)
      }
      waiters.add(waiter)
      return Effect.sync(() => void waiters.delete(waiter))
    })
  const bump = (topics: number = ALL_TOPICS) => {
    if (topics === 0) return void statements++
    if ((topics & BIT.access) !== 0) counts.access++
    if ((topics & BIT.catalog) !== 0) counts.catalog++
    if (topics !== 0 && waiters.size > 0) wake()
  }
  return {
    writes: {
      epoch,
      changed,
      jobsWritten: PubSub.subscribe(jobs),
      jobsHeard: () => false,
      jobsQueued: PubSub.subscribe(queued),
      statements: () => statements
    } satisfies DbWrites["Type"],
    bump,
    jobWritten: (id: string) => void Effect.runSync(PubSub.publish(jobs, id)),
    jobQueued: () => void Effect.runSync(PubSub.publish(queued, undefined)),
    known: (now: boolean) => {
      if (now) bump()
      known = now
      if (waiters.size > 0) wake()
    }
  }
}

const TABLE_TOPICS: ReadonlyMap<string, number> = new Map([
  ...["admin.app_user", "admin.user_permission", "admin.session", "admin.api_token"].map((t) => [t, BIT.access] as const),
  ...[
    "admin.agent",
    "admin.agent_version",
    "admin.agent_version_counter",
    "admin.agent_binding",
    "admin.agent_restore",
    "admin.agent_catalog_entry",
    "admin.agent_skill",
    "admin.agent_skill_file",
    "admin.agent_skill_version",
    "admin.mcp_server",
    "admin.catalog_generation"
  ].map((t) => [t, BIT.catalog] as const),
  // Evaluation runs: no cached read depends on them (and no trigger or cascade reaches a cached table).
  ...["admin.agent_eval_run", "admin.agent_eval_result"].map((t) => [t, 0] as const)
])

/**
 * The topics a write to `table` (`schema.table`, unquoted) may change: none for the job side (the
 * schemas `runtime` and `memory`: jobs, events, leases, projects, notes), its topic for a cached
 * table, every topic for any other table.
 */
export const tableTopics = (table: string): number =>
  TABLE_TOPICS.get(table) ?? (table.startsWith("runtime.") || table.startsWith("memory.") ? 0 : ALL_TOPICS)

// Clauses that name a writing keyword without writing: row locks and an INSERT's conflict action.
const NOT_WRITING = /\bfor\s+(?:no\s+key\s+update|update|key\s+share|share)\b|\bdo\s+(?:nothing|update\s+set)\b|\bpg_notify\b/gi
const TARGET = /\b(?:insert\s+into|update|delete\s+from)\s+(?:only\s+)?([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*)\b(?!\s*\.)/gi
const WRITING =
  /\b(insert|update|delete|merge|truncate|copy|call|do|into|nextval|setval|set_config|lo_\w+|refresh|lock|vacuum|analyze|reindex|cluster)\b/i
const DATA_STATEMENT = /^\s*(select|with|insert|update|delete|values|table)\b/i
// Statements that change no data: transaction control (a transaction's writes count at its end),
// notifications.
const NO_DATA = /^\s*(begin|start\s+transaction|savepoint|release|rollback|commit|end|abort|notify|listen|unlisten)\b[^;]*;?\s*$/i

/**
 * The topics (a mask of `WriteTopic`s) a statement may change, by the tables it writes: 0 for a read, a
 * transaction control statement or a write to tables no cached read depends on. Conservative: a
 * statement whose every write it cannot name (DDL, several statements, quoted or unqualified names,
 * functions that write, MERGE, TRUNCATE, COPY) changes every topic; a false topic only costs a cache miss.
 */
export const statementTopics = (text: string): number => {
  if (NO_DATA.test(text)) return 0
  if (!DATA_STATEMENT.test(text) || /;\s*\S/.test(text)) return ALL_TOPICS
  let topics = 0
  const rest = text.replace(NOT_WRITING, " ").replace(TARGET, (_, table: string) => {
    topics |= tableTopics(table.toLowerCase())
    return " "
  })
  return WRITING.test(rest) ? ALL_TOPICS : topics
}

const cString = (body: Buffer, from: number): { readonly text: string; readonly end: number } => {
  const end = body.indexOf(0, from)
  return end < 0 ? { text: body.toString("utf8", from), end: body.length } : { text: body.toString("utf8", from, end), end: end + 1 }
}

/**
 * Splits a PostgreSQL protocol byte stream into messages (type byte + int32 length including itself);
 * `untypedFirst`: the frontend's startup message has no type byte. `want(type)` says how many bytes of
 * a message's body are needed (0: none, the rest is skipped without copying, a large DataRow or a Bind
 * carrying megabytes of parameters included).
 */
const messageReader = (
  untypedFirst: boolean,
  want: (type: number) => number,
  onMessage: (type: number, body: Buffer | undefined) => void
) => {
  let header = Buffer.alloc(0)
  let skip = untypedFirst ? -1 : 0
  let type = 0
  let remaining = 0
  let keep = 0
  let parts: Array<Buffer> | undefined
  return (chunk: Buffer) => {
    let at = 0
    while (at < chunk.length) {
      if (remaining > 0) {
        const take = Math.min(remaining, chunk.length - at)
        if (parts !== undefined && keep > 0) {
          parts.push(Buffer.from(chunk.subarray(at, at + Math.min(take, keep))))
          keep -= Math.min(take, keep)
        }
        remaining -= take
        at += take
        if (remaining === 0) onMessage(type, parts === undefined ? undefined : Buffer.concat(parts))
        continue
      }
      // The header: [type] + int32 length.
      const headerSize = skip === -1 ? 4 : 5
      const take = Math.min(headerSize - header.length, chunk.length - at)
      header = Buffer.concat([header, chunk.subarray(at, at + take)])
      at += take
      if (header.length < headerSize) continue
      const untyped = skip === -1
      type = untyped ? 0 : header[0]!
      remaining = header.readInt32BE(untyped ? 0 : 1) - 4
      header = Buffer.alloc(0)
      skip = 0
      keep = untyped ? 0 : want(type)
      parts = keep > 0 ? [] : undefined
      if (remaining <= 0) {
        remaining = 0
        onMessage(type, parts === undefined ? undefined : Buffer.alloc(0))
      }
    }
  }
}

const Q = 0x51 // Query
const P = 0x50 // Parse
const B = 0x42 // Bind
const F = 0x46 // FunctionCall
const D = 0x64 // CopyData
const Z = 0x5a // ReadyForQuery
const K = 0x4b // BackendKeyData

/**
 * Watches one client connection's protocol traffic: every statement (simple query, or the Bind of a
 * parsed statement, classified by `statementTopics`; a function call and COPY data: every topic) bumps
 * its topics (0 when it wrote nothing cached) at the ReadyForQuery that ends it, before its client hears it completed, and
 * a transaction's topics are bumped again at the ReadyForQuery that says it ended (its COMMIT made them
 * visible). That is enough: a value read before the write completed is refused when the epoch moved
 * while it was read, or dropped when it moves later. Bumping at send as well would only empty the
 * caches for as long as the statement runs. A lost connection bumps every topic. `onBackend` hears the
 * server process id of the connection once it is known (BackendKeyData), and undefined once the
 * connection closed.
 */
export const watchConnection = (bump: (topics: number) => void, onBackend?: (pid: number | undefined) => void) => {
  const statements = new Map<string, number>()
  let pending = 0
  let inTransaction = 0
  const mayWrite = (topics: number) => void (pending |= topics)
  // A Bind's first bytes name its portal and statement; the statement text is in Query and Parse.
  const sent = messageReader(
    true,
    (t) => (t === Q || t === P ? Number.POSITIVE_INFINITY : t === B ? 512 : 0),
    (type, body) => {
      if (type === Q && body !== undefined) {
        mayWrite(statementTopics(cString(body, 0).text))
      } else if (type === P && body !== undefined) {
        const name = cString(body, 0)
        statements.set(name.text, statementTopics(cString(body, name.end).text))
      } else if (type === B && body !== undefined) {
        const statement = cString(body, cString(body, 0).end).text
        mayWrite(statements.get(statement) ?? ALL_TOPICS)
      } else if (type === F || type === D) mayWrite(ALL_TOPICS)
    }
  )
  let backend: number | undefined
  const received = messageReader(
    false,
    (t) => (t === Z ? 1 : t === K && onBackend !== undefined ? 4 : 0),
    (type, body) => {
      if (type === Z) {
        // The transaction status: T or E inside a transaction, I (idle) once none is open.
        const ended = body?.[0] !== 0x54 && body?.[0] !== 0x45
        const topics = pending | (ended ? inTransaction : 0)
        inTransaction = ended ? 0 : inTransaction | pending
        pending = 0
        bump(topics)
      } else if (type === K && body !== undefined && body.length >= 4) {
        backend = body.readInt32BE(0)
        onBackend?.(backend)
      }
    }
  )
  const closed = () => {
    bump(ALL_TOPICS)
    if (backend !== undefined) onBackend?.(undefined)
  }
  return { sent, received, closed, backend: () => backend }
}

/**
 * Makes every byte written to and read from `socket` pass `watcher` (a `watchConnection`), the
 * watcher's listener first: a write is counted before node-postgres hears it completed.
 */
export const watchSocket = <S extends net.Socket>(socket: S, watcher: ReturnType<typeof watchConnection>): S => {
  socket.on("data", watcher.received)
  socket.on("close", watcher.closed)
  // Every write passes the watcher, whatever `write` is: Bun's connect() assigns its own to the
  // socket, which the setter keeps as the one the watcher hands on to.
  let write = socket.write as (...args: Array<unknown>) => boolean
  const watched = (...args: Array<unknown>): boolean => {
    const [chunk, encoding] = args
    if (chunk instanceof Uint8Array) watcher.sent(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
    else if (typeof chunk === "string")
      watcher.sent(Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8"))
    return write.apply(socket, args)
  }
  Object.defineProperty(socket, "write", {
    configurable: true,
    enumerable: true,
    get: () => watched,
    set: (replaced: (...args: Array<unknown>) => boolean) => void (write = replaced)
  })
  return socket
}

/**
 * `read`, answered from memory while no write to `topic` happened since it was last read (per `key`, at most
 * `max` keys; each kept at most until its `until(value)` (epoch ms) or `ttlMs` after it was read, and
 * only when `keep(value)`). Concurrent misses of one key share one read. With `writes` of a server
 * every call reads.
 */
export const cachedUntilWrite = <K, A>(
  writes: DbWrites["Type"],
  options: { readonly topic: WriteTopic; readonly max: number; readonly ttlMs: number; readonly until?: (value: A) => number }
) => {
  const held = new Map<K, { readonly value: A; readonly until: number }>()
  const reading = new Map<K, { readonly epoch: number; readonly done: Deferred.Deferred<A> }>()
  let heldAt: number | undefined
  return (key: K, read: Effect.Effect<A>, keep: (value: A) => boolean = () => true): Effect.Effect<A> =>
    Effect.clockWith((clock) => {
      // The epoch is taken before the read is sent: a write completing meanwhile makes the value unusable.
      const epoch = writes.epoch(options.topic)
      if (epoch === undefined) return read
      if (epoch !== heldAt) {
        held.clear()
        heldAt = epoch
      }
      const hit = held.get(key)
      if (hit !== undefined && clock.unsafeCurrentTimeMillis() < hit.until) return Effect.succeed(hit.value)
      const pending = reading.get(key)
      if (pending !== undefined && pending.epoch === epoch) return Deferred.await(pending.done)
      const store = (value: A) =>
        Effect.sync(() => {
          if (writes.epoch(options.topic) !== epoch || heldAt !== epoch || !keep(value)) return
          if (held.size >= options.max) held.clear()
          held.set(key, {
            value,
            until: Math.min(clock.unsafeCurrentTimeMillis() + options.ttlMs, options.until?.(value) ?? Number.POSITIVE_INFINITY)
          })
        })
      return Effect.flatMap(Deferred.make<A>(), (done) => {
        reading.set(key, { epoch, done })
        // Its own fiber: a waiter's interruption (a client gone) never leaves the others waiting.
        const shared = Effect.tap(read, store).pipe(
          Effect.exit,
          Effect.flatMap((exit) => Deferred.done(done, exit)),
          Effect.ensuring(Effect.sync(() => void (reading.get(key)?.done === done && reading.delete(key))))
        )
        return Effect.zipRight(Effect.forkDaemon(shared), Deferred.await(done))
      })
    })
}
