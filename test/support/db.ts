/**
 * A fresh, migrated database per test file: a throwaway database on the `DATABASE_URL` server when it is
 * set, else an embedded one copied from a migrated template data dir (built once, cached in os.tmpdir()).
 */
import { afterAll, beforeAll } from "bun:test"
import { type Duration, Effect, type Exit, Layer, ManagedRuntime } from "effect"
import { createHash, randomBytes } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import pg from "pg"
import { type Db, type DbError, isProcessAlive, makeDbLayer } from "../../src/db/Db.ts"
import { listMigrations } from "../../src/db/migrations.ts"

const TEMPLATE_ROOT = path.join(os.tmpdir(), "kintsugi-test-db")
const STALE_TEMPLATE_MS = 24 * 3600 * 1000

type TemplateKind = "migrated" | "empty"

/** The key of a template: its kind, PGlite's version and (migrated) every migration file's name and content. */
const templateKey = (kind: TemplateKind): string => {
  const hash = createHash("sha256").update(kind)
  const pglite = path.join(path.dirname(Bun.fileURLToPath(import.meta.resolve("@electric-sql/pglite"))), "..", "package.json")
  hash.update(JSON.parse(fs.readFileSync(pglite, "utf8")).version)
  if (kind === "migrated") {
    for (const file of Effect.runSync(listMigrations())) hash.update(`\0${file.id}_${file.name}\0`).update(fs.readFileSync(file.path))
  }
  return `${kind}-${hash.digest("hex").slice(0, 16)}`
}

const buildTemplate = async (target: string, migrate: boolean): Promise<void> => {
  const building = `${target}.building-${process.pid}-${randomBytes(4).toString("hex")}`
  try {
    await Effect.runPromise(Effect.scoped(Layer.build(makeDbLayer({ dataDir: path.join(building, "data"), migrate }))))
    fs.writeFileSync(path.join(building, "ready"), "")
    fs.renameSync(building, target) // atomic; another process may have won the race, which is fine
  } catch (e) {
    if (!fs.existsSync(path.join(target, "ready"))) throw e
  } finally {
    fs.rmSync(building, { recursive: true, force: true })
  }
  for (const other of fs.readdirSync(TEMPLATE_ROOT)) {
    const p = path.join(TEMPLATE_ROOT, other)
    if (p !== target && Date.now() - fs.statSync(p).mtimeMs > STALE_TEMPLATE_MS) fs.rmSync(p, { recursive: true, force: true })
  }
}

const templates = new Map<TemplateKind, Promise<string>>()
/**
 * A template data dir, cleanly shut down: `migrated` (the current migrations applied) or `empty` (just
 * initdb). Built at most once (initdb + migrate: seconds), then reused from os.tmpdir() by later runs.
 */
export const templateDataDir = (kind: TemplateKind = "migrated"): Promise<string> => {
  const existing = templates.get(kind)
  if (existing !== undefined) return existing
  const made = (async () => {
    const target = path.join(TEMPLATE_ROOT, templateKey(kind))
    fs.mkdirSync(TEMPLATE_ROOT, { recursive: true })
    if (!fs.existsSync(path.join(target, "ready"))) await buildTemplate(target, kind === "migrated")
    return path.join(target, "data")
  })()
  templates.set(kind, made)
  return made
}

// A test process killed before its afterAll (a `timeout`, Ctrl-C) leaves its copy behind: remove copies
// whose lock names a dead process, or that never got a lock within an hour (and empty socket dirs).
const sweepAbandoned = () => {
  for (const name of fs.readdirSync(os.tmpdir())) {
    const dir = path.join(os.tmpdir(), name)
    try {
      const old = Date.now() - fs.statSync(dir).mtimeMs > 3600_000
      if (name.startsWith("kintsugi-testdb-")) {
        const lock = path.join(dir, "data.lock")
        const holder = fs.existsSync(lock) ? Number(fs.readFileSync(lock, "utf8")) : undefined
        if (holder === undefined ? old : !isProcessAlive(holder)) fs.rmSync(dir, { recursive: true, force: true })
      } else if (name.startsWith("kintsugi-db-") && old && fs.readdirSync(dir).length === 0) {
        fs.rmdirSync(dir)
      }
    } catch {
      // raced with its owner or another sweeper: fine
    }
  }
}

/** A private copy of a template data dir and its cleanup. */
export const createTestDataDir = async (
  kind: TemplateKind = "migrated"
): Promise<{ readonly dataDir: string; readonly cleanup: () => void }> => {
  const source = await templateDataDir(kind)
  sweepAbandoned()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-testdb-"))
  const dataDir = path.join(dir, "data")
  fs.cpSync(source, dataDir, { recursive: true, mode: fs.constants.COPYFILE_FICLONE }) // a reflink where the fs has them
  return { dataDir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

/** `url` naming another database on the same server. */
export const withDatabase = (url: string, database: string) => {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

/** Runs one statement on a server outside any pool (CREATE/DROP DATABASE cannot run in a transaction). */
export const adminStatement = async (url: string, statement: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/** A database `kintsugi_test_<random>` on the server; dropped (connections forced off) at close. */
const serverTestLayer = (url: string, migrate: boolean, statementTimeout?: Duration.DurationInput): Layer.Layer<Db, DbError> =>
  Layer.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(
        Effect.promise(async () => {
          const name = `kintsugi_test_${randomBytes(6).toString("hex")}`
          await adminStatement(url, `CREATE DATABASE ${name}`)
          return name
        }),
        (name) => Effect.promise(() => adminStatement(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
      ),
      (name) => makeDbLayer({ url: withDatabase(url, name), migrate, statementTimeout })
    )
  )

const embeddedTestLayer = (kind: TemplateKind, statementTimeout?: Duration.DurationInput): Layer.Layer<Db, DbError> =>
  Layer.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(
        Effect.promise(() => createTestDataDir(kind)),
        (dir) => Effect.sync(dir.cleanup)
      ),
      (dir) => makeDbLayer({ dataDir: dir.dataDir, statementTimeout })
    )
  )

/**
 * A fresh, isolated, migrated database for the lifetime of the layer: on the `DATABASE_URL` server
 * when it is set, else embedded (~1 s from the template instead of ~3-5 s of initdb).
 * `{ migrate: false }` gives an empty database instead; `statementTimeout` replaces the Db layer's default.
 */
export const testDbLayer = (
  options: { readonly migrate?: boolean; readonly statementTimeout?: Duration.DurationInput } = {}
): Layer.Layer<Db, DbError> => {
  const url = process.env["DATABASE_URL"]
  const migrate = options.migrate ?? true
  if (url !== undefined && url !== "") return serverTestLayer(url, migrate, options.statementTimeout)
  return embeddedTestLayer(migrate ? "migrated" : "empty", options.statementTimeout)
}

/** True when the tests run against a PostgreSQL server rather than the embedded database. */
export const usingServer = (): boolean => (process.env["DATABASE_URL"] ?? "") !== ""

export interface TestDb<R, LE = DbError> {
  /** Runs an Effect against this file's database; rejects with the failure (use `runExit` to inspect it). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, R>) => Promise<A>
  /** `LE` (a layer build failure) only shows up when beforeAll already failed. */
  readonly runExit: <A, E>(effect: Effect.Effect<A, E, R>) => Promise<Exit.Exit<A, E | LE>>
  /** Closes the database early (afterAll does it otherwise). */
  readonly dispose: () => Promise<void>
}

const makeTestDb = <R, LE>(layer: Layer.Layer<R, LE>): TestDb<R, LE> => {
  let runtime: ManagedRuntime.ManagedRuntime<R, LE> | undefined
  const live = () => {
    if (runtime === undefined) throw new Error("useTestDb: the database is used outside the test file's tests")
    return runtime
  }
  beforeAll(async () => {
    runtime = ManagedRuntime.make(layer)
    await runtime.runtime()
  }, 120_000)
  const dispose = async () => {
    const r = runtime
    runtime = undefined
    await r?.dispose()
  }
  afterAll(dispose, 60_000)
  return {
    run: (effect) => live().runPromise(effect),
    runExit: (effect) => live().runPromiseExit(effect),
    dispose
  }
}

/**
 * Registers beforeAll/afterAll hooks that give the calling test file one database (plus `layer`, built
 * on top of it, e.g. a repo layer) through a ManagedRuntime. Call at the top level of a test file.
 */
export function useTestDb(): TestDb<Db, DbError>
export function useTestDb<ROut, E>(layer: Layer.Layer<ROut, E, Db>): TestDb<Db | ROut, DbError | E>
export function useTestDb(layer?: Layer.Layer<never, unknown, Db>): TestDb<never, unknown> {
  return layer === undefined ? makeTestDb(testDbLayer()) : makeTestDb(Layer.provideMerge(layer, testDbLayer()))
}
