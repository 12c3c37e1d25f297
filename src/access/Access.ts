/**
 * Access: users with hashed passwords, their permissions, portal sessions (cookie + CSRF token) and
 * expiring API tokens (Bearer). Session and token values are random 32-byte strings the client holds;
 * only their SHA-256 hashes are stored. Rows are decoded by Schema; SQL and row failures are StoreError.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Context, Effect, Either, Layer, Option, type ParseResult, Schema } from "effect"
import { cachedUntilWrite, DbWrites } from "../db/DbWrites.ts"
import { decodeRows, Num, Timestamp } from "../db/rowSchema.ts"
import { type StoreError, storeErrors, storeMethod } from "../db/StoreError.ts"
import { traced } from "../telemetry/traced.ts"
import { InvalidCredentials, InvalidToken, InvalidUser, TokenNotFound, UnknownUser, UserExists, WouldLockOut } from "./errors.ts"
import { refuseLockOut } from "./lastHolders.ts"

export const PERMISSIONS = ["agents.manage", "providers.manage", "metrics.read", "transcripts.read"] as const
export type Permission = (typeof PERMISSIONS)[number]
/** What makes an admin; an admin passes every permission check (metrics.read and transcripts.read too). */
export const ADMIN_PERMISSIONS: ReadonlyArray<Permission> = ["agents.manage", "providers.manage"]
export const USERNAME = /^[a-z0-9][a-z0-9._@-]{0,63}$/
const SESSION_TTL_MS = 12 * 60 * 60 * 1000
/** API token lifetimes in days: the default, and the longest allowed (there is no "never"). */
export const TOKEN_DEFAULT_DAYS = 90
export const TOKEN_MAX_DAYS = 365
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Holds every admin permission: may administer users and everyone's tokens. */
export const isAdmin = (p: Pick<Principal, "permissions">): boolean => ADMIN_PERMISSIONS.every((x) => p.permissions.has(x))

export interface Principal {
  readonly userId: string
  readonly username: string
  readonly permissions: ReadonlySet<Permission>
  /** How the request proved who it is: a portal session (needs CSRF on changes) or an API token. */
  readonly via: "session" | "token"
  /** The session's CSRF token (sessions only). */
  readonly csrfToken?: string
  /** When the session ends (sessions only). */
  readonly expiresAt?: Date
}

/** An API token as it may be shown: never its value or hash. */
export interface TokenView {
  readonly id: string
  readonly name: string
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
  readonly expiresAt: Date
  readonly revokedAt: Date | null
  readonly status: "active" | "expired" | "revoked"
}

/** Why a password cannot be used, or undefined. */
export const passwordProblem = (password: string): string | undefined =>
  password.length < 12
    ? "a password has at least 12 characters"
    : password.length > 1024
      ? "a password has at most 1024 characters"
      : undefined

export interface UserView {
  readonly username: string
  readonly permissions: ReadonlyArray<Permission>
  readonly createdAt: Date
  readonly disabledAt: Date | null
}

const randomToken = (): string => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")
const hashToken = (token: string): string => new Bun.CryptoHasher("sha256").update(token).digest("hex")

interface UserRow {
  readonly id: string
  readonly username: string
}
const PermissionName = Schema.Literal(...PERMISSIONS)
const NullableTimestamp = Schema.NullOr(Timestamp)
const permissionRows = decodeRows(Schema.Struct({ permission: PermissionName }))
const userRows = decodeRows(
  Schema.Struct({ id: Schema.String, username: Schema.String, passwordHash: Schema.String, disabledAt: NullableTimestamp })
)
const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
const sessionRows = decodeRows(
  Schema.Struct({ id: Schema.String, username: Schema.String, csrfToken: Schema.String, expiresAt: Timestamp })
)
const tokenRows = decodeRows(
  Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    createdAt: Timestamp,
    lastUsedAt: NullableTimestamp,
    expiresAt: Timestamp,
    revokedAt: NullableTimestamp,
    status: Schema.Literal("active", "expired", "revoked")
  })
)
const bearerRows = decodeRows(
  Schema.Struct({
    id: Schema.String,
    username: Schema.String,
    stale: Schema.Boolean,
    expiresAt: Timestamp,
    permissions: Schema.Array(PermissionName)
  })
)
const userViewRows = decodeRows(
  Schema.Struct({ username: Schema.String, permissions: Schema.Array(PermissionName), createdAt: Timestamp, disabledAt: NullableTimestamp })
)
const countRows = decodeRows(Schema.Struct({ n: Num }))

export class Access extends Context.Tag("access/Access")<
  Access,
  {
    /** Creates a user; the password is stored as an argon2id hash, never in clear. */
    readonly addUser: (
      username: string,
      password: string,
      permissions: ReadonlyArray<Permission>
    ) => Effect.Effect<{ readonly id: string }, UserExists | InvalidUser | StoreError>
    /** Adds a permission (idempotent). */
    readonly grant: (username: string, permission: Permission) => Effect.Effect<void, UnknownUser | StoreError>
    /**
     * Replaces the user's permissions in one transaction; refused when it would leave a guarded
     * permission, or every admin permission together, without an enabled holder (the user's own included).
     */
    readonly setPermissions: (
      username: string,
      permissions: ReadonlyArray<Permission>
    ) => Effect.Effect<UserView, UnknownUser | WouldLockOut | StoreError>
    /** Sets a new password (an administrator's reset) and ends every session of the user; tokens stay. */
    readonly setPassword: (username: string, password: string) => Effect.Effect<void, UnknownUser | InvalidUser | StoreError>
    /**
     * Changes the user's own password after checking the current one (InvalidCredentials when wrong, the
     * new one is checked first); ends the user's sessions except `keepSession` (a session token).
     */
    readonly changePassword: (
      username: string,
      currentPassword: string,
      newPassword: string,
      keepSession?: string
    ) => Effect.Effect<void, InvalidCredentials | InvalidUser | StoreError>
    /** One user with permissions and state. */
    readonly user: (username: string) => Effect.Effect<UserView, UnknownUser | StoreError>
    /** Checks a password and opens a portal session; the returned token goes into the cookie only. */
    readonly signIn: (
      username: string,
      password: string
    ) => Effect.Effect<{ readonly token: string; readonly principal: Principal; readonly expiresAt: Date }, InvalidCredentials | StoreError>
    readonly signOut: (sessionToken: string) => Effect.Effect<void, StoreError>
    /** The principal of a live session, or none (unknown or expired). */
    readonly session: (sessionToken: string) => Effect.Effect<Option.Option<Principal>, StoreError>
    /**
     * Creates an API token that expires after `expiresInDays` (default 90, 1 to 365); the value is
     * returned once and only its hash is kept.
     */
    readonly createToken: (
      username: string,
      name: string,
      expiresInDays?: number
    ) => Effect.Effect<{ readonly token: string; readonly view: TokenView }, UnknownUser | InvalidToken | StoreError>
    /** `createToken`, returning only the value. */
    readonly issueToken: (
      username: string,
      name: string,
      expiresInDays?: number
    ) => Effect.Effect<string, UnknownUser | InvalidToken | StoreError>
    /** The user's tokens, newest first, revoked and expired ones included; never a value or hash. */
    readonly tokens: (username: string) => Effect.Effect<ReadonlyArray<TokenView>, UnknownUser | StoreError>
    /** Revokes one of the user's tokens (idempotent); from the next request on it gets 401. */
    readonly revokeToken: (username: string, id: string) => Effect.Effect<TokenView, UnknownUser | TokenNotFound | StoreError>
    /** The principal of a Bearer token, or none (unknown, revoked, expired, or its user disabled). */
    readonly bearer: (token: string) => Effect.Effect<Option.Option<Principal>, StoreError>
    /** Every user with permissions and state, by name. */
    readonly users: Effect.Effect<ReadonlyArray<UserView>, StoreError>
    /**
     * Removes a permission (idempotent); refused when it would leave no enabled holder of it, or no
     * enabled holder of every admin permission together.
     */
    readonly revoke: (username: string, permission: Permission) => Effect.Effect<void, UnknownUser | WouldLockOut | StoreError>
    /**
     * Disables (ends the user's sessions; their sessions and tokens get 401 and sign-in is refused) or
     * enables a user. Refused for `actor` itself and when it would leave a permission, or every admin
     * permission together, without an enabled holder.
     */
    readonly setDisabled: (
      username: string,
      disabled: boolean,
      actor?: string
    ) => Effect.Effect<void, UnknownUser | WouldLockOut | StoreError>
    /** True when no user exists yet (first start). */
    readonly isEmpty: Effect.Effect<boolean, StoreError>
  }
>() {}

/**
 * How long a session's or token's principal is answered from memory at most (while no write happened:
 * DbWrites). Bounds how late a token's `last_used_at` is (written when over a minute old).
 */
export const PRINCIPAL_TTL_MS = 30_000

/**
 * The argon2id cost of the password hashes Access makes: Bun's default (64 MiB, two passes) unless a
 * layer provides another; only the tests' app layer does (a hash's own parameters decide its checks).
 */
export class PasswordHashCost extends Context.Reference<PasswordHashCost>()("PasswordHashCost", {
  defaultValue: (): { readonly memoryCost?: number; readonly timeCost?: number } => ({})
}) {}

export const makeAccess = Effect.gen(function* () {
  const sql = yield* SqlClient
  const cost = yield* PasswordHashCost
  const hashPassword = (password: string) => Bun.password.hash(password, { algorithm: "argon2id", ...cost })
  // A real hash of a random string at this cost: checking an unknown user's password costs what a real check costs.
  let dummy: Promise<string> | undefined
  const dummyHash = (): Promise<string> => (dummy ??= hashPassword(randomToken()))
  // A request authenticates without a statement while nothing was written since its principal was
  // read (the embedded database): a revoked token, a disabled user, a changed permission, a signed-out
  // session is a write, so the next request reads again. Failed lookups are never kept.
  const principals = cachedUntilWrite<
    string,
    Either.Either<Option.Option<{ readonly principal: Principal; readonly expiresAt: Date }>, StoreError>
  >(yield* DbWrites, {
    topic: "access",
    max: 1000,
    ttlMs: PRINCIPAL_TTL_MS,
    until: (found) => (Either.isRight(found) && Option.isSome(found.right) ? found.right.value.expiresAt.getTime() : 0)
  })
  const cachedPrincipal = (
    key: string,
    operation: string,
    read: Effect.Effect<Option.Option<{ readonly principal: Principal; readonly expiresAt: Date }>, SqlError | ParseResult.ParseError>
  ) =>
    Effect.flatMap(
      principals(key, Effect.either(storeErrors(operation)(read)), (found) => Either.isRight(found) && Option.isSome(found.right)),
      Either.map(Option.map((found) => found.principal))
    )

  const permissionsOf = (userId: string) =>
    Effect.map(
      permissionRows(sql`SELECT permission FROM admin.user_permission WHERE user_id = ${userId}`),
      (rows) => new Set(rows.map((r) => r.permission))
    )
  const findUser = (username: string) =>
    Effect.map(userRows(sql`SELECT id, username, password_hash, disabled_at FROM admin.app_user WHERE username = ${username}`), (rows) =>
      Option.fromNullable(rows[0])
    )
  const userOrFail = (username: string) =>
    Effect.flatMap(findUser(username), Option.match({ onNone: () => Effect.fail(new UnknownUser({ username })), onSome: Effect.succeed }))

  const tokenColumns = sql.unsafe(`id, name, created_at, last_used_at, expires_at, revoked_at,
    CASE WHEN revoked_at IS NOT NULL THEN 'revoked' WHEN expires_at <= now() THEN 'expired' ELSE 'active' END AS status`)
  // One change to users or permissions at a time: two admins disabling each other concurrently must not both pass the last-holder check.
  const lockedChange = <A, E>(change: Effect.Effect<A, E, never>) =>
    sql.withTransaction(Effect.zipRight(sql`SELECT pg_advisory_xact_lock(40040)`, change))

  const principalOf = (user: UserRow, via: Principal["via"], csrfToken?: string) =>
    Effect.map(
      permissionsOf(user.id),
      (permissions): Principal => ({
        userId: user.id,
        username: user.username,
        permissions,
        via,
        ...(csrfToken === undefined ? {} : { csrfToken })
      })
    )

  const service: Access["Type"] = {
    addUser: storeMethod("Access.addUser", (username, password, permissions) =>
      Effect.gen(function* () {
        if (!USERNAME.test(username)) {
          return yield* Effect.fail(
            new InvalidUser({
              field: "username",
              message: "a username is 1-64 characters: a-z, 0-9, . _ @ -, starting with a letter or digit"
            })
          )
        }
        const weak = passwordProblem(password)
        if (weak !== undefined) return yield* Effect.fail(new InvalidUser({ field: "password", message: weak }))
        if (Option.isSome(yield* findUser(username))) return yield* Effect.fail(new UserExists({ username }))
        const hash = yield* Effect.promise(() => hashPassword(password))
        // The user and its permissions together; a name taken meanwhile is UserExists, not a constraint error.
        return yield* lockedChange(
          Effect.gen(function* () {
            const rows = yield* idRows(
              sql`INSERT INTO admin.app_user (username, password_hash) VALUES (${username}, ${hash}) ON CONFLICT (username) DO NOTHING RETURNING id`
            )
            const id = rows[0]?.id
            if (id === undefined) return yield* Effect.fail(new UserExists({ username }))
            for (const p of new Set(permissions)) yield* sql`INSERT INTO admin.user_permission (user_id, permission) VALUES (${id}, ${p})`
            return { id }
          })
        )
      })
    ),
    grant: storeMethod("Access.grant", (username, permission) =>
      lockedChange(
        Effect.gen(function* () {
          const user = yield* userOrFail(username)
          yield* sql`INSERT INTO admin.user_permission (user_id, permission) VALUES (${user.id}, ${permission}) ON CONFLICT DO NOTHING`
        })
      )
    ),
    setPermissions: storeMethod("Access.setPermissions", (username, permissions) =>
      Effect.zipRight(
        lockedChange(
          Effect.gen(function* () {
            const user = yield* userOrFail(username)
            const wanted = new Set(permissions)
            yield* refuseLockOut(sql, ADMIN_PERMISSIONS, user, yield* permissionsOf(user.id), {
              enabled: user.disabledAt === null,
              permissions: wanted
            })
            if (wanted.size === 0) yield* sql`DELETE FROM admin.user_permission WHERE user_id = ${user.id}`
            else yield* sql`DELETE FROM admin.user_permission WHERE user_id = ${user.id} AND permission NOT IN ${sql.in([...wanted])}`
            for (const p of wanted)
              yield* sql`INSERT INTO admin.user_permission (user_id, permission) VALUES (${user.id}, ${p}) ON CONFLICT DO NOTHING`
          })
        ),
        service.user(username)
      )
    ),
    setPassword: storeMethod("Access.setPassword", (username, password) =>
      Effect.gen(function* () {
        const weak = passwordProblem(password)
        if (weak !== undefined) return yield* Effect.fail(new InvalidUser({ field: "password", message: weak }))
        yield* userOrFail(username)
        const hash = yield* Effect.promise(() => hashPassword(password))
        yield* lockedChange(
          Effect.gen(function* () {
            const user = yield* userOrFail(username)
            yield* sql`UPDATE admin.app_user SET password_hash = ${hash} WHERE id = ${user.id}`
            yield* sql`DELETE FROM admin.session WHERE user_id = ${user.id}`
          })
        )
      })
    ),
    changePassword: storeMethod("Access.changePassword", (username, currentPassword, newPassword, keepSession) =>
      Effect.gen(function* () {
        const weak = passwordProblem(newPassword)
        if (weak !== undefined) return yield* Effect.fail(new InvalidUser({ field: "password", message: weak }))
        const user = yield* findUser(username)
        const hash = Option.isSome(user) ? user.value.passwordHash : yield* Effect.promise(dummyHash)
        const ok = yield* Effect.promise(() => Bun.password.verify(currentPassword, hash))
        if (!ok || Option.isNone(user) || user.value.disabledAt !== null) return yield* Effect.fail(new InvalidCredentials())
        const id = user.value.id
        const next = yield* Effect.promise(() => hashPassword(newPassword))
        const kept = keepSession === undefined ? "" : hashToken(keepSession)
        yield* sql.withTransaction(
          Effect.zipRight(
            sql`UPDATE admin.app_user SET password_hash = ${next} WHERE id = ${id}`,
            sql`DELETE FROM admin.session WHERE user_id = ${id} AND token_hash <> ${kept}`
          )
        )
      })
    ),
    user: storeMethod("Access.user", (username) =>
      Effect.flatMap(service.users, (users) => {
        const found = users.find((u) => u.username === username)
        return found === undefined ? Effect.fail(new UnknownUser({ username })) : Effect.succeed(found)
      })
    ),
    signIn: storeMethod("Access.signIn", (username, password) =>
      Effect.gen(function* () {
        const user = yield* findUser(username)
        // Verify against a dummy hash for unknown users too, so timing does not tell which usernames exist.
        const hash = Option.isSome(user) ? user.value.passwordHash : yield* Effect.promise(dummyHash)
        const ok = yield* Effect.promise(() => Bun.password.verify(password, hash))
        if (!ok || Option.isNone(user)) return yield* Effect.fail(new InvalidCredentials())
        if (user.value.disabledAt !== null) return yield* Effect.fail(new InvalidCredentials({ disabled: true }))
        const token = randomToken()
        const csrf = randomToken()
        const expiresAt = new Date((yield* Clock.currentTimeMillis) + SESSION_TTL_MS)
        yield* sql`INSERT INTO admin.session (token_hash, user_id, csrf_token, expires_at) VALUES (${hashToken(token)}, ${user.value.id}, ${csrf}, ${expiresAt})`
        return { token, expiresAt, principal: { ...(yield* principalOf(user.value, "session", csrf)), expiresAt } }
      })
    ),
    signOut: storeMethod("Access.signOut", (token) => Effect.asVoid(sql`DELETE FROM admin.session WHERE token_hash = ${hashToken(token)}`)),
    session: (token) => {
      const hash = hashToken(token)
      return cachedPrincipal(
        `session:${hash}`,
        "Access.session",
        Effect.gen(function* () {
          const rows = yield* sessionRows(sql`
          SELECT u.id, u.username, s.csrf_token, s.expires_at FROM admin.session s JOIN admin.app_user u ON u.id = s.user_id
          WHERE s.token_hash = ${hash} AND s.expires_at > now() AND u.disabled_at IS NULL`)
          const row = rows[0]
          return row === undefined
            ? Option.none()
            : Option.some({
                principal: { ...(yield* principalOf(row, "session", row.csrfToken)), expiresAt: row.expiresAt },
                expiresAt: row.expiresAt
              })
        })
      )
    },
    createToken: storeMethod("Access.createToken", (username, name, expiresInDays = TOKEN_DEFAULT_DAYS) =>
      Effect.gen(function* () {
        const problems = [
          ...(name.length < 1 || name.length > 64 || /\p{Cc}/u.test(name)
            ? ["a token name is 1-64 characters without control characters"]
            : []),
          ...(!Number.isInteger(expiresInDays) || expiresInDays < 1 || expiresInDays > TOKEN_MAX_DAYS
            ? [`a token expires after 1 to ${TOKEN_MAX_DAYS} whole days`]
            : [])
        ]
        if (problems.length > 0) return yield* Effect.fail(new InvalidToken({ message: problems.join("; ") }))
        const user = yield* userOrFail(username)
        const token = `kt_${randomToken()}`
        const rows = yield* tokenRows(sql`
          INSERT INTO admin.api_token (user_id, name, token_hash, expires_at)
          VALUES (${user.id}, ${name}, ${hashToken(token)}, now() + make_interval(days => ${expiresInDays}))
          RETURNING ${tokenColumns}`)
        // An INSERT … RETURNING answers its row or fails: none is a bug.
        return { token, view: rows[0] ?? (yield* Effect.dieMessage("an INSERT … RETURNING answered no row")) }
      })
    ),
    issueToken: storeMethod("Access.issueToken", (username, name, expiresInDays) =>
      Effect.map(service.createToken(username, name, expiresInDays), (t) => t.token)
    ),
    tokens: storeMethod("Access.tokens", (username) =>
      Effect.gen(function* () {
        const user = yield* userOrFail(username)
        return yield* tokenRows(sql`SELECT ${tokenColumns} FROM admin.api_token WHERE user_id = ${user.id} ORDER BY created_at DESC, id`)
      })
    ),
    revokeToken: storeMethod("Access.revokeToken", (username, id) =>
      Effect.gen(function* () {
        const user = yield* userOrFail(username)
        // Not a uuid: no such token (and no SQL error from the cast).
        if (!UUID.test(id)) return yield* Effect.fail(new TokenNotFound({ id }))
        const rows = yield* tokenRows(sql`
          UPDATE admin.api_token SET revoked_at = coalesce(revoked_at, now())
          WHERE id = ${id.toLowerCase()} AND user_id = ${user.id} RETURNING ${tokenColumns}`)
        return rows[0] ?? (yield* Effect.fail(new TokenNotFound({ id })))
      })
    ),
    bearer: (token) => {
      const hash = hashToken(token)
      return cachedPrincipal(
        `token:${hash}`,
        "Access.bearer",
        Effect.gen(function* () {
          // One read on the hot path (user and permissions together); last_used_at is written only when
          // it is more than a minute old, so a client's burst of requests does not queue on one row lock.
          const rows = yield* bearerRows(sql`
          SELECT u.id, u.username, (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute') AS stale, t.expires_at,
            coalesce(array_agg(p.permission) FILTER (WHERE p.permission IS NOT NULL), '{}') AS permissions
          FROM admin.api_token t JOIN admin.app_user u ON u.id = t.user_id
          LEFT JOIN admin.user_permission p ON p.user_id = u.id
          WHERE t.token_hash = ${hash} AND t.revoked_at IS NULL AND t.expires_at > now() AND u.disabled_at IS NULL
          GROUP BY u.id, u.username, t.last_used_at, t.expires_at`)
          const row = rows[0]
          if (row === undefined) return Option.none()
          if (row.stale) yield* sql`UPDATE admin.api_token SET last_used_at = now() WHERE token_hash = ${hash}`
          const principal: Principal = { userId: row.id, username: row.username, permissions: new Set(row.permissions), via: "token" }
          return Option.some({ principal, expiresAt: row.expiresAt })
        })
      )
    },
    users: storeErrors("Access.users")(
      Effect.map(
        userViewRows(sql`
        SELECT u.username, u.created_at, u.disabled_at,
          coalesce(array_agg(p.permission ORDER BY p.permission) FILTER (WHERE p.permission IS NOT NULL), '{}') AS permissions
        FROM admin.app_user u LEFT JOIN admin.user_permission p ON p.user_id = u.id
        GROUP BY u.id ORDER BY u.username`),
        (rows): ReadonlyArray<UserView> => rows.map((r) => ({ ...r, permissions: [...r.permissions] }))
      )
    ),
    revoke: storeMethod("Access.revoke", (username, permission) =>
      lockedChange(
        Effect.gen(function* () {
          const user = yield* userOrFail(username)
          const held = yield* permissionsOf(user.id)
          const remaining = new Set([...held].filter((p) => p !== permission))
          yield* refuseLockOut(sql, ADMIN_PERMISSIONS, user, held, { enabled: user.disabledAt === null, permissions: remaining })
          yield* sql`DELETE FROM admin.user_permission WHERE user_id = ${user.id} AND permission = ${permission}`
        })
      )
    ),
    setDisabled: storeMethod("Access.setDisabled", (username, disabled, actor) =>
      lockedChange(
        Effect.gen(function* () {
          const user = yield* userOrFail(username)
          if (!disabled) {
            yield* sql`UPDATE admin.app_user SET disabled_at = NULL WHERE id = ${user.id}`
            return
          }
          if (actor === username) return yield* Effect.fail(new WouldLockOut({ message: "you cannot disable yourself" }))
          if (user.disabledAt !== null) return
          const held = yield* permissionsOf(user.id)
          yield* refuseLockOut(sql, ADMIN_PERMISSIONS, user, held, { enabled: false, permissions: held })
          yield* sql`UPDATE admin.app_user SET disabled_at = now() WHERE id = ${user.id}`
          yield* sql`DELETE FROM admin.session WHERE user_id = ${user.id}`
        })
      )
    ),
    isEmpty: storeErrors("Access.isEmpty")(
      Effect.map(countRows(sql`SELECT count(*) AS n FROM admin.app_user`), (rows) => (rows[0]?.n ?? 0) === 0)
    )
  }
  return service
})

export const AccessLive = Layer.effect(
  Access,
  Effect.map(makeAccess, (service) => traced("Access", service))
)
