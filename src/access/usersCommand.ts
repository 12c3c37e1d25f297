/**
 * `kintsugi users …` for operators: users, permissions, disabling, API tokens. Passwords come from
 * KINTSUGI_USER_PASSWORD or stdin (never argv, which other users can read in the process list); tokens are printed once.
 */
import { Config, Effect, Exit, Cause, Option, Redacted, type Layer } from "effect"
import type { Db, DbError } from "../db/Db.ts"
import { Access, AccessLive, PERMISSIONS, TOKEN_DEFAULT_DAYS, TOKEN_MAX_DAYS, type Permission, type TokenView } from "./Access.ts"

export const USERS_USAGE = `usage:
  kintsugi users add <username> [--grant agents.manage] [--grant providers.manage]
      password from KINTSUGI_USER_PASSWORD, else the first line of stdin (at least 12 characters)
  kintsugi users grant <username> <agents.manage|providers.manage>
  kintsugi users revoke <username> <agents.manage|providers.manage>
      removes a permission (never from its last enabled holder)
  kintsugi users disable <username>
      ends the user's sessions; their sessions and tokens are refused and they cannot sign in
  kintsugi users enable <username>
  kintsugi users token <username> [--name <label>] [--expires-days <1-${TOKEN_MAX_DAYS}>]
      prints a new API token once (send it as Authorization: Bearer <token>); expires after ${TOKEN_DEFAULT_DAYS} days by default
  kintsugi users tokens <username>
      lists the user's tokens: id, name, status, created, last used, expires (never the token)
  kintsugi users revoke-token <username> <token-id>
      revokes a token: the next request with it gets 401`

export interface UsersIo {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
  readonly stdin: () => Promise<string>
}

/** The terminal: lines on stdout and stderr, the password from stdin. */
export const stdio: UsersIo = {
  out: (l) => void process.stdout.write(`${l}\n`),
  err: (l) => void process.stderr.write(`${l}\n`),
  stdin: () => Bun.stdin.text()
}

const isPermission = (p: string | undefined): p is Permission => (PERMISSIONS as ReadonlyArray<string | undefined>).includes(p)

const day = (d: Date | null): string => (d === null ? "-" : d.toISOString().slice(0, 16).replace("T", " "))
const tokenLine = (t: TokenView): string => [t.id, t.name, t.status, `created ${day(t.createdAt)}`, `last used ${day(t.lastUsedAt)}`, `expires ${day(t.expiresAt)}`].join("  ")

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

/** One users operation, as parsed from the command line. */
export type UsersOp =
  | { readonly op: "add"; readonly username: string; readonly grants: ReadonlyArray<Permission> }
  | { readonly op: "grant" | "revoke"; readonly username: string; readonly permission: Permission }
  | { readonly op: "disable" | "enable"; readonly username: string }
  | { readonly op: "token"; readonly username: string; readonly name: string; readonly days: number; readonly json?: boolean }
  | { readonly op: "tokens"; readonly username: string; readonly json?: boolean }
  | { readonly op: "revoke-token"; readonly username: string; readonly id: string }

const tokenJson = (t: TokenView) => ({
  id: t.id,
  name: t.name,
  status: t.status,
  createdAt: t.createdAt.toISOString(),
  lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
  expiresAt: t.expiresAt.toISOString()
})

/** KINTSUGI_USER_PASSWORD, when set and not empty. */
const passwordFromConfig = Config.option(Config.redacted("KINTSUGI_USER_PASSWORD")).pipe(
  Effect.map(Option.filter((p) => Redacted.value(p) !== "")),
  Effect.orElseSucceed(() => Option.none<Redacted.Redacted>())
)

/**
 * Runs one users operation against `db` (src/main.ts gives the CLI's); resolves to the exit code
 * (0 ok, 1 refused). Never rejects.
 */
export const runUsersOp = async (o: UsersOp, io: UsersIo, db: Layer.Layer<Db, DbError>): Promise<number> => {
  const { username } = o
  let program: Effect.Effect<string, { readonly message: string }, Access>
  switch (o.op) {
    case "add": {
      const configured = await Effect.runPromise(passwordFromConfig)
      const password = Option.isSome(configured) ? Redacted.value(configured.value) : ((await io.stdin()).split("\n")[0] ?? "").trim()
      program = Effect.map(Effect.flatMap(Access, (a) => a.addUser(username, password, o.grants)), () =>
        `created user ${username}${o.grants.length > 0 ? ` with ${o.grants.join(", ")}` : ""}`
      )
      break
    }
    case "grant":
      program = Effect.map(Effect.flatMap(Access, (a) => a.grant(username, o.permission)), () => `granted ${o.permission} to ${username}`)
      break
    case "revoke":
      program = Effect.map(Effect.flatMap(Access, (a) => a.revoke(username, o.permission)), () => `removed ${o.permission} from ${username}`)
      break
    case "disable":
    case "enable": {
      const disabled = o.op === "disable"
      program = Effect.map(Effect.flatMap(Access, (a) => a.setDisabled(username, disabled)), () => `${disabled ? "disabled" : "enabled"} ${username}`)
      break
    }
    case "token":
      program = Effect.map(Effect.flatMap(Access, (a) => a.issueToken(username, o.name, o.days)), (token) =>
        o.json === true ? JSON.stringify({ username, name: o.name, expiresDays: o.days, token }) : token
      )
      break
    case "tokens":
      program = Effect.map(Effect.flatMap(Access, (a) => a.tokens(username)), (ts) =>
        o.json === true
          ? JSON.stringify(ts.map(tokenJson))
          : ts.length === 0 ? `${username} has no API tokens` : ts.map(tokenLine).join("\n")
      )
      break
    case "revoke-token":
      program = Effect.map(Effect.flatMap(Access, (a) => a.revokeToken(username, o.id)), (t) => `revoked token ${t.id} (${t.name}) of ${username}`)
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
