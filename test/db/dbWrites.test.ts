/**
 * What the process knows of writes (src/db/DbWrites.ts): on the embedded database every statement that
 * may write moves the epoch — raw SQL, transactions, data-modifying CTEs — and a read-only SELECT does
 * not (on a PostgreSQL server too: the pool passes the same watcher); a value cached until a write is
 * read again after one; over TLS nothing is known.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Layer } from "effect"
import { Access, AccessLive } from "../../src/access/Access.ts"
import { JobStore, JobStoreLive } from "../../src/worker/JobStore.ts"
import { DbWrites } from "../../src/db/Db.ts"
import { ALL_TOPICS, cachedUntilWrite, statementTopics, TOPIC_BIT, unknownWrites, watchConnection } from "../../src/db/DbWrites.ts"
import { usesTls } from "../../src/db/serverWrites.ts"
import { useTestDb } from "../support/db.ts"

setDefaultTimeout(60_000)

const db = useTestDb(Layer.mergeAll(JobStoreLive, AccessLive))
const epoch = () => db.run(Effect.map(DbWrites, (w) => w.epoch()))
const statement = (text: string) => db.run(Effect.flatMap(SqlClient, (sql) => sql.unsafe(text)))

const ACCESS = TOPIC_BIT.access
const CATALOG = TOPIC_BIT.catalog

describe("statementTopics", () => {
  test("reads, transaction control and notifications change nothing; a write changes the topics of the tables it names; anything else every topic", () => {
    const cases: ReadonlyArray<readonly [string, number]> = [
      ["SELECT 1", 0],
      ["  select n FROM admin.catalog_generation", 0],
      ["SELECT u.updated_at, t.last_used_at FROM x t WHERE t.deleted_at IS NULL", 0],
      ["SELECT id FROM runtime.job WHERE status = 'queued' FOR UPDATE SKIP LOCKED LIMIT 1", 0],
      ["SELECT pg_notify('c', 'p')", 0],
      ["NOTIFY c", 0],
      ["BEGIN", 0],
      ["SAVEPOINT effect_sql_1", 0],
      ["RELEASE SAVEPOINT effect_sql_1", 0],
      ["ROLLBACK TO SAVEPOINT effect_sql_1", 0],
      ["ROLLBACK", 0],
      ["COMMIT", 0],
      // The job side: claims, heartbeats, events, settles, memory.
      [
        `UPDATE runtime.job SET status = 'running', worker_id = $1 WHERE id = (SELECT id FROM runtime.job WHERE status = 'queued'
        ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id`,
        0
      ],
      ["UPDATE runtime.job SET heartbeat_at = now() WHERE id = $1 AND status = 'running' RETURNING id", 0],
      [
        `INSERT INTO runtime.job_event (job_id, seq, type, event) SELECT $1, $2, $3, $4::jsonb
        WHERE EXISTS (SELECT 1 FROM runtime.job WHERE id = $5 AND status = 'running') ON CONFLICT DO NOTHING`,
        0
      ],
      ["INSERT INTO memory.settings (project_id, enabled) VALUES ($1, $2) ON CONFLICT (project_id) DO UPDATE SET enabled = $3", 0],
      ["DELETE FROM runtime.service_token WHERE job_id = $1", 0],
      ["INSERT INTO admin.agent_eval_run (id) VALUES ($1)", 0],
      // Cached tables: their topic.
      ["UPDATE admin.api_token SET last_used_at = now() WHERE id = $1", ACCESS],
      ["DELETE FROM admin.session WHERE token_hash = $1", ACCESS],
      ["INSERT INTO admin.app_user (username, password_hash) VALUES ($1, $2) ON CONFLICT (username) DO NOTHING RETURNING id", ACCESS],
      ["UPDATE admin.agent SET enabled = false WHERE name = $1", CATALOG],
      ["INSERT INTO ADMIN.MCP_SERVER (name) VALUES ($1)", CATALOG],
      ["WITH b AS (DELETE FROM admin.agent_binding WHERE agent = $1 RETURNING 1) SELECT count(*) FROM b", CATALOG],
      ["WITH s AS (DELETE FROM admin.session WHERE user_id = $1) UPDATE ONLY admin.agent SET enabled = true", ACCESS | CATALOG],
      ["WITH j AS (UPDATE runtime.job SET status = 'failed' RETURNING id) DELETE FROM admin.user_permission WHERE user_id = $1", ACCESS],
      // Whatever cannot be named: every topic.
      ["INSERT INTO t VALUES (1)", ALL_TOPICS],
      ["UPDATE t SET x = 1", ALL_TOPICS],
      ['UPDATE "admin"."agent" SET enabled = true', ALL_TOPICS],
      ["UPDATE admin.llm_provider SET name = $1", ALL_TOPICS],
      ["DELETE FROM public.t", ALL_TOPICS],
      ["SELECT * INTO copy FROM t", ALL_TOPICS],
      ["SELECT nextval('s')", ALL_TOPICS],
      ["SELECT set_config('x', 'y', false)", ALL_TOPICS],
      ["BEGIN; DELETE FROM runtime.job", ALL_TOPICS],
      ["TRUNCATE runtime.job, admin.agent", ALL_TOPICS],
      ["MERGE INTO runtime.job j USING x ON true WHEN MATCHED THEN UPDATE SET status = 'queued'", ALL_TOPICS],
      ["COPY runtime.job_event FROM STDIN", ALL_TOPICS],
      ["DO $$ BEGIN PERFORM 1; END $$", ALL_TOPICS],
      ["SET statement_timeout = 0", ALL_TOPICS],
      ["CREATE TABLE t (x int)", ALL_TOPICS],
      ["LOCK TABLE runtime.job", ALL_TOPICS]
    ]
    for (const [text, topics] of cases) expect([text, statementTopics(text)]).toEqual([text, topics])
  })
})

/** One protocol message: type byte, int32 length (itself included), body. */
const message = (type: string, ...parts: Array<string | Buffer>): Buffer => {
  const body = Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : p)))
  const header = Buffer.alloc(5)
  header.write(type, 0, "latin1")
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}
const startup = (() => {
  const b = Buffer.alloc(8)
  b.writeInt32BE(8, 0)
  b.writeInt32BE(196608, 4)
  return b
})()

describe("watchConnection", () => {
  test("however the bytes are split: a read is never counted; a write (a Bind of 1 MB parameters too) once it completes", () => {
    const read = Buffer.concat([
      message("P", "\0", "SELECT x FROM t WHERE y = $1\0", Buffer.alloc(2)),
      message("B", "\0\0", Buffer.alloc(64)),
      message("E", "\0", Buffer.alloc(4)),
      message("S")
    ])
    const write = Buffer.concat([
      message("P", "\0", "UPDATE t SET x = $1\0", Buffer.alloc(2)),
      message("B", "\0\0", Buffer.alloc(1024 * 1024)),
      message("E", "\0", Buffer.alloc(4)),
      message("S")
    ])
    const ready = Buffer.concat([message("2"), message("D", Buffer.alloc(100_000)), message("C", "SELECT 1\0"), message("Z", "I")])
    for (const size of [1, 3, 7, 1 << 20]) {
      let bumps = 0
      const w = watchConnection((topics) => void (topics !== 0 && bumps++))
      const feed = (f: (chunk: Buffer) => void, bytes: Buffer) => {
        for (let i = 0; i < bytes.length; i += size) f(bytes.subarray(i, i + size))
      }
      feed(w.sent, startup)
      feed(w.received, message("R", Buffer.alloc(4)))
      feed(w.sent, read)
      feed(w.received, ready)
      expect(bumps).toBe(0)
      // Counted when it completes (its ReadyForQuery), before its client hears so.
      feed(w.sent, write)
      expect(bumps).toBe(0)
      feed(w.received, ready)
      expect(bumps).toBe(1)
      feed(w.sent, message("Q", "SELECT 1\0"))
      feed(w.received, ready)
      expect(bumps).toBe(1)
      feed(w.sent, message("Q", "DELETE FROM t\0"))
      feed(w.received, ready)
      expect(bumps).toBe(2)
      w.closed()
      expect(bumps).toBe(3)
    }
  })
})

describe("DbWrites", () => {
  test("embedded and server: a read leaves the epoch alone; raw SQL writes, transactions and CTE writes move it", async () => {
    await statement("CREATE TABLE IF NOT EXISTS public.watched (x int)")
    const start = await epoch()
    expect(typeof start).toBe("number")
    await statement("SELECT count(*) FROM public.watched")
    await db.run(Effect.flatMap(SqlClient, (sql) => sql`SELECT x FROM public.watched WHERE x = ${1}`))
    expect(await epoch()).toBe(start)

    await db.run(Effect.flatMap(SqlClient, (sql) => sql`INSERT INTO public.watched (x) VALUES (${1})`))
    const afterInsert = await epoch()
    expect(afterInsert).not.toBe(start)

    await statement("WITH gone AS (DELETE FROM public.watched RETURNING x) SELECT count(*) FROM gone")
    const afterCte = await epoch()
    expect(afterCte).not.toBe(afterInsert)

    // Inside a transaction, the COMMIT (sent after the last statement) moves it again.
    let insideTx: number | undefined
    await db.run(
      Effect.flatMap(SqlClient, (sql) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO public.watched (x) VALUES (${2})`
            insideTx = (yield* DbWrites).epoch()
          })
        )
      )
    )
    expect(insideTx).not.toBe(afterCte)
    expect(await epoch()).not.toBe(insideTx)
  })

  test("the job side's writes (enqueue, claim, heartbeat, events, settle) leave the token and catalog caches warm; a user's or an agent's change empties only its own", async () => {
    let accessReads = 0
    let catalogReads = 0
    const { token, generation } = await db.run(
      Effect.gen(function* () {
        const writes = yield* DbWrites
        const tokens = cachedUntilWrite<string, number>(writes, { topic: "access", max: 10, ttlMs: 60_000 })
        const generations = cachedUntilWrite<string, number>(writes, { topic: "catalog", max: 10, ttlMs: 60_000 })
        return {
          token: () =>
            db.run(
              tokens(
                "t",
                Effect.sync(() => ++accessReads)
              )
            ),
          generation: () =>
            db.run(
              generations(
                "g",
                Effect.sync(() => ++catalogReads)
              )
            )
        }
      })
    )
    await token()
    await generation()
    expect([accessReads, catalogReads]).toEqual([1, 1])

    await db.run(
      Effect.gen(function* () {
        const store = yield* JobStore
        const job = yield* store.enqueue(
          { agent: "codebase-inventory", task: "t", workspace: { root: "/r", readOnly: [], outDir: "/r/out" }, limits: { timeoutSec: 60 } },
          "someone"
        )
        yield* store.claim("w", 60_000, job.id)
        yield* store.claim("w", 60_000)
        yield* store.heartbeat(job.id, "w", 60_000)
        yield* store.started(job.id, "1", "p/m")
        yield* store.appendEvent(job.id, { type: "message.delta", seq: 0, at: new Date().toISOString(), text: "x" })
        yield* store.settle(job.id, { status: "completed", summary: "s" }, null)
        yield* store.settleExpired
      })
    )
    await token()
    await generation()
    expect([accessReads, catalogReads]).toEqual([1, 1])

    await db.run(Effect.flatMap(Access, (a) => a.addUser("topical", "a long enough password", [])))
    await token()
    await generation()
    expect([accessReads, catalogReads]).toEqual([2, 1])

    await statement("UPDATE admin.agent SET enabled = enabled WHERE false")
    await token()
    await generation()
    expect([accessReads, catalogReads]).toEqual([2, 2])

    // A transaction: its writes count when each completes and again at its end, by topic.
    await db.run(Effect.flatMap(SqlClient, (sql) => sql.withTransaction(sql`UPDATE runtime.job SET heartbeat_at = now() WHERE false`)))
    await token()
    await generation()
    expect([accessReads, catalogReads]).toEqual([2, 2])
    await db.run(Effect.flatMap(SqlClient, (sql) => sql.withTransaction(sql`UPDATE admin.agent SET enabled = enabled WHERE false`)))
    await token()
    await generation()
    expect([accessReads, catalogReads]).toEqual([2, 3])
  })

  test("a server spoken to over TLS (unwatchable) is recognised from its URL; nothing is known of its writes", async () => {
    for (const tls of [
      "postgres://h/db?sslmode=require",
      "postgres://h/db?ssl=true",
      "postgres://h/db?sslmode=no-verify",
      "postgres://h/db?sslrootcert=/ca.pem"
    ]) {
      expect(usesTls(tls)).toBe(true)
    }
    for (const plain of ["postgres://h/db", "postgres://h/db?sslmode=disable", "postgres://h/db?ssl=false"])
      expect(usesTls(plain)).toBe(false)
    expect(unknownWrites.epoch()).toBeUndefined()
  })

  test("cachedUntilWrite: concurrent misses share a read; served from memory until a write, then read again; never past `until` or when nothing is known", async () => {
    await statement("CREATE TABLE IF NOT EXISTS public.kept (x int)")
    await statement("DELETE FROM public.kept")
    let reads = 0
    const { cached, stale, read } = await db.run(
      Effect.gen(function* () {
        const writes = yield* DbWrites
        const sql = yield* SqlClient
        const read = Effect.orDie(
          Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM public.kept`, (rows) => (reads++, rows[0]!.n))
        )
        const cache = cachedUntilWrite<string, number>(writes, { topic: "access", max: 10, ttlMs: 60_000 })
        const expiring = cachedUntilWrite<string, number>(writes, { topic: "access", max: 10, ttlMs: 60_000, until: () => Date.now() - 1 })
        return { cached: (key: string) => db.run(cache(key, read)), stale: () => db.run(expiring("k", read)), read }
      })
    )
    // Twenty requests at once share one read; later ones are answered from memory.
    expect(await Promise.all(Array.from({ length: 20 }, () => cached("a")))).toEqual(Array.from({ length: 20 }, () => 0))
    expect(await cached("a")).toBe(0)
    expect(reads).toBe(1)
    await statement("INSERT INTO public.kept VALUES (1)")
    // The write is visible to the next read.
    expect(await cached("a")).toBe(1)
    expect(reads).toBe(2)
    await stale()
    await stale()
    expect(reads).toBe(4)
    const unknown = cachedUntilWrite<string, number>(unknownWrites, { topic: "access", max: 10, ttlMs: 60_000 })
    await db.run(unknown("a", read))
    await db.run(unknown("a", read))
    expect(reads).toBe(6)
  })
})
