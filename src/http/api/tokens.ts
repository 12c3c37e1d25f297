/**
 * API tokens and user administration. Everyone lists and revokes their own tokens; a new token needs a
 * session (a leaked token cannot mint its own successors). Holders of every permission ("admin") list,
 * create, disable and enable users, set their permissions, reset their passwords, and list or revoke
 * anyone's tokens.
 */
import { Effect, Schema } from "effect"
import { Elysia } from "elysia"
import {
  Access,
  passwordProblem,
  PERMISSIONS,
  TOKEN_DEFAULT_DAYS,
  TOKEN_MAX_DAYS,
  USERNAME,
  type Permission,
  type Principal,
  type TokenView,
  type UserView
} from "../../access/Access.ts"
import type { InvalidToken, InvalidUser, TokenNotFound, UnknownUser, UserExists, WouldLockOut } from "../../access/errors.ts"
import type { StoreError } from "../../db/StoreError.ts"
import type { Guard } from "../auth.ts"
import { badRequest, forbidden, json, notFound, type ApiError } from "../respond.ts"
import { decodeBody, param, type Handler } from "../route.ts"

type Route = (
  guard: Guard,
  handler: Handler
) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>

export const TokenInput = Schema.Struct({
  name: Schema.String.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(64, { message: () => "must be at most 64 characters" }),
    Schema.filter((s) => !/\p{Cc}/u.test(s), { message: () => "must not contain control characters" })
  ),
  expiresInDays: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.int({ message: () => "must be a whole number of days" }),
      Schema.between(1, TOKEN_MAX_DAYS, { message: () => `must be between 1 and ${TOKEN_MAX_DAYS}` })
    ),
    { exact: true, default: () => TOKEN_DEFAULT_DAYS }
  )
})
const UserPatch = Schema.Struct({ disabled: Schema.Boolean })
/** A permission by name; anything else names the ones there are. */
const PermissionName = Schema.String.pipe(
  Schema.filter((s): s is Permission => (PERMISSIONS as ReadonlyArray<string>).includes(s), {
    message: () => `must be one of ${PERMISSIONS.join(", ")}`
  })
)
const Permissions = Schema.Array(PermissionName).pipe(
  Schema.maxItems(PERMISSIONS.length * 2, { message: () => "lists too many permissions" })
)
const USERNAME_RULE = "a username is 1-64 characters: a-z, 0-9, . _ @ -, starting with a letter or digit"
/** A password Access accepts (it checks again): judged here so that a refused request names every problem at once. */
const Password = Schema.String.pipe(Schema.filter((s) => passwordProblem(s) ?? true))
export const NewUser = Schema.Struct({
  username: Schema.String.pipe(Schema.filter((s) => USERNAME.test(s), { message: () => USERNAME_RULE })),
  password: Password,
  permissions: Schema.optionalWith(Permissions, { exact: true, default: () => [] })
})
export const PermissionsInput = Schema.Struct({ permissions: Permissions })
export const PasswordReset = Schema.Struct({ password: Password })

const tokenJson = (t: TokenView) => ({
  ...t,
  createdAt: t.createdAt.toISOString(),
  lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
  expiresAt: t.expiresAt.toISOString(),
  revokedAt: t.revokedAt?.toISOString() ?? null
})
const userJson = (u: UserView) => ({
  username: u.username,
  permissions: u.permissions,
  disabled: u.disabledAt !== null,
  createdAt: u.createdAt.toISOString(),
  disabledAt: u.disabledAt?.toISOString() ?? null
})

/** Access's domain errors as API errors. */
export const accessError = (
  e: UnknownUser | TokenNotFound | InvalidToken | WouldLockOut | InvalidUser | UserExists | StoreError
): ApiError => {
  switch (e._tag) {
    case "StoreUnavailable":
    case "RowInvalid":
      return e
    case "UnknownUser":
    case "TokenNotFound":
      return notFound(e.message)
    case "InvalidToken":
      return badRequest([{ path: "(body)", message: e.message }])
    case "InvalidUser":
      return badRequest([{ path: e.field, message: e.message }])
    case "UserExists":
      return e
    case "WouldLockOut":
      // Allowed for nobody: a refusal, not a conflict to retry.
      return forbidden(e.message)
  }
}

/** Only a session may create a token: the password, not another token, proves the holder. */
export const requireSession = (principal: Principal): Effect.Effect<void, ApiError> =>
  principal.via === "session"
    ? Effect.void
    : Effect.fail(forbidden("an API token cannot create API tokens; sign in (POST /api/session) and use the session"))

const permissionParam = (raw: string): Effect.Effect<Permission, ApiError> =>
  (PERMISSIONS as ReadonlyArray<string>).includes(raw)
    ? Effect.succeed(raw as Permission)
    : Effect.fail(notFound(`no permission "${raw}" (there are ${PERMISSIONS.join(", ")})`))

export const tokenRoutes = (route: Route) =>
  new Elysia({ name: "tokens-api" })
    .get(
      "/api/tokens",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(Access, (a) => a.tokens(i.principal.username)),
          (ts) => json({ tokens: ts.map(tokenJson) })
        ).pipe(Effect.mapError(accessError))
      )
    )
    .post(
      "/api/tokens",
      route("read", (i) =>
        Effect.gen(function* () {
          yield* requireSession(i.principal)
          const input = yield* decodeBody(i.request, TokenInput)
          const made = yield* (yield* Access)
            .createToken(i.principal.username, input.name, input.expiresInDays)
            .pipe(Effect.mapError(accessError))
          return json({ token: tokenJson(made.view), secret: made.token }, 201)
        })
      )
    )
    .delete(
      "/api/tokens/:id",
      route("read", (i) =>
        Effect.as(
          Effect.flatMap(Access, (a) => a.revokeToken(i.principal.username, param(i, "id"))),
          new Response(null, { status: 204 })
        ).pipe(Effect.mapError(accessError))
      )
    )
    .get(
      "/api/admin/users",
      route("admin", () =>
        Effect.map(
          Effect.flatMap(Access, (a) => a.users),
          (us) => json({ users: us.map(userJson) })
        )
      )
    )
    .post(
      "/api/admin/users",
      route("admin", (i) =>
        Effect.gen(function* () {
          const input = yield* decodeBody(i.request, NewUser)
          const access = yield* Access
          yield* access.addUser(input.username, input.password, input.permissions).pipe(Effect.mapError(accessError))
          return json({ user: userJson(yield* access.user(input.username).pipe(Effect.mapError(accessError))) }, 201)
        })
      )
    )
    .put(
      "/api/admin/users/:name/permissions",
      route("admin", (i) =>
        Effect.gen(function* () {
          const input = yield* decodeBody(i.request, PermissionsInput)
          const user = yield* (yield* Access).setPermissions(param(i, "name"), input.permissions).pipe(Effect.mapError(accessError))
          return json({ user: userJson(user) })
        })
      )
    )
    .post(
      "/api/admin/users/:name/password",
      route("admin", (i) =>
        Effect.gen(function* () {
          const input = yield* decodeBody(i.request, PasswordReset)
          yield* (yield* Access).setPassword(param(i, "name"), input.password).pipe(Effect.mapError(accessError))
          return new Response(null, { status: 204 })
        })
      )
    )
    .patch(
      "/api/admin/users/:name",
      route("admin", (i) =>
        Effect.gen(function* () {
          const name = param(i, "name")
          const patch = yield* decodeBody(i.request, UserPatch)
          const access = yield* Access
          yield* access.setDisabled(name, patch.disabled, i.principal.username).pipe(Effect.mapError(accessError))
          const user = (yield* access.users).find((u) => u.username === name)
          return json({ user: user === undefined ? null : userJson(user) })
        })
      )
    )
    .delete(
      "/api/admin/users/:name/permissions/:permission",
      route("admin", (i) =>
        Effect.gen(function* () {
          const permission = yield* permissionParam(param(i, "permission"))
          yield* (yield* Access).revoke(param(i, "name"), permission).pipe(Effect.mapError(accessError))
          return new Response(null, { status: 204 })
        })
      )
    )
    .get(
      "/api/admin/users/:name/tokens",
      route("admin", (i) =>
        Effect.map(
          Effect.flatMap(Access, (a) => a.tokens(param(i, "name"))),
          (ts) => json({ tokens: ts.map(tokenJson) })
        ).pipe(Effect.mapError(accessError))
      )
    )
    .delete(
      "/api/admin/users/:name/tokens/:id",
      route("admin", (i) =>
        Effect.as(
          Effect.flatMap(Access, (a) => a.revokeToken(param(i, "name"), param(i, "id"))),
          new Response(null, { status: 204 })
        ).pipe(Effect.mapError(accessError))
      )
    )
