/**
 * Cached reads on a PostgreSQL server shared by several processes (src/db/serverWrites.ts, migration
 * 052): every table of the app's schemas notifies `kintsugi_writes` unless it is named high-churn; a
 * write by another connection is refused by the cached server once its notification arrived; one of
 * this process's writes at once; while the listener is down nothing is reused, and after it is back
 * caching resumes. Waits are on the epoch changing (DbWrites.changed), never on sleeps.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Layer, ManagedRuntime, Option } from "effect"
import { randomBytes } from "node:crypto"
import pg from "pg"
import { Access, AccessLive } from "../../src/access/Access.ts"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { ALL_AGENTS } from "../../src/agents/catalogQuery.ts"
import { type Db, DbWrites, makeDbLayer } from "../../src/db/Db.ts"
import { makeServerWrites, NOTIFYING_SCHEMAS, UNNOTIFIED_TABLES, WRITES_CHANNEL } from "../../src/db/serverWrites.ts"
import { adminStatement, usingServer, useTestDb, withDatabase } from "../support/db.ts"
import { makeTestAppRuntime, type TestRuntime } from "../support/testApp.ts"

setDefaultTimeout(60_000)

const db = useTestDb()

/** Tables of non-system schemas, and whether a statement-level AFTER INSERT/UPDATE/DELETE/TRUNCATE `notify_write` trigger covers them. */
const tableCoverage = () =>
  db.run(
    Effect.flatMap(
      SqlClient,
      (sql) =>
        sql<{ name: string; schema: string; notifies: boolean }>`
      SELECT t.schemaname || '.' || t.tablename AS name, t.schemaname AS schema, EXISTS (
        SELECT 1 FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = t.schemaname AND c.relname = t.tablename AND g.tgname = 'notify_write' AND g.tgenabled <> 'D'
          AND g.tgfoid = 'admin.notify_write'::regproc
          -- tgtype bits: ROW 1, BEFORE 2, INSERT 4, DELETE 8, UPDATE 16, TRUNCATE 32: after each, per statement
          AND g.tgtype = 60
      ) AS notifies
      FROM pg_tables t
      WHERE t.schemaname NOT IN ('pg_catalog', 'information_schema', 'public') AND t.schemaname NOT LIKE 'pg\\_%'
      ORDER BY 1`
    )
  )

describe("migration 052: which writes notify", () => {
  test("every table of the app's schemas notifies, except the named high-churn ones; a new schema or table must choose", async () => {
    const tables = await tableCoverage()
    expect([...new Set(tables.map((t) => t.schema))].sort()).toEqual([...NOTIFYING_SCHEMAS].sort())
    const neither = tables.filter((t) => !t.notifies && !UNNOTIFIED_TABLES.includes(t.name)).map((t) => t.name)
    expect(neither).toEqual([])
    // The list names only real tables, and none of them notifies (a stale entry would hide nothing, but mislead).
    expect(tables.filter((t) => UNNOTIFIED_TABLES.includes(t.name)).map((t) => [t.name, t.notifies])).toEqual(
      [...UNNOTIFIED_TABLES].sort().map((name) => [name, false])
    )
  })

  test("the tables cached reads depend on notify: tokens, sessions, users, permissions, the catalog generation", async () => {
    const notifying = new Set((await tableCoverage()).filter((t) => t.notifies).map((t) => t.name))
    for (const table of ["admin.api_token", "admin.session", "admin.app_user", "admin.user_permission", "admin.catalog_generation"]) {
      expect([table, notifying.has(table)]).toEqual([table, true])
    }
  })
})

// Two "processes" (a pool, Access and DbWrites each) on one server database.
type Side = ManagedRuntime.ManagedRuntime<Db | Access, unknown>
let name = ""
let url = ""
let a: Side | undefined
let b: Side | undefined
const side = (s: Side | undefined) => {
  if (s === undefined) throw new Error("the server database is not up")
  return s
}
const onA = <X, E>(f: (access: Access["Type"]) => Effect.Effect<X, E>) => side(a).runPromise(Effect.flatMap(Access, f))
const onB = <X, E>(f: (access: Access["Type"]) => Effect.Effect<X, E>) => side(b).runPromise(Effect.flatMap(Access, f))
const epochOf = (s: Side | TestRuntime) => (s as Side).runPromise(Effect.map(DbWrites, (w) => w.epoch()))
const changedOf = (s: Side | TestRuntime, from: number | undefined) =>
  (s as Side).runPromise(Effect.flatMap(DbWrites, (w) => w.changed(from)))
const usernameOf = (p: Option.Option<{ readonly username: string }>) => Option.getOrUndefined(Option.map(p, (x) => x.username))

/** A raw connection to the shared database (another process). */
const raw = async () => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return client
}

/** Reads these tokens twice each: the second is answered from memory (the first may write last_used_at). */
const warm = async (tokens: ReadonlyArray<string>) => {
  for (let round = 0; round < 2; round++) for (const t of tokens) await onA((x) => x.bearer(t))
}

const whyServer = "(PostgreSQL server only: skipped without DATABASE_URL)"

describe.skipIf(!usingServer())(`cached reads on a shared server ${whyServer}`, () => {
  beforeAll(async () => {
    const server = process.env["DATABASE_URL"] ?? ""
    name = `kintsugi_test_${randomBytes(6).toString("hex")}`
    await adminStatement(server, `CREATE DATABASE ${name}`)
    url = withDatabase(server, name)
    a = ManagedRuntime.make(Layer.provideMerge(AccessLive, makeDbLayer({ url, migrate: true })))
    await a.runtime()
    b = ManagedRuntime.make(Layer.provideMerge(AccessLive, makeDbLayer({ url })))
    await b.runtime()
  }, 120_000)
  afterAll(async () => {
    await a?.dispose()
    await b?.dispose()
    if (name !== "") await adminStatement(process.env["DATABASE_URL"] ?? "", `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }, 60_000)

  test("a token revoked, a user disabled, a permission removed, a session ended by another process: refused once its notification arrived", async () => {
    await onA((x) => x.addUser("carol", "a long enough password", ["agents.manage"]))
    await onA((x) => x.addUser("erin", "a long enough password", ["agents.manage"]))
    await onA((x) => x.addUser("dave", "a long enough password", ["agents.manage"]))
    const revoked = await onA((x) => x.createToken("carol", "to revoke"))
    const carol = await onA((x) => x.issueToken("carol", "kept"))
    const erin = await onA((x) => x.issueToken("erin", "disabled"))
    const session = (await onA((x) => x.signIn("carol", "a long enough password"))).token
    const all = [revoked.token, carol, erin]
    await warm(all)
    await onA((x) => x.session(session))

    let epoch = await epochOf(side(a))
    expect(typeof epoch).toBe("number")
    await onB((x) => x.revokeToken("carol", revoked.view.id))
    await changedOf(side(a), epoch)
    expect(Option.isNone(await onA((x) => x.bearer(revoked.token)))).toBe(true)

    await warm([carol, erin])
    epoch = await epochOf(side(a))
    await onB((x) => x.setDisabled("erin", true))
    await changedOf(side(a), epoch)
    expect(Option.isNone(await onA((x) => x.bearer(erin)))).toBe(true)
    expect(usernameOf(await onA((x) => x.bearer(carol)))).toBe("carol")

    await warm([carol])
    expect([...Option.getOrThrow(await onA((x) => x.bearer(carol))).permissions]).toEqual(["agents.manage"])
    epoch = await epochOf(side(a))
    await onB((x) => x.revoke("carol", "agents.manage"))
    await changedOf(side(a), epoch)
    expect([...Option.getOrThrow(await onA((x) => x.bearer(carol))).permissions]).toEqual([])

    await onA((x) => x.session(session))
    expect(usernameOf(await onA((x) => x.session(session)))).toBe("carol")
    epoch = await epochOf(side(a))
    await onB((x) => x.signOut(session))
    await changedOf(side(a), epoch)
    expect(Option.isNone(await onA((x) => x.session(session)))).toBe(true)
  })

  test("another process's writes are heard per topic: the job side's notify no cache, an agent's the catalog only, a token's access only", async () => {
    const other = await raw()
    try {
      const access = await side(a).runPromise(Effect.map(DbWrites, (w) => w.epoch("access")))
      const catalog = await side(a).runPromise(Effect.map(DbWrites, (w) => w.epoch("catalog")))
      expect(typeof access).toBe("number")
      // Notifications of one connection arrive in commit order: once the agent's is heard, the job side's were.
      await other.query("UPDATE runtime.project SET id = id WHERE false")
      await other.query("UPDATE memory.note SET id = id WHERE false")
      await other.query("UPDATE admin.agent SET enabled = enabled WHERE false")
      await side(a).runPromise(Effect.flatMap(DbWrites, (w) => w.changed(catalog, "catalog")))
      expect(await side(a).runPromise(Effect.map(DbWrites, (w) => w.epoch("access")))).toBe(access)
      const catalogNow = await side(a).runPromise(Effect.map(DbWrites, (w) => w.epoch("catalog")))
      await other.query("UPDATE admin.api_token SET name = name WHERE false")
      await side(a).runPromise(Effect.flatMap(DbWrites, (w) => w.changed(access, "access")))
      expect(await side(a).runPromise(Effect.map(DbWrites, (w) => w.epoch("catalog")))).toBe(catalogNow)
    } finally {
      await other.end()
    }
  })

  test("this process's own write: the very next authentication is refused, with no wait", async () => {
    await onA((x) => x.addUser("frank", "a long enough password", []))
    const t = await onA((x) => x.createToken("frank", "own"))
    await warm([t.token])
    expect(typeof (await epochOf(side(a)))).toBe("number")
    await onA((x) => x.revokeToken("frank", t.view.id))
    expect(Option.isNone(await onA((x) => x.bearer(t.token)))).toBe(true)
  })

  test("listener down: nothing is reused and a revocation made meanwhile is honoured at once; back up: caching resumes", async () => {
    await onA((x) => x.addUser("gina", "a long enough password", []))
    const during = await onA((x) => x.createToken("gina", "revoked while down"))
    const after = await onA((x) => x.createToken("gina", "revoked after"))
    await warm([during.token, after.token])
    const epoch = await epochOf(side(a))
    expect(typeof epoch).toBe("number")

    const other = await raw()
    const admin = new pg.Client({ connectionString: process.env["DATABASE_URL"] })
    await admin.connect()
    try {
      // No new connection to the database (the listener cannot come back) while it is down.
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
      const killed = await admin.query(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = $1 AND application_name = 'kintsugi-listener'",
        [name]
      )
      expect(killed.rows.length).toBe(2) // a's and b's listeners
      await changedOf(side(a), epoch)
      expect(await epochOf(side(a))).toBeUndefined()
      // Another process's write, notified to nobody: honoured at the next read.
      await other.query("UPDATE admin.api_token SET revoked_at = now() WHERE id = $1", [during.view.id])
      expect(Option.isNone(await onA((x) => x.bearer(during.token)))).toBe(true)
      expect(usernameOf(await onA((x) => x.bearer(after.token)))).toBe("gina")

      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
      await changedOf(side(a), undefined)
      expect(typeof (await epochOf(side(a)))).toBe("number")
      // What was cached before the drop is not reused: the revocation its lost notification carried holds.
      expect(Option.isNone(await onA((x) => x.bearer(during.token)))).toBe(true)
      // Cached again: a write that notifies nothing (triggers off for that session) is not seen...
      await warm([after.token])
      await other.query("SET session_replication_role = replica")
      await other.query("UPDATE admin.api_token SET revoked_at = now() WHERE id = $1", [after.view.id])
      const cachedEpoch = await epochOf(side(a))
      expect(usernameOf(await onA((x) => x.bearer(after.token)))).toBe("gina")
      // ...until a notification says the table changed.
      await other.query("SELECT pg_notify($1, 'admin.api_token')", [WRITES_CHANNEL])
      await changedOf(side(a), cachedEpoch)
      expect(Option.isNone(await onA((x) => x.bearer(after.token)))).toBe(true)
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
      await admin.end()
      await other.end()
    }
  })

  test("a pool connection that negotiates TLS (PGSSLMODE) turns caching off for good: its traffic cannot be watched", async () => {
    const server = makeServerWrites(url)
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          yield* server.listen
          yield* server.writes.changed(undefined)
          expect(typeof server.writes.epoch()).toBe("number")
          server.stream({ ssl: true }).destroy()
          expect(server.writes.epoch()).toBeUndefined()
          server.stream({ ssl: false }).destroy()
          expect(server.writes.epoch()).toBeUndefined()
        })
      )
    )
  })

  test("a new pool connection empties the caches once (its pid may have been another process's, whose notifications are now ignored)", async () => {
    const server = makeServerWrites(url)
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          yield* server.listen
          yield* server.writes.changed(undefined)
          const before = server.writes.epoch()
          const socket = server.stream()
          // BackendKeyData: 'K', length 12, pid, secret key.
          const key = Buffer.alloc(13)
          key.write("K", 0)
          key.writeInt32BE(12, 1)
          key.writeInt32BE(424242, 5)
          socket.emit("data", key)
          expect(server.writes.epoch()).not.toBe(before)
          socket.destroy()
        })
      )
    )
  })

  test("behind a pooler (the server process differs from the one given at connect) the listener is refused: caching stays off", async () => {
    // A pooler stand-in: forwards a connection both ways, handing the client another BackendKeyData pid,
    // as a transaction-mode pooler does (its own key; each statement may run on another server process).
    const target = new URL(url)
    const proxy = Bun.listen<{ upstream?: Awaited<ReturnType<typeof Bun.connect>>; pending: Array<Uint8Array> }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open: (client) => {
          client.data = { pending: [] }
          let buffered = Buffer.alloc(0)
          void Bun.connect({
            hostname: target.hostname,
            port: Number(target.port || 5432),
            socket: {
              open: (up) => {
                client.data.upstream = up
                for (const chunk of client.data.pending.splice(0)) up.write(chunk)
              },
              data: (_, chunk) => {
                // Rewrite the pid of BackendKeyData ('K', length 12); pass everything else through.
                buffered = Buffer.concat([buffered, chunk])
                let at = 0
                while (buffered.length - at >= 5) {
                  const length = buffered.readInt32BE(at + 1)
                  if (buffered.length - at < 1 + length) break
                  if (buffered[at] === 0x4b) buffered.writeInt32BE(buffered.readInt32BE(at + 5) + 1, at + 5)
                  at += 1 + length
                }
                client.write(buffered.subarray(0, at))
                buffered = buffered.subarray(at)
              },
              close: () => void client.end()
            }
          })
        },
        data: (client, chunk) => {
          if (client.data.upstream === undefined) client.data.pending.push(new Uint8Array(chunk))
          else client.data.upstream.write(chunk)
        },
        close: (client) => void client.data.upstream?.end()
      }
    })
    try {
      const pooled = new URL(url)
      pooled.hostname = "127.0.0.1"
      pooled.port = String(proxy.port)
      const direct = makeServerWrites(url)
      const behind = makeServerWrites(pooled.toString())
      await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            yield* direct.listen
            yield* behind.listen
            // The direct listener comes up; the one behind the stand-in never does (its check fails, it stops).
            yield* direct.writes.changed(undefined)
            expect(typeof direct.writes.epoch()).toBe("number")
            const up = yield* Effect.timeout(behind.writes.changed(undefined), "3 seconds").pipe(Effect.option)
            expect(Option.isNone(up)).toBe(true)
            expect(behind.writes.epoch()).toBeUndefined()
          })
        )
      )
    } finally {
      proxy.stop(true)
    }
  })

  test("a second serve-like app on the same database sees a catalog change made by the first", async () => {
    const first = await makeTestAppRuntime({ db: makeDbLayer({ url }) })
    const second = await makeTestAppRuntime({ db: makeDbLayer({ url }) })
    try {
      const before = await second.runPromise(Effect.flatMap(AgentStore, (s) => s.page(ALL_AGENTS)))
      expect(before.entries.some((e) => e.name === "copied-risk")).toBe(false)
      const epoch = await epochOf(second)
      expect(typeof epoch).toBe("number")
      await first.runPromise(Effect.flatMap(AgentStore, (s) => s.copy("risk-quality", "copied-risk", "tester")))
      await changedOf(second, epoch)
      const after = await second.runPromise(Effect.flatMap(AgentStore, (s) => s.page(ALL_AGENTS)))
      expect(after.entries.some((e) => e.name === "copied-risk")).toBe(true)
      expect(after.generation).not.toBe(before.generation)
    } finally {
      await first.dispose()
      await second.dispose()
    }
  })
})
