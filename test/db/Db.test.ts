import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { ConfigProvider, Effect, Layer } from "effect"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { type Db, DbLive, makeDbLayer } from "../../src/db/Db.ts"
import { migrateMain } from "../../src/db/migrateCommand.ts"
import { describeMigrationFailure, listMigrations, migrationsDir, runMigrations, runMigrationsFrom } from "../../src/db/migrations.ts"
import { createTestDataDir, testDbLayer, useTestDb, usingServer } from "../support/db.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const db = useTestDb()

/** A copy of the project's migrations plus `extra` files, in a temp folder. */
const createMigrationsDir = (extra: Record<string, string>) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-migrations-"))
  fs.cpSync(migrationsDir, dir, { recursive: true })
  for (const [name, text] of Object.entries(extra)) fs.writeFileSync(path.join(dir, name), text)
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

const buildLayer = <A, E>(layer: Layer.Layer<A, E>) => Effect.scoped(Layer.build(layer))

describe("migrations", () => {
  test("every migration file is applied and recorded once", async () => {
    const files = Effect.runSync(listMigrations())
    expect(files[0]).toMatchObject({ id: 1, name: "schemas" })
    const recorded = await db.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ migrationId: number; name: string }>`SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id`
      )
    )
    expect(recorded.map((r) => [r.migrationId, r.name])).toEqual(files.map((f) => [f.id, f.name]))
    const schemas = await db.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ nspname: string }>`SELECT nspname FROM pg_namespace WHERE nspname IN ('admin', 'runtime') ORDER BY 1`
      )
    )
    expect(schemas.map((s) => s.nspname)).toEqual(["admin", "runtime"])
  })

  test("a second run applies nothing", async () => {
    expect(await db.run(runMigrations)).toEqual([])
  })

  test("a new file in the folder is picked up and applied once", async () => {
    const m = createMigrationsDir({
      "900000_probe.sql": "CREATE TABLE runtime.migration_probe (id int); INSERT INTO runtime.migration_probe VALUES (1);"
    })
    try {
      expect(await db.run(runMigrationsFrom(m.dir))).toEqual([[900000, "probe"]])
      expect(await db.run(runMigrationsFrom(m.dir))).toEqual([])
      const rows = await db.run(Effect.flatMap(SqlClient, (sql) => sql`SELECT count(*)::int AS n FROM runtime.migration_probe`))
      expect(rows).toEqual([{ n: 1 }])
    } finally {
      m.cleanup()
    }
  })

  test("a failing migration is a MigrationError naming it and PostgreSQL's reason, and rolls back", async () => {
    const m = createMigrationsDir({
      "900001_good.sql": "CREATE TABLE runtime.rolled_back (id int);",
      "900002_bad.sql": "SELECT no_such_column FROM runtime.rolled_back;"
    })
    try {
      const error = await db.run(Effect.flip(runMigrationsFrom(m.dir)))
      expect(error._tag).toBe("MigrationError")
      expect(error._tag === "MigrationError" && error.reason).toBe("failed")
      expect(error.message).toContain("900002_bad")
      expect(describeMigrationFailure(error)).toContain(`column "no_such_column" does not exist`)
      const exists = await db.run(Effect.flatMap(SqlClient, (sql) => sql`SELECT to_regclass('runtime.rolled_back') IS NOT NULL AS present`))
      expect(exists).toEqual([{ present: false }])
    } finally {
      m.cleanup()
    }
  })
})

describe("queries", () => {
  test("round trip: camelCase in TypeScript, snake_case in SQL, JSON stored verbatim", async () => {
    const row = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        yield* sql`CREATE TABLE runtime.round_trip (id serial PRIMARY KEY, display_name text NOT NULL, payload jsonb NOT NULL)`
        const payload = { snake_key: 1, camelKey: "two" }
        yield* sql`INSERT INTO runtime.round_trip ${sql.insert({ displayName: "Ada", payload: JSON.stringify(payload) })}`
        return yield* sql`SELECT id, display_name, payload FROM runtime.round_trip`
      })
    )
    expect(row).toEqual([{ id: 1, displayName: "Ada", payload: { snake_key: 1, camelKey: "two" } }])
  })

  test("int8 and count(*) come back as strings (cast to int, or decode with NumberFromString)", async () => {
    const rows = await db.run(
      Effect.flatMap(SqlClient, (sql) => sql`SELECT count(*) AS total, count(*)::int AS total_int, 9007199254740993::int8 AS big`)
    )
    expect(rows).toEqual([{ total: "1", totalInt: 1, big: "9007199254740993" }])
  })

  test("20 concurrent queries from the pool all succeed with their own results", async () => {
    const results = await db.run(
      Effect.flatMap(SqlClient, (sql) =>
        Effect.all(
          Array.from({ length: 20 }, (_, i) =>
            i % 3 === 0
              ? sql.withTransaction(Effect.map(sql<{ v: string }>`SELECT ${String(i)}::text AS v, ${"tx"}::text AS kind`, (r) => r[0]?.v))
              : Effect.map(sql<{ v: number }>`SELECT ${i}::int AS v`, (r) => String(r[0]?.v))
          ),
          { concurrency: "unbounded" }
        )
      )
    )
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => String(i)))
  })

  test("a failed statement leaves the connection in sync, and a failed transaction rolls back", async () => {
    const after = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const error = yield* Effect.flip(sql`SELECT ${1}::int + no_such_column`)
        expect(error._tag).toBe("SqlError")
        yield* sql`CREATE TABLE runtime.tx_probe (id int)`
        yield* Effect.flip(sql.withTransaction(Effect.zipRight(sql`INSERT INTO runtime.tx_probe VALUES (1)`, sql`SELECT 1/0`)))
        return yield* sql`SELECT ${42}::int AS answer, (SELECT count(*)::int FROM runtime.tx_probe) AS rows`
      })
    )
    expect(after).toEqual([{ answer: 42, rows: 0 }])
  })

  test("a long statement does not block the main event loop", async () => {
    let last = performance.now()
    let maxGap = 0
    let ticks = 0
    const heartbeat = setInterval(() => {
      const now = performance.now()
      maxGap = Math.max(maxGap, now - last)
      last = now
      ticks++
    }, 10)
    try {
      await db.run(Effect.flatMap(SqlClient, (sql) => sql`SELECT pg_sleep(1)`))
    } finally {
      clearInterval(heartbeat)
    }
    // Blocked, the loop would show one gap as long as the statement (1000 ms) and hardly a tick; a
    // loaded machine stays below.
    expect(ticks).toBeGreaterThan(10)
    expect(maxGap).toBeLessThan(1000)
  })
})

describe("embedded data dir", () => {
  test("persists across a restart of the layer; is refused while open; a stale lock file is taken over", async () => {
    const { dataDir, cleanup } = await createTestDataDir()
    try {
      const exited = Bun.spawnSync(["true"]) // a pid that no longer runs
      fs.writeFileSync(`${dataDir}.lock`, String(exited.pid))
      await Effect.runPromise(
        Effect.provide(
          Effect.gen(function* () {
            const sql = yield* SqlClient
            yield* sql`CREATE TABLE runtime.kept (note text)`
            yield* sql`INSERT INTO runtime.kept VALUES ('written before the restart')`
            const second = yield* Effect.flip(buildLayer(makeDbLayer({ dataDir })))
            expect(second.message).toContain("already open in this process")
          }),
          makeDbLayer({ dataDir })
        )
      )
      expect(fs.existsSync(`${dataDir}.lock`)).toBe(false)
      // pg_control's cluster state (int32 after system id, control and catalog versions): 1 = shut down cleanly.
      expect(fs.readFileSync(path.join(dataDir, "global", "pg_control")).readInt32LE(16)).toBe(1)
      const rows = await Effect.runPromise(
        Effect.provide(
          Effect.flatMap(SqlClient, (sql) => sql`SELECT note FROM runtime.kept`),
          makeDbLayer({ dataDir })
        )
      )
      expect(rows).toEqual([{ note: "written before the restart" }])
    } finally {
      cleanup()
    }
  })

  test("a data dir held by another live process is refused with a DbError", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-lock-"))
    const dataDir = path.join(dir, "data")
    try {
      fs.writeFileSync(`${dataDir}.lock`, String(process.ppid))
      const other = await Effect.runPromise(Effect.flip(buildLayer(makeDbLayer({ dataDir }))))
      expect(other).toMatchObject({ _tag: "DbError" })
      expect(other.message).toContain(`in use by process ${process.ppid}`)
      expect(fs.readFileSync(`${dataDir}.lock`, "utf8")).toBe(String(process.ppid))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("configuration", () => {
  const withEnv = (env: Record<string, string>) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

  test("an unreachable DATABASE_URL is a DbError naming host and port, without the password", async () => {
    const error = await Effect.runPromise(
      Effect.flip(buildLayer(DbLive)).pipe(withEnv({ DATABASE_URL: "postgres://kintsugi:s3cret-pw@127.0.0.1:1/kintsugi" }))
    )
    expect(error._tag).toBe("DbError")
    expect(error.message).toStartWith("cannot reach the database at 127.0.0.1:1/kintsugi: ")
    expect(error.message).not.toContain("s3cret-pw")
    expect(error.message).not.toContain("\n")
  })

  test("a DATABASE_URL that is not a postgres URL is a DbError that does not echo it", async () => {
    const error = await Effect.runPromise(Effect.flip(buildLayer(DbLive)).pipe(withEnv({ DATABASE_URL: "mysql://root:s3cret-pw@db/x" })))
    expect(error.message).toStartWith("DATABASE_URL is not a postgres:// URL")
    expect(error.message).not.toContain("s3cret-pw")
  })

  test.if(usingServer())("a missing database on a reachable server says so, without the password", async () => {
    const url = new URL(process.env["DATABASE_URL"] ?? "")
    url.pathname = "/kintsugi_no_such_database"
    url.password = "s3cret-pw"
    const error = await Effect.runPromise(Effect.flip(buildLayer(makeDbLayer({ url: url.toString() }))))
    expect(error.message).toContain(`database "kintsugi_no_such_database" does not exist`)
    expect(error.message).not.toContain("s3cret-pw")
  })
})

describe("kintsugi migrate", () => {
  const capture = () => {
    const lines: Array<string> = []
    return { lines, write: (line: string) => void lines.push(line) }
  }

  test("on an up-to-date database: says so, exit code 0", async () => {
    const context = await db.run(Effect.context<Db>())
    const out = capture()
    const err = capture()
    expect(await migrateMain({ layer: Layer.succeedContext(context), out: out.write, err: err.write })).toBe(0)
    expect(out.lines).toEqual([expect.stringMatching(/^up to date \(\d+ migrations?\)$/)])
    expect(err.lines).toEqual([])
  })

  test("on an empty database: lists what it applied, then is up to date", async () => {
    const out = capture()
    const err = capture()
    const files = Effect.runSync(listMigrations())
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const layer = Layer.succeedContext(yield* Layer.build(testDbLayer({ migrate: false })))
          expect(yield* Effect.promise(() => migrateMain({ layer, out: out.write, err: err.write }))).toBe(0)
          expect(yield* Effect.promise(() => migrateMain({ layer, out: out.write, err: err.write }))).toBe(0)
        })
      )
    )
    expect(out.lines).toEqual([
      ...files.map((f) => `applied ${path.basename(f.path)}`),
      `${files.length} migration${files.length === 1 ? "" : "s"} applied`,
      `up to date (${files.length} migration${files.length === 1 ? "" : "s"})`
    ])
    expect(err.lines).toEqual([])
  }, 60_000)

  test("on an unreachable database: one error line without the password, exit code 1", async () => {
    const out = capture()
    const err = capture()
    const layer = makeDbLayer({ url: "postgres://kintsugi:s3cret-pw@127.0.0.1:1/kintsugi" })
    expect(await migrateMain({ layer, out: out.write, err: err.write })).toBe(1)
    expect(out.lines).toEqual([])
    expect(err.lines).toEqual([expect.stringMatching(/^kintsugi migrate: cannot reach the database at 127\.0\.0\.1:1\/kintsugi: /)])
    expect(err.lines.join("")).not.toContain("s3cret-pw")
  })
})
