/**
 * `kintsugi users …` for operators: users, permissions, disabling, API tokens. Passwords come from
 * KINTSUGI_USER_PASSWORD or stdin (never argv, which other users can read in the process list); tokens are printed once.
 */
import { Effect, Exit, Cause, Option, type Layer } from "effect"
import { DbMigratedLive, type Db, type DbError } from "../db/Db.ts"
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

const stdio: UsersIo = {
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

/** Runs one users command; resolves to the exit code (0 ok, 1 refused, 2 usage). Never rejects. */
export const usersMain = async (args: ReadonlyArray<string>, io: UsersIo = stdio, db: Layer.Layer<Db, DbError> = DbMigratedLive): Promise<number> => {
  if (args.some((a) => a === "--help" || a === "-h") || args[0] === "help") {
    io.out(USERS_USAGE)
    return 0
  }
  const [sub, username, ...rest] = args
  const usage = () => {
    io.err(USERS_USAGE)
    return 2
  }
  if (username === undefined) return usage()
  let program: Effect.Effect<string, { readonly message: string }, Access>
  switch (sub) {
    case "add": {
      const grants: Array<Permission> = []
      for (let i = 0; i < rest.length; i += 2) {
        const p = rest[i + 1]
        if (rest[i] !== "--grant" || !isPermission(p)) return usage()
        grants.push(p)
      }
      const fromEnv = process.env["KINTSUGI_USER_PASSWORD"]
      const password = fromEnv !== undefined && fromEnv !== "" ? fromEnv : ((await io.stdin()).split("\n")[0] ?? "").trim()
      program = Effect.map(Effect.flatMap(Access, (a) => a.addUser(username, password, grants)), () =>
        `created user ${username}${grants.length > 0 ? ` with ${grants.join(", ")}` : ""}`
      )
      break
    }
    case "grant":
    case "revoke": {
      const p = rest[0]
      if (!isPermission(p) || rest.length !== 1) return usage()
      program =
        sub === "grant"
          ? Effect.map(Effect.flatMap(Access, (a) => a.grant(username, p)), () => `granted ${p} to ${username}`)
          : Effect.map(Effect.flatMap(Access, (a) => a.revoke(username, p)), () => `removed ${p} from ${username}`)
      break
    }
    case "disable":
    case "enable": {
      if (rest.length !== 0) return usage()
      const disabled = sub === "disable"
      program = Effect.map(Effect.flatMap(Access, (a) => a.setDisabled(username, disabled)), () => `${disabled ? "disabled" : "enabled"} ${username}`)
      break
    }
    case "token": {
      const options = tokenOptions(rest)
      if (options === undefined) return usage()
      program = Effect.flatMap(Access, (a) => a.issueToken(username, options.name, options.days))
      break
    }
    case "tokens": {
      if (rest.length !== 0) return usage()
      program = Effect.map(Effect.flatMap(Access, (a) => a.tokens(username)), (ts) => (ts.length === 0 ? `${username} has no API tokens` : ts.map(tokenLine).join("\n")))
      break
    }
    case "revoke-token": {
      const id = rest[0]
      if (id === undefined || rest.length !== 1) return usage()
      program = Effect.map(Effect.flatMap(Access, (a) => a.revokeToken(username, id)), (t) => `revoked token ${t.id} (${t.name}) of ${username}`)
      break
    }
    default:
      return usage()
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
