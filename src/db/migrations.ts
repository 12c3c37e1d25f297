/**
 * The `.sql` migration loader: `migrations/NNN_name.sql` at the project root (found from this file, not
 * the cwd), applied in number order by @effect/sql's Migrator, each once, recorded in `effect_sql_migrations`.
 */
import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"
import fs from "node:fs"
import path from "node:path"

/** The project's migrations folder, resolved relative to this module. */
export const migrationsDir: string = path.resolve(import.meta.dir, "../../migrations")

/** One migration file: `id` is the NNN prefix, `name` the rest of the file name without `.sql`. */
export interface MigrationFile {
  readonly id: number
  readonly name: string
  readonly path: string
}

const FILE = /^(\d+)_(.+)\.sql$/

/** The `NNN_name.sql` files of `dir`, sorted by number; other files are ignored. Fails if `dir` is unreadable. */
export const listMigrations = (dir: string = migrationsDir): Effect.Effect<ReadonlyArray<MigrationFile>, Migrator.MigrationError> =>
  Effect.try({
    try: () =>
      fs
        .readdirSync(dir)
        .flatMap((file) => {
          const m = FILE.exec(file)
          return m?.[1] !== undefined && m[2] !== undefined ? [{ id: Number(m[1]), name: m[2], path: path.join(dir, file) }] : []
        })
        .sort((a, b) => a.id - b.id),
    catch: (cause) => new Migrator.MigrationError({ reason: "import-error", message: `cannot read the migrations folder ${dir}`, cause })
  })

// Without parameters node-postgres uses the simple query protocol, so one file may hold many statements.
const loader = (dir: string): Migrator.Loader =>
  Effect.map(listMigrations(dir), (files) =>
    files.map(
      (file): Migrator.ResolvedMigration => [
        file.id,
        file.name,
        Effect.map(
          Effect.promise(() => Bun.file(file.path).text()),
          (text) => Effect.flatMap(SqlClient, (sql) => sql.unsafe(text).raw)
        )
      ]
    )
  )

/**
 * Applies the not yet applied migrations of `dir` in one transaction (Migrator takes an exclusive lock
 * on its table, so concurrent runners wait) and returns the `[id, name]` pairs it applied; `[]` = up to date.
 * A failing migration rolls everything back and fails with `MigrationError { reason: "failed" }`.
 */
export const runMigrationsFrom = (
  dir: string
): Effect.Effect<ReadonlyArray<readonly [id: number, name: string]>, Migrator.MigrationError | SqlError, SqlClient> =>
  Migrator.make({})({ loader: loader(dir) }).pipe(
    // Migrator turns a failing migration into a defect; give it back to the caller as a typed failure.
    Effect.catchSomeDefect((defect) => (defect instanceof Migrator.MigrationError ? Option.some(Effect.fail(defect)) : Option.none()))
  )

/** `runMigrationsFrom(migrationsDir)`: the project's migrations. */
export const runMigrations = runMigrationsFrom(migrationsDir)

/** One line for an operator: which migration failed and PostgreSQL's own words, never a stack trace. */
export const describeMigrationFailure = (error: Migrator.MigrationError | SqlError): string => {
  const reasons: Array<string> = []
  let cause: unknown = error.cause
  for (let depth = 0; cause instanceof Error && depth < 4; depth++) {
    if (cause.message !== "" && !error.message.includes(cause.message)) reasons.push(cause.message)
    cause = cause.cause
  }
  return [error.message, ...reasons].join(": ")
}

/**
 * The migration files of `dir` that the database has not applied (`NNN_name`, in order); `[]` = up to
 * date. Fails when the database cannot be asked (a database never migrated has no record table).
 */
export const pendingMigrations = (
  dir: string = migrationsDir
): Effect.Effect<ReadonlyArray<string>, Migrator.MigrationError | SqlError, SqlClient> =>
  Effect.gen(function* () {
    const files = yield* listMigrations(dir)
    const sql = yield* SqlClient
    // The Migrator's own bookkeeping table, read as @effect/sql's Migrator reads it; Number() below takes either driver's int.
    const rows = yield* sql<{ id: number }>`SELECT migration_id AS id FROM effect_sql_migrations`
    const applied = new Set(rows.map((r) => Number(r.id)))
    return files.filter((f) => !applied.has(f.id)).map((f) => `${String(f.id).padStart(3, "0")}_${f.name}`)
  })
