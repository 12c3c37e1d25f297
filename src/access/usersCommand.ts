/**
 * `kintsugi users …` on the installation's database (src/cli/users.ts decides when: no server answers):
 * users, permissions, passwords, disabling, API tokens. Passwords come from KINTSUGI_USER_PASSWORD or
 * stdin (never argv, which other users can read in the process list); tokens are printed once.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Cause, Effect, Exit, Option, type Layer } from "effect"
import type { Db, DbError } from "../db/Db.ts"
import { Access, AccessLive, PERMISSIONS, TOKEN_DEFAULT_DAYS, TOKEN_MAX_DAYS, type Permission } from "./Access.ts"
import { doneLine, readPassword, tokenJson, tokenLine, userJson, userLines, type UsersIo, type UsersOp } from "./usersIo.ts"

export const USERS_USAGE = `usage:
  kintsugi users list [--json]
      every user: permissions, enabled or disabled, created
  kintsugi users add <username> [--grant agents.manage] [--grant providers.manage]
      password from KINTSUGI_USER_PASSWORD, else the first line of stdin (at least 12 characters)
  kintsugi users grant <username> <agents.manage|providers.manage|metrics.read>
  kintsugi users revoke <username> <agents.manage|providers.manage|metrics.read>
      removes a permission (never from its last enabled holder, nor the last admin's)
  kintsugi users password <username>
      sets a new password (KINTSUGI_USER_PASSWORD or stdin) and ends the user's sessions
  kintsugi users disable <username>
      ends the user's sessions; their sessions and tokens are refused and they cannot sign in
  kintsugi users enable <username>
  kintsugi users token <username> [--name <label>] [--expires-days <1-${TOKEN_MAX_DAYS}>]
      prints a new API token once (send it as Authorization: Bearer <token>); expires after ${TOKEN_DEFAULT_DAYS} days by default
  kintsugi users tokens <username>
      lists the user's tokens: id, name, status, created, last used, expires (never the token)
  kintsugi users revoke-token <username> <token-id>
      revokes a token: the next request with it gets 401`

const isPermission = (p: string | undefined): p is Permission => (PERMISSIONS as ReadonlyArray<string | undefined>).includes(p)

/** `--name <label>` and `--expires-days <n>` in any order, each at most once; undefined on anything else. */
const tokenOptions = (rest: ReadonlyArray<string>): { name: string; days: number } | undefined => {
  let name: string | undefined
  let days: number | undefined
  for (let i = 0; i < rest.length; i += 2) {
    const value = rest[i + 1]
    if (value === undefined) return undefined
    if (rest[i] === "--name" && name === undefined) name = value
    else if (rest[i] === "--expires-days" && days === undefined && /^\d{1,4}$/.test(value)) days = Number(value)
    else return undefined
  }
  return { name: name ?? "cli", days: days ?? TOKEN_DEFAULT_DAYS }
}

/**
 * Why the database of `db` (opened without migrating it) holds no kintsugi installation, or undefined:
 * a command asked to read or change users never creates one (`kintsugi migrate` or `serve` does).
 */
export const installationProblem = async (db: Layer.Layer<Db, DbError>): Promise<string | undefined> => {
  const exit = await Effect.runPromiseExit(
    Effect.flatMap(SqlClient, (sql) => sql<{ found: boolean }>`SELECT to_regclass('admin.app_user') IS NOT NULL AS found`).pipe(Effect.provide(db))
  )
  if (Exit.isFailure(exit)) {
    const failure = Cause.failureOption(exit.cause)
    return `cannot open the database at DATABASE_URL: ${Option.isSome(failure) ? failure.value.message : "internal error"}`
  }
  return exit.value[0]?.found === true ? undefined : "the database at DATABASE_URL holds no kintsugi installation (no users table); run `kintsugi migrate` or `kintsugi serve` for it first"
}

/**
 * Runs one users operation against `db` (src/main.ts gives the CLI's); resolves to the exit code
 * (0 ok, 1 refused). Never rejects.
 */
export const runUsersOp = async (o: UsersOp, io: UsersIo, db: Layer.Layer<Db, DbError>): Promise<number> => {
  let program: Effect.Effect<string, { readonly message: string }, Access>
  switch (o.op) {
    case "list":
      program = Effect.map(Effect.flatMap(Access, (a) => a.users), (us) =>
        o.json === true ? JSON.stringify(us.map(userJson)) : us.length === 0 ? "no users" : userLines(us)
      )
      break
    case "add": {
      const password = await readPassword(io)
      program = Effect.as(Effect.flatMap(Access, (a) => a.addUser(o.username, password, o.grants)), doneLine(o))
      break
    }
    case "password": {
      const password = await readPassword(io)
      program = Effect.as(Effect.flatMap(Access, (a) => a.setPassword(o.username, password)), doneLine(o))
      break
    }
    case "grant":
      program = Effect.as(Effect.flatMap(Access, (a) => a.grant(o.username, o.permission)), doneLine(o))
      break
    case "revoke":
      program = Effect.as(Effect.flatMap(Access, (a) => a.revoke(o.username, o.permission)), doneLine(o))
      break
    case "disable":
    case "enable":
      program = Effect.as(Effect.flatMap(Access, (a) => a.setDisabled(o.username, o.op === "disable")), doneLine(o))
      break
    case "token":
      program = Effect.map(Effect.flatMap(Access, (a) => a.issueToken(o.username, o.name, o.days)), (token) =>
        o.json === true ? JSON.stringify({ username: o.username, name: o.name, expiresDays: o.days, token }) : token
      )
      break
    case "tokens":
      program = Effect.map(Effect.flatMap(Access, (a) => a.tokens(o.username)), (ts) =>
        o.json === true
          ? JSON.stringify(ts.map(tokenJson))
          : ts.length === 0 ? `${o.username} has no API tokens` : ts.map(tokenLine).join("\n")
      )
      break
    case "revoke-token":
      program = Effect.map(Effect.flatMap(Access, (a) => a.revokeToken(o.username, o.id)), (t) => `revoked token ${t.id} (${t.name}) of ${o.username}`)
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

/** Parses `users` argv (after `users`) into one operation; undefined on a usage error. */
const parseUsersArgs = (args: ReadonlyArray<string>): UsersOp | undefined => {
  const [sub, username, ...rest] = args
  if (sub === "list") return username === undefined ? { op: "list" } : username === "--json" && rest.length === 0 ? { op: "list", json: true } : undefined
  if (username === undefined) return undefined
  switch (sub) {
    case "add": {
      const grants: Array<Permission> = []
      for (let i = 0; i < rest.length; i += 2) {
        const p = rest[i + 1]
        if (rest[i] !== "--grant" || !isPermission(p)) return undefined
        grants.push(p)
      }
      return { op: "add", username, grants }
    }
    case "grant":
    case "revoke": {
      const p = rest[0]
      return isPermission(p) && rest.length === 1 ? { op: sub, username, permission: p } : undefined
    }
    case "disable":
    case "enable":
    case "password":
      return rest.length === 0 ? { op: sub, username } : undefined
    case "token": {
      const options = tokenOptions(rest)
      return options === undefined ? undefined : { op: "token", username, ...options }
    }
    case "tokens":
      return rest.length === 0 ? { op: "tokens", username } : undefined
    case "revoke-token": {
      const id = rest[0]
      return id === undefined || rest.length !== 1 ? undefined : { op: "revoke-token", username, id }
    }
    default:
      return undefined
  }
}

/** Runs one users command from its argv; resolves to the exit code (0 ok, 1 refused, 2 usage). Never rejects. */
export const usersMain = async (args: ReadonlyArray<string>, io: UsersIo, db: Layer.Layer<Db, DbError>): Promise<number> => {
  if (args.some((a) => a === "--help" || a === "-h") || args[0] === "help") {
    io.out(USERS_USAGE)
    return 0
  }
  const op = parseUsersArgs(args)
  if (op === undefined) {
    io.err(USERS_USAGE)
    return 2
  }
  return runUsersOp(op, io, db)
}
