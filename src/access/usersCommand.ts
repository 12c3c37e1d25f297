/**
 * `kintsugi users …` on the installation's database (src/cli/users.ts decides when: no server answers):
 * users, permissions, passwords, disabling, API tokens. Passwords come from KINTSUGI_USER_PASSWORD or
 * stdin (never argv, which other users can read in the process list); tokens are printed once.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Cause, Effect, Exit, Option, Schema, type Layer } from "effect"
import { decodeRows } from "../db/rowSchema.ts"
import type { Db, DbError } from "../db/Db.ts"
import { Access, AccessLive } from "./Access.ts"
import { doneLine, readPassword, tokenJson, tokenLine, userJson, userLines, type UsersIo, type UsersOp } from "./usersIo.ts"

const foundRows = decodeRows(Schema.Struct({ found: Schema.Boolean }))

/**
 * Why the database of `db` (opened without migrating it) holds no kintsugi installation, or undefined:
 * a command asked to read or change users never creates one (`kintsugi migrate` or `serve` does).
 */
export const installationProblem = async (db: Layer.Layer<Db, DbError>): Promise<string | undefined> => {
  const exit = await Effect.runPromiseExit(
    Effect.flatMap(SqlClient, (sql) => foundRows(sql`SELECT to_regclass('admin.app_user') IS NOT NULL AS found`)).pipe(Effect.provide(db))
  )
  if (Exit.isFailure(exit)) {
    const failure = Cause.failureOption(exit.cause)
    return `cannot open the database at DATABASE_URL: ${Option.isSome(failure) ? failure.value.message : "internal error"}`
  }
  return exit.value[0]?.found === true
    ? undefined
    : "the database at DATABASE_URL holds no kintsugi installation (no users table); run `kintsugi migrate` or `kintsugi serve` for it first"
}

/**
 * Runs one users operation against `db` (src/main.ts gives the CLI's); resolves to the exit code
 * (0 ok, 1 refused). Never rejects.
 */
export const runUsersOp = async (o: UsersOp, io: UsersIo, db: Layer.Layer<Db, DbError>): Promise<number> => {
  let program: Effect.Effect<string, { readonly message: string }, Access>
  switch (o.op) {
    case "list":
      program = Effect.map(
        Effect.flatMap(Access, (a) => a.users),
        (us) => (o.json === true ? JSON.stringify(us.map(userJson)) : us.length === 0 ? "no users" : userLines(us))
      )
      break
    case "add": {
      const password = await readPassword(io)
      program = Effect.as(
        Effect.flatMap(Access, (a) => a.addUser(o.username, password, o.grants)),
        doneLine(o)
      )
      break
    }
    case "password": {
      const password = await readPassword(io)
      program = Effect.as(
        Effect.flatMap(Access, (a) => a.setPassword(o.username, password)),
        doneLine(o)
      )
      break
    }
    case "grant":
      program = Effect.as(
        Effect.flatMap(Access, (a) => a.grant(o.username, o.permission)),
        doneLine(o)
      )
      break
    case "revoke":
      program = Effect.as(
        Effect.flatMap(Access, (a) => a.revoke(o.username, o.permission)),
        doneLine(o)
      )
      break
    case "disable":
    case "enable":
      program = Effect.as(
        Effect.flatMap(Access, (a) => a.setDisabled(o.username, o.op === "disable")),
        doneLine(o)
      )
      break
    case "token":
      program = Effect.map(
        Effect.flatMap(Access, (a) => a.issueToken(o.username, o.name, o.days)),
        (token) => (o.json === true ? JSON.stringify({ username: o.username, name: o.name, expiresDays: o.days, token }) : token)
      )
      break
    case "tokens":
      program = Effect.map(
        Effect.flatMap(Access, (a) => a.tokens(o.username)),
        (ts) =>
          o.json === true
            ? JSON.stringify(ts.map(tokenJson))
            : ts.length === 0
              ? `${o.username} has no API tokens`
              : ts.map(tokenLine).join("\n")
      )
      break
    case "revoke-token":
      program = Effect.map(
        Effect.flatMap(Access, (a) => a.revokeToken(o.username, o.id)),
        (t) => `revoked token ${t.id} (${t.name}) of ${o.username}`
      )
      break
  }
  const exit = await Effect.runPromiseExit(program.pipe(Effect.provide(AccessLive), Effect.provide(db)))
  if (Exit.isSuccess(exit)) {
    io.out(exit.value)
    return 0
  }
  const failure = Cause.failureOption(exit.cause)
  io.err(`kintsugi users: ${Option.isSome(failure) ? failure.value.message : "internal error"}`)
  return 1
}
