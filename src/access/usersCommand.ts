/**
 * `kintsugi users add|grant|token` for operators. Passwords come from KINTSUGI_USER_PASSWORD or stdin
 * (never argv, which other users can read in the process list); tokens are printed once.
 */
import { Effect, Exit, Cause, Option, type Layer } from "effect"
import { DbMigratedLive, type Db, type DbError } from "../db/Db.ts"
import { Access, AccessLive, PERMISSIONS, type Permission } from "./Access.ts"

export const USERS_USAGE = `usage:
  kintsugi users add <username> [--grant agents.manage] [--grant providers.manage]
      password from KINTSUGI_USER_PASSWORD, else the first line of stdin (at least 12 characters)
  kintsugi users grant <username> <agents.manage|providers.manage>
  kintsugi users token <username> [--name <label>]
      prints a new API token once (send it as Authorization: Bearer <token>)`

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

/** Runs one users command; resolves to the exit code (0 ok, 1 refused, 2 usage). Never rejects. */
export const usersMain = async (args: ReadonlyArray<string>, io: UsersIo = stdio, db: Layer.Layer<Db, DbError> = DbMigratedLive): Promise<number> => {
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
    case "grant": {
      const p = rest[0]
      if (!isPermission(p) || rest.length !== 1) return usage()
      program = Effect.map(Effect.flatMap(Access, (a) => a.grant(username, p)), () => `granted ${p} to ${username}`)
      break
    }
    case "token": {
      const name = rest[0] === "--name" && rest[1] !== undefined ? rest[1] : "cli"
      if (rest.length !== 0 && !(rest[0] === "--name" && rest.length === 2)) return usage()
      program = Effect.flatMap(Access, (a) => a.issueToken(username, name))
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
