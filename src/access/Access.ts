/**
 * Access: users with hashed passwords, their permissions, portal sessions (cookie + CSRF token) and
 * API tokens (Bearer). Session and token values are random 32-byte strings the client holds; only
 * their SHA-256 hashes are stored. SQL failures are defects here: callers see only domain errors.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Option, Schema } from "effect"

export const PERMISSIONS = ["agents.manage", "providers.manage"] as const
export type Permission = (typeof PERMISSIONS)[number]
export const USERNAME = /^[a-z0-9][a-z0-9._@-]{0,63}$/
const SESSION_TTL_MS = 12 * 60 * 60 * 1000

export interface Principal {
  readonly userId: string
  readonly username: string
  readonly permissions: ReadonlySet<Permission>
  /** How the request proved who it is: a portal session (needs CSRF on changes) or an API token. */
  readonly via: "session" | "token"
  /** The session's CSRF token (sessions only). */
  readonly csrfToken?: string
}

export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", {}) {
  override get message(): string {
    return "unknown user or wrong password"
  }
}
export class UserExists extends Schema.TaggedError<UserExists>()("UserExists", { username: Schema.String }) {
  override get message(): string {
    return `user "${this.username}" already exists`
  }
}
export class UnknownUser extends Schema.TaggedError<UnknownUser>()("UnknownUser", { username: Schema.String }) {
  override get message(): string {
    return `no user "${this.username}"`
  }
}
export class InvalidUser extends Schema.TaggedError<InvalidUser>()("InvalidUser", { message: Schema.String }) {}

const randomToken = (): string => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")
const hashToken = (token: string): string => new Bun.CryptoHasher("sha256").update(token).digest("hex")

interface UserRow {
  readonly id: string
  readonly username: string
}

export class Access extends Context.Tag("access/Access")<
  Access,
  {
    /** Creates a user; the password is stored as an argon2id hash, never in clear. */
    readonly addUser: (
      username: string,
      password: string,
      permissions: ReadonlyArray<Permission>
    ) => Effect.Effect<{ readonly id: string }, UserExists | InvalidUser>
    /** Adds a permission (idempotent). */
    readonly grant: (username: string, permission: Permission) => Effect.Effect<void, UnknownUser>
    /** Checks a password and opens a portal session; the returned token goes into the cookie only. */
    readonly signIn: (
      username: string,
      password: string
    ) => Effect.Effect<{ readonly token: string; readonly principal: Principal; readonly expiresAt: Date }, InvalidCredentials>
    readonly signOut: (sessionToken: string) => Effect.Effect<void>
    /** The principal of a live session, or none (unknown or expired). */
    readonly session: (sessionToken: string) => Effect.Effect<Option.Option<Principal>>
    /** Issues an API token; the value is returned once and only its hash is kept. */
    readonly issueToken: (username: string, name: string) => Effect.Effect<string, UnknownUser>
    /** The principal of a Bearer token, or none (unknown or revoked). */
    readonly bearer: (token: string) => Effect.Effect<Option.Option<Principal>>
    /** True when no user exists yet (first start). */
    readonly isEmpty: Effect.Effect<boolean>
  }
>() {}

export const makeAccess = Effect.gen(function* () {
  const sql = yield* SqlClient

  const permissionsOf = (userId: string) =>
    Effect.map(
      sql<{ permission: Permission }>`SELECT permission FROM admin.user_permission WHERE user_id = ${userId}`,
      (rows) => new Set(rows.map((r) => r.permission))
    )
  const findUser = (username: string) =>
    Effect.map(sql<UserRow & { passwordHash: string }>`SELECT id, username, password_hash FROM admin.app_user WHERE username = ${username}`, (rows) =>
      Option.fromNullable(rows[0])
    )
  const userOrFail = (username: string) =>
    Effect.flatMap(findUser(username), Option.match({ onNone: () => Effect.fail(new UnknownUser({ username })), onSome: Effect.succeed }))

  const principalOf = (user: UserRow, via: Principal["via"], csrfToken?: string) =>
    Effect.map(
      permissionsOf(user.id),
      (permissions): Principal => ({ userId: user.id, username: user.username, permissions, via, ...(csrfToken === undefined ? {} : { csrfToken }) })
    )

  const service: Access["Type"] = {
    addUser: (username, password, permissions) =>
      Effect.gen(function* () {
        if (!USERNAME.test(username)) {
          return yield* Effect.fail(new InvalidUser({ message: "a username is 1-64 characters: a-z, 0-9, . _ @ -, starting with a letter or digit" }))
        }
        if (password.length < 12) return yield* Effect.fail(new InvalidUser({ message: "a password has at least 12 characters" }))
        if (Option.isSome(yield* findUser(username))) return yield* Effect.fail(new UserExists({ username }))
        const hash = yield* Effect.promise(() => Bun.password.hash(password))
        const rows = yield* sql<{ id: string }>`INSERT INTO admin.app_user (username, password_hash) VALUES (${username}, ${hash}) RETURNING id`
        const id = rows[0]!.id
        for (const p of permissions) {
          yield* sql`INSERT INTO admin.user_permission (user_id, permission) VALUES (${id}, ${p}) ON CONFLICT DO NOTHING`
        }
        return { id }
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    grant: (username, permission) =>
      Effect.gen(function* () {
        const user = yield* userOrFail(username)
        yield* sql`INSERT INTO admin.user_permission (user_id, permission) VALUES (${user.id}, ${permission}) ON CONFLICT DO NOTHING`
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    signIn: (username, password) =>
      Effect.gen(function* () {
        const user = yield* findUser(username)
        // Verify against a dummy hash for unknown users too, so timing does not tell which usernames exist.
        const hash = Option.isSome(user) ? user.value.passwordHash : yield* Effect.promise(dummyHash)
        const ok = yield* Effect.promise(() => Bun.password.verify(password, hash))
        if (!ok || Option.isNone(user)) return yield* Effect.fail(new InvalidCredentials())
        const token = randomToken()
        const csrf = randomToken()
        const expiresAt = new Date(Date.now() + SESSION_TTL_MS)
        yield* sql`INSERT INTO admin.session (token_hash, user_id, csrf_token, expires_at) VALUES (${hashToken(token)}, ${user.value.id}, ${csrf}, ${expiresAt})`
        return { token, expiresAt, principal: yield* principalOf(user.value, "session", csrf) }
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    signOut: (token) => sql`DELETE FROM admin.session WHERE token_hash = ${hashToken(token)}`.pipe(Effect.asVoid, Effect.orDie),
    session: (token) =>
      Effect.gen(function* () {
        const rows = yield* sql<UserRow & { csrfToken: string }>`
          SELECT u.id, u.username, s.csrf_token FROM admin.session s JOIN admin.app_user u ON u.id = s.user_id
          WHERE s.token_hash = ${hashToken(token)} AND s.expires_at > now()`
        const row = rows[0]
        return row === undefined ? Option.none() : Option.some(yield* principalOf(row, "session", row.csrfToken))
      }).pipe(Effect.orDie),
    issueToken: (username, name) =>
      Effect.gen(function* () {
        const user = yield* userOrFail(username)
        const token = `kt_${randomToken()}`
        yield* sql`INSERT INTO admin.api_token (user_id, name, token_hash) VALUES (${user.id}, ${name}, ${hashToken(token)})`
        return token
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    bearer: (token) =>
      Effect.gen(function* () {
        const rows = yield* sql<UserRow>`
          UPDATE admin.api_token t SET last_used_at = now() FROM admin.app_user u
          WHERE t.token_hash = ${hashToken(token)} AND t.revoked_at IS NULL AND u.id = t.user_id
          RETURNING u.id, u.username`
        const row = rows[0]
        return row === undefined ? Option.none() : Option.some(yield* principalOf(row, "token"))
      }).pipe(Effect.orDie),
    isEmpty: Effect.map(sql<{ n: string }>`SELECT count(*) AS n FROM admin.app_user`, (rows) => Number(rows[0]?.n ?? 0) === 0).pipe(Effect.orDie)
  }
  return service
})

// A real argon2id hash of a random string: verifying against it costs what a real check costs.
let dummy: Promise<string> | undefined
const dummyHash = (): Promise<string> => (dummy ??= Bun.password.hash(randomToken()))

export const AccessLive = Layer.effect(Access, makeAccess)
