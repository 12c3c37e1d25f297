/**
 * What `kintsugi users` reads and prints, the same whether it opens the database or asks a running
 * server: the operation as parsed, the password from KINTSUGI_USER_PASSWORD or stdin (never argv), and
 * the lines and JSON of users and tokens. Loads no database code.
 */
import { Config, Effect, Option, Redacted } from "effect"

export type PermissionName = "agents.manage" | "providers.manage" | "metrics.read" | "transcripts.read"

/** One users operation, as parsed from the command line. */
export type UsersOp =
  | { readonly op: "list"; readonly json?: boolean }
  | { readonly op: "add"; readonly username: string; readonly grants: ReadonlyArray<PermissionName> }
  | { readonly op: "grant" | "revoke"; readonly username: string; readonly permission: PermissionName }
  | { readonly op: "password"; readonly username: string }
  | { readonly op: "disable" | "enable"; readonly username: string }
  | { readonly op: "token"; readonly username: string; readonly name: string; readonly days: number; readonly json?: boolean }
  | { readonly op: "tokens"; readonly username: string; readonly json?: boolean }
  | { readonly op: "revoke-token"; readonly username: string; readonly id: string }

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

/** KINTSUGI_USER_PASSWORD when set and not empty, else the first line of stdin (trimmed). */
export const readPassword = async (io: UsersIo): Promise<string> => {
  const configured = await Effect.runPromise(
    Config.option(Config.redacted("KINTSUGI_USER_PASSWORD")).pipe(
      Effect.map(Option.filter((p) => Redacted.value(p) !== "")),
      Effect.orElseSucceed(() => Option.none<Redacted.Redacted>())
    )
  )
  return Option.isSome(configured) ? Redacted.value(configured.value) : ((await io.stdin()).split("\n")[0] ?? "").trim()
}

export interface UserShown {
  readonly username: string
  readonly permissions: ReadonlyArray<string>
  readonly createdAt: Date
  readonly disabledAt: Date | null
}

export interface TokenShown {
  readonly id: string
  readonly name: string
  readonly status: string
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
  readonly expiresAt: Date
}

const day = (d: Date | null): string => (d === null ? "-" : d.toISOString().slice(0, 16).replace("T", " "))

export const tokenLine = (t: TokenShown): string =>
  [t.id, t.name, t.status, `created ${day(t.createdAt)}`, `last used ${day(t.lastUsedAt)}`, `expires ${day(t.expiresAt)}`].join("  ")

export const tokenJson = (t: TokenShown) => ({
  id: t.id,
  name: t.name,
  status: t.status,
  createdAt: t.createdAt.toISOString(),
  lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
  expiresAt: t.expiresAt.toISOString()
})

/** One user per line, names aligned: name, permissions (or "read only"), enabled or disabled, created. */
export const userLines = (users: ReadonlyArray<UserShown>): string => {
  const width = Math.max(0, ...users.map((u) => u.username.length))
  return users
    .map((u) =>
      [
        u.username.padEnd(width),
        u.permissions.length === 0 ? "read only" : u.permissions.join(","),
        u.disabledAt === null ? "enabled" : "disabled",
        `created ${day(u.createdAt)}`
      ].join("  ")
    )
    .join("\n")
}

export const userJson = (u: UserShown) => ({
  username: u.username,
  permissions: u.permissions,
  disabled: u.disabledAt !== null,
  createdAt: u.createdAt.toISOString()
})

/** What a successful operation prints (`token`: the token itself, once). */
export const doneLine = (o: Exclude<UsersOp, { op: "list" | "tokens" | "token" | "revoke-token" }>): string => {
  switch (o.op) {
    case "add":
      return `created user ${o.username}${o.grants.length > 0 ? ` with ${o.grants.join(", ")}` : ""}`
    case "grant":
      return `granted ${o.permission} to ${o.username}`
    case "revoke":
      return `removed ${o.permission} from ${o.username}`
    case "password":
      return `set the password of ${o.username}; their sessions ended`
    case "disable":
      return `disabled ${o.username}`
    case "enable":
      return `enabled ${o.username}`
  }
}
