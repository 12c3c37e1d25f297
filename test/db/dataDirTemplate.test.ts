/**
 * Embedded data-dir templates: a new data dir starts as a private, migrated copy of a read-only
 * template; an existing database is never replaced; a template dir other users could write is ignored.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { buildDataDirTemplate, makeDbLayer } from "../../src/db/Db.ts"
import { findTemplate, seedDataDir, templateKey } from "../../src/db/dataDirTemplate.ts"
import { listMigrations } from "../../src/db/migrations.ts"

// initdb + every migration once, then a few opens: slow on a loaded 2-core machine.
setDefaultTimeout(120_000)

let root: string
let templates: string
let template: string
const saved = process.env["KINTSUGI_DB_TEMPLATES"]

const treeHash = (dir: string): string => {
  const hash = createHash("sha256")
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(d, e.name)
      hash.update(`${path.relative(dir, p)}\0${(fs.statSync(p).mode & 0o777).toString(8)}\0`)
      if (e.isDirectory()) walk(p)
      else hash.update(fs.readFileSync(p))
    }
  }
  walk(dir)
  return hash.digest("hex")
}

const query = <A>(dataDir: string, sql: (s: SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(Layer.build(makeDbLayer({ dataDir, template: true })), (ctx) => Effect.provide(Effect.flatMap(SqlClient, sql), ctx))
    )
  )

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-template-test-")))
  templates = path.join(root, "templates")
  process.env["KINTSUGI_DB_TEMPLATES"] = templates
  template = (await buildDataDirTemplate()) ?? ""
}, 600_000)
afterAll(() => {
  if (saved === undefined) delete process.env["KINTSUGI_DB_TEMPLATES"]
  else process.env["KINTSUGI_DB_TEMPLATES"] = saved
  for (const p of [templates]) if (fs.existsSync(p)) fs.chmodSync(p, 0o700)
  Bun.spawnSync(["chmod", "-R", "u+w", root])
  fs.rmSync(root, { recursive: true, force: true })
})

describe("data-dir templates", () => {
  test("the template is private, read-only, complete and keyed by PGlite and the migrations", () => {
    expect(template).toBe(path.join(templates, templateKey(), "data"))
    expect(fs.statSync(templates).mode & 0o777).toBe(0o700)
    expect(fs.statSync(template).mode & 0o777).toBe(0o500)
    expect(fs.statSync(path.join(template, "PG_VERSION")).mode & 0o777).toBe(0o400)
    expect(fs.existsSync(path.join(path.dirname(template), "ready"))).toBe(true)
    expect(fs.readdirSync(templates)).toEqual([templateKey()]) // no build dir left behind
  })

  test("a new data dir is a private (0700) copy with every migration applied; the template stays untouched", async () => {
    const before = treeHash(template)
    const dataDir = path.join(root, "a", "data")
    const migrations = Effect.runSync(listMigrations())
    const applied = await query(dataDir, (sql) =>
      Effect.gen(function* () {
        yield* sql`CREATE TABLE scratch_probe (v int)`
        yield* sql`INSERT INTO scratch_probe VALUES (1)`
        return (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM effect_sql_migrations`)[0]?.n
      })
    )
    expect(applied).toBe(migrations.length)
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700)
    const modes = new Set<number>()
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name)
        if (e.isDirectory()) {
          expect(`${p} ${(fs.statSync(p).mode & 0o777).toString(8)}`).toBe(`${p} 700`)
          walk(p)
        } else modes.add(fs.statSync(p).mode & 0o022)
      }
    }
    walk(dataDir)
    // Copied files are 0600; files PGlite creates later get its own modes, inside the 0700 tree as before.
    expect([...modes]).toEqual([0])
    expect(treeHash(template)).toBe(before)
    expect(fs.readdirSync(path.dirname(dataDir)).sort()).toEqual(["data"]) // no staging copy, lock released
  })

  test("an existing database is never replaced by the template", async () => {
    const dataDir = path.join(root, "b", "data")
    await query(dataDir, (sql) => Effect.zipRight(sql`CREATE TABLE keep_me (v int)`, sql`INSERT INTO keep_me VALUES (42)`))
    const rows = await query(dataDir, (sql) => sql<{ v: number }>`SELECT v FROM keep_me`)
    expect(rows).toEqual([{ v: 42 }])
    expect(seedDataDir(dataDir, template)).toBe("exists")
    const other = path.join(root, "c", "data")
    fs.mkdirSync(other, { recursive: true })
    fs.writeFileSync(path.join(other, "something"), "x")
    expect(seedDataDir(other, template)).toBe("exists")
    expect(fs.readdirSync(other)).toEqual(["something"])
  })

  test("a template dir other users can write, or a symlinked one, is ignored", () => {
    expect(findTemplate(templates)).toBe(template)
    fs.chmodSync(templates, 0o770)
    try {
      expect(findTemplate(templates)).toBeUndefined()
    } finally {
      fs.chmodSync(templates, 0o700)
    }
    const link = path.join(root, "linked-templates")
    fs.symlinkSync(templates, link)
    expect(findTemplate(link)).toBeUndefined()
    expect(seedDataDir(path.join(root, "d", "data"), findTemplate(link))).toBe("no-template")
  })
})
