/**
 * What the process knows of writes (src/db/DbWrites.ts): on the embedded database every statement that
 * may write moves the epoch — raw SQL, transactions, data-modifying CTEs — and a read-only SELECT does
 * not (on a PostgreSQL server too: the pool passes the same watcher); a value cached until a write is
 * read again after one; over TLS nothing is known.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { DbWrites } from "../../src/db/Db.ts"
import { cachedUntilWrite, isReadOnlySql, unknownWrites, watchConnection } from "../../src/db/DbWrites.ts"
import { usesTls } from "../../src/db/serverWrites.ts"
import { useTestDb } from "../support/db.ts"

setDefaultTimeout(60_000)

const db = useTestDb()
const epoch = () => db.run(Effect.map(DbWrites, (w) => w.epoch()))
const statement = (text: string) => db.run(Effect.flatMap(SqlClient, (sql) => sql.unsafe(text)))

describe("isReadOnlySql", () => {
  test("a plain SELECT or a transaction opened or rolled back leaves data alone; anything that may write does not", () => {
    for (const read of [
      "SELECT 1",
      "  select n FROM admin.catalog_generation",
      "SELECT u.updated_at, t.last_used_at FROM x t WHERE t.deleted_at IS NULL",
      "BEGIN",
      "SAVEPOINT effect_sql_1",
      "RELEASE SAVEPOINT effect_sql_1",
      "ROLLBACK TO SAVEPOINT effect_sql_1",
      "ROLLBACK"
    ]) {
      expect(isReadOnlySql(read)).toBe(true)
    }
    for (const write of [
      "INSERT INTO t VALUES (1)",
      "UPDATE t SET x = 1",
      "DELETE FROM t",
      "WITH gone AS (DELETE FROM t RETURNING x) SELECT count(*) FROM gone",
      "SELECT * INTO copy FROM t",
      "SELECT * FROM t FOR UPDATE",
      "SELECT nextval('s')",
      "SELECT set_config('x', 'y', false)",
      "SELECT pg_notify('c', 'p')",
      "COMMIT",
      "BEGIN; DELETE FROM t",
      "TRUNCATE t",
      "CREATE TABLE t (x int)"
    ]) {
      expect(isReadOnlySql(write)).toBe(false)
    }
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
    const read = Buffer.concat([message("P", "\0", "SELECT x FROM t WHERE y = $1\0", Buffer.alloc(2)), message("B", "\0\0", Buffer.alloc(64)), message("E", "\0", Buffer.alloc(4)), message("S")])
    const write = Buffer.concat([message("P", "\0", "UPDATE t SET x = $1\0", Buffer.alloc(2)), message("B", "\0\0", Buffer.alloc(1024 * 1024)), message("E", "\0", Buffer.alloc(4)), message("S")])
    const ready = Buffer.concat([message("2"), message("D", Buffer.alloc(100_000)), message("C", "SELECT 1\0"), message("Z", "I")])
    for (const size of [1, 3, 7, 1 << 20]) {
      let bumps = 0
      const w = watchConnection(() => void bumps++)
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
    await db.run(Effect.flatMap(SqlClient, (sql) =>
      sql.withTransaction(Effect.gen(function* () {
        yield* sql`INSERT INTO public.watched (x) VALUES (${2})`
        insideTx = (yield* DbWrites).epoch()
      }))
    ))
    expect(insideTx).not.toBe(afterCte)
    expect(await epoch()).not.toBe(insideTx)
  })

  test("a server spoken to over TLS (unwatchable) is recognised from its URL; nothing is known of its writes", async () => {
    for (const tls of ["postgres://h/db?sslmode=require", "postgres://h/db?ssl=true", "postgres://h/db?sslmode=no-verify", "postgres://h/db?sslrootcert=/ca.pem"]) {
      expect(usesTls(tls)).toBe(true)
    }
    for (const plain of ["postgres://h/db", "postgres://h/db?sslmode=disable", "postgres://h/db?ssl=false"]) expect(usesTls(plain)).toBe(false)
    expect(unknownWrites.epoch()).toBeUndefined()
  })

  test("cachedUntilWrite: concurrent misses share a read; served from memory until a write, then read again; never past `until` or when nothing is known", async () => {
    await statement("CREATE TABLE IF NOT EXISTS public.kept (x int)")
    await statement("DELETE FROM public.kept")
    let reads = 0
    const { cached, stale, read } = await db.run(Effect.gen(function* () {
      const writes = yield* DbWrites
      const sql = yield* SqlClient
      const read = Effect.orDie(Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM public.kept`, (rows) => (reads++, rows[0]!.n)))
      const cache = cachedUntilWrite<string, number>(writes, { max: 10, ttlMs: 60_000 })
      const expiring = cachedUntilWrite<string, number>(writes, { max: 10, ttlMs: 60_000, until: () => Date.now() - 1 })
      return { cached: (key: string) => db.run(cache(key, read)), stale: () => db.run(expiring("k", read)), read }
    }))
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
    const unknown = cachedUntilWrite<string, number>(unknownWrites, { max: 10, ttlMs: 60_000 })
    await db.run(unknown("a", read))
    await db.run(unknown("a", read))
    expect(reads).toBe(6)
  })
})
