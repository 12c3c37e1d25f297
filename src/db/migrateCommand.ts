/**
 * `kintsugi migrate`: applies the pending migrations to the configured database (`DATABASE_URL`, else
 * the embedded one) and says what it applied, or that it was up to date.
 */
import { Cause, Effect, Exit, type Layer, Option } from "effect"
import path from "node:path"
import { type Db, type DbError, DbLive } from "./Db.ts"
import { describeMigrationFailure, listMigrations, runMigrations } from "./migrations.ts"

export interface MigrateOptions {
  /** One line of progress (default: stdout). */
  readonly out?: (line: string) => void
  /** The one error line (default: stderr). */
  readonly err?: (line: string) => void
  /** The database (default: `DbLive`, from the environment). */
  readonly layer?: Layer.Layer<Db, DbError>
}

/**
 * Runs the migrations; resolves to the exit code: 0 when everything applied or nothing was pending,
 * 1 after printing one `kintsugi migrate: …` line (no stack trace, no password). Never rejects.
 */
export const migrateMain = async (options: MigrateOptions = {}): Promise<number> => {
  const out = options.out ?? ((line: string) => void process.stdout.write(`${line}\n`))
  const err = options.err ?? ((line: string) => void process.stderr.write(`${line}\n`))
  const program = Effect.gen(function* () {
    const files = yield* listMigrations()
    const applied = yield* runMigrations
    const fileName = (id: number, name: string) => {
      const file = files.find((f) => f.id === id && f.name === name)
      return file === undefined ? `${id}_${name}` : path.basename(file.path)
    }
    for (const [id, name] of applied) out(`applied ${fileName(id, name)}`)
    out(applied.length === 0 ? `up to date (${plural(files.length, "migration")})` : `${plural(applied.length, "migration")} applied`)
  }).pipe(Effect.provide(options.layer ?? DbLive))

  const exit = await Effect.runPromiseExit(program)
  if (Exit.isSuccess(exit)) return 0
  const message = Option.match(Cause.failureOption(exit.cause), {
    onSome: (e) => (e._tag === "DbError" ? e.message : describeMigrationFailure(e)),
    onNone: () => (Cause.isInterruptedOnly(exit.cause) ? "interrupted" : `unexpected error: ${firstLine(Cause.squash(exit.cause))}`)
  })
  err(`kintsugi migrate: ${message}`)
  return 1
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`
const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? ""
