/**
 * `kintsugi users …`: portal users, permissions, disabling, API tokens. Passwords come from
 * KINTSUGI_USER_PASSWORD or stdin (never argv, which other users can read in the process list).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import type { Permission } from "../access/Access.ts"
import type { UsersOp } from "../access/usersCommand.ts"
import { exitWith } from "./exit.ts"

// Spelled out here rather than imported: `users --help` must not load the store (Access.ts holds the originals).
const PERMISSIONS = ["agents.manage", "providers.manage", "metrics.read"] as const satisfies ReadonlyArray<Permission>
const TOKEN_DEFAULT_DAYS = 90
const TOKEN_MAX_DAYS = 365

// The database layer comes from the composition root (src/main.ts), loaded only when a command runs.
const run = (op: UsersOp) =>
  Effect.promise(async () => {
    const [users, { DatabaseLive }] = await Promise.all([import("../access/usersCommand.ts"), import("../main.ts")])
    return users.runUsersOp(op, users.stdio, DatabaseLive)
  }).pipe(Effect.flatMap(exitWith))

const username = Args.text({ name: "username" })
const permission = Args.choice(PERMISSIONS.map((p) => [p, p] as const), { name: "permission" })
const json = Options.boolean("json").pipe(Options.withDescription("print JSON"))

const add = Command.make(
  "add",
  { grant: Options.choice("grant", PERMISSIONS).pipe(Options.repeated, Options.withDescription("a permission to grant (repeatable)")), username },
  (a) => run({ op: "add", username: a.username, grants: a.grant })
).pipe(Command.withDescription("Add a user; the password from KINTSUGI_USER_PASSWORD, else the first line of stdin (at least 12 characters)."))

const grant = Command.make("grant", { username, permission }, (a) => run({ op: "grant", ...a })).pipe(
  Command.withDescription("Grant a permission.")
)
const revoke = Command.make("revoke", { username, permission }, (a) => run({ op: "revoke", ...a })).pipe(
  Command.withDescription("Remove a permission (never from its last enabled holder).")
)
const disable = Command.make("disable", { username }, (a) => run({ op: "disable", ...a })).pipe(
  Command.withDescription("Disable a user: their sessions end, their tokens are refused, they cannot sign in.")
)
const enable = Command.make("enable", { username }, (a) => run({ op: "enable", ...a })).pipe(Command.withDescription("Enable a user again."))

const token = Command.make(
  "token",
  {
    name: Options.text("name").pipe(Options.withDefault("cli"), Options.withDescription("a label for the token")),
    days: Options.integer("expires-days").pipe(Options.withDefault(TOKEN_DEFAULT_DAYS), Options.withDescription(`1-${TOKEN_MAX_DAYS} days`)),
    json,
    username
  },
  (a) => run({ op: "token", username: a.username, name: a.name, days: a.days, json: a.json })
).pipe(Command.withDescription("Print a new API token once (send it as Authorization: Bearer <token>)."))

const tokens = Command.make("tokens", { json, username }, (a) => run({ op: "tokens", ...a })).pipe(
  Command.withDescription("List the user's tokens: id, name, status, created, last used, expires (never the token).")
)
const revokeToken = Command.make("revoke-token", { username, id: Args.text({ name: "token-id" }) }, (a) => run({ op: "revoke-token", ...a })).pipe(
  Command.withDescription("Revoke a token: the next request with it gets 401.")
)

export const usersCommand = Command.make("users").pipe(
  Command.withDescription("Manage portal users, permissions and API tokens."),
  Command.withSubcommands([add, grant, revoke, disable, enable, token, tokens, revokeToken])
)
