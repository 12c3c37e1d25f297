/**
 * `kintsugi users …`: portal users, permissions, passwords, disabling, API tokens. Through the running
 * server's API when one answers (KINTSUGI_URL, token from KINTSUGI_TOKEN or the token file, as `kintsugi
 * run`), else on the installation's database; never creates an installation. Passwords come from
 * KINTSUGI_USER_PASSWORD or stdin (never argv, which other users can read in the process list).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Permission } from "../access/Access.ts"
import type { UsersOp } from "../access/usersIo.ts"
import { exitWith } from "./exit.ts"

// Spelled out here rather than imported: `users --help` must not load the store (Access.ts holds the originals).
const PERMISSIONS = ["agents.manage", "providers.manage", "metrics.read", "transcripts.read"] as const satisfies ReadonlyArray<Permission>
const TOKEN_DEFAULT_DAYS = 90
const TOKEN_MAX_DAYS = 365

const setting = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Effect.map(Option.filter((v) => v.trim() !== "")),
    Effect.orElseSucceed(() => Option.none<string>()),
    Effect.map(Option.getOrUndefined)
  )

/**
 * A running server takes the operation through its API; without a token for it, a PostgreSQL
 * installation is opened directly (it admits many processes), an embedded one is not (the server holds
 * it). No server: the installation's database, when there is one where the data dir resolves.
 */
const run = (op: UsersOp) =>
  Effect.gen(function* () {
    const log = (line: string) => void process.stderr.write(`${line}\n`)
    const [remote, io] = yield* Effect.promise(() => Promise.all([import("./runRemote.ts"), import("../access/usersIo.ts")]))
    const where = yield* remote.remoteConfig
    const databaseUrl = yield* setting("DATABASE_URL")
    if (yield* remote.serverUp(where.url)) {
      if (where.token !== undefined) {
        const { runUsersRemote } = yield* Effect.promise(() => import("./usersRemote.ts"))
        const token = where.token
        return yield* exitWith(yield* Effect.promise(() => runUsersRemote(op, { ...where, token }, io.stdio)))
      }
      if (databaseUrl === undefined) {
        log(
          `kintsugi users: a kintsugi server is running at ${where.url}: set KINTSUGI_TOKEN or put an admin's API token in ${where.tokenFile} ` +
            `(make one on the portal's account page, ${where.url}/account)`
        )
        return yield* exitWith(2)
      }
    }
    const installation = yield* Effect.promise(() => import("./installation.ts"))
    const dataDir = installation.resolveDataDir(yield* setting("KINTSUGI_DATA_DIR"))
    const missing = yield* Effect.promise(() => installation.missingInstallation({ databaseUrl, dataDir, serverUrl: where.url }))
    if (missing !== undefined) {
      log(`kintsugi users: ${missing}`)
      return yield* exitWith(1)
    }
    // The database layers come from the composition root (src/main.ts), loaded only when a command runs.
    const [users, { DatabaseLive, UnmigratedDatabaseLive }] = yield* Effect.promise(() =>
      Promise.all([import("../access/usersCommand.ts"), import("../main.ts")])
    )
    if (databaseUrl !== undefined) {
      const problem = yield* Effect.promise(() => users.installationProblem(UnmigratedDatabaseLive))
      if (problem !== undefined) {
        log(`kintsugi users: ${problem}`)
        return yield* exitWith(1)
      }
    }
    return yield* exitWith(yield* Effect.promise(() => users.runUsersOp(op, io.stdio, DatabaseLive)))
  })

const username = Args.text({ name: "username" }).pipe(Args.withDescription("the user's name"))
const permission = Args.choice(
  PERMISSIONS.map((p) => [p, p] as const),
  { name: "permission" }
)
const json = Options.boolean("json").pipe(Options.withAlias("j"), Options.withDescription("print JSON"))

const add = Command.make(
  "add",
  {
    grant: Options.choice("grant", PERMISSIONS).pipe(
      Options.withAlias("g"),
      Options.repeated,
      Options.withDescription("a permission to grant (repeatable)")
    ),
    username
  },
  (a) => run({ op: "add", username: a.username, grants: a.grant })
).pipe(
  Command.withDescription("Add a user; the password from KINTSUGI_USER_PASSWORD, else the first line of stdin (at least 12 characters).")
)

const grant = Command.make("grant", { username, permission }, (a) => run({ op: "grant", ...a })).pipe(
  Command.withDescription("Grant a permission.")
)
const revoke = Command.make("revoke", { username, permission }, (a) => run({ op: "revoke", ...a })).pipe(
  Command.withDescription("Remove a permission (never from its last enabled holder, nor from the last admin).")
)
const list = Command.make("list", { json }, (a) => run({ op: "list", json: a.json })).pipe(
  Command.withDescription("List every user: permissions, enabled or disabled, created.")
)
const password = Command.make("password", { username }, (a) => run({ op: "password", ...a })).pipe(
  Command.withDescription("Set a user's password (KINTSUGI_USER_PASSWORD, else the first line of stdin) and end their sessions.")
)
const disable = Command.make("disable", { username }, (a) => run({ op: "disable", ...a })).pipe(
  Command.withDescription("Disable a user: their sessions end, their tokens are refused, they cannot sign in.")
)
const enable = Command.make("enable", { username }, (a) => run({ op: "enable", ...a })).pipe(
  Command.withDescription("Enable a user again.")
)

const token = Command.make(
  "token",
  {
    name: Options.text("name").pipe(Options.withAlias("n"), Options.withDefault("cli"), Options.withDescription("a label for the token")),
    days: Options.integer("expires-days").pipe(
      Options.withDefault(TOKEN_DEFAULT_DAYS),
      Options.withDescription(`1-${TOKEN_MAX_DAYS} days`)
    ),
    json,
    username
  },
  (a) => run({ op: "token", username: a.username, name: a.name, days: a.days, json: a.json })
).pipe(Command.withDescription("Print a new API token once (send it as Authorization: Bearer <token>)."))

const tokens = Command.make("tokens", { json, username }, (a) => run({ op: "tokens", ...a })).pipe(
  Command.withDescription("List the user's tokens: id, name, status, created, last used, expires (never the token).")
)
const revokeToken = Command.make("revoke-token", { username, id: Args.text({ name: "token-id" }) }, (a) =>
  run({ op: "revoke-token", ...a })
).pipe(Command.withDescription("Revoke a token: the next request with it gets 401."))

export const usersCommand = Command.make("users").pipe(
  Command.withDescription("Manage portal users, permissions, passwords and API tokens (through the running server when one answers)."),
  Command.withSubcommands([list, add, grant, revoke, password, disable, enable, token, tokens, revokeToken])
)
