/**
 * Portal pages of user administration (/users, /users/<name>) for holders of every admin permission:
 * create a user, set their permissions, reset their password, disable or enable them. Each change is
 * one call of Access (one transaction with the last-holder rules) and applies at once.
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import { Access, isAdmin, PERMISSIONS, type Permission } from "../../access/Access.ts"
import { decodeAll, type Problem } from "../../contract/Problem.ts"
import { userHref, userPage, usersPage, type NewUserForm, type UserPageProblems } from "../../../views/pages/users.ts"
import { accessError, NewUser, PasswordReset, PermissionsInput } from "../api/tokens.ts"
import { notFound, type ApiError } from "../respond.ts"
import { htmlResponse, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const text = (input: PortalInput, name: string): string => {
  const v = input.form.get(name)
  return typeof v === "string" ? v : ""
}
/** The checked permission boxes (the empty value keeps an all-unchecked form's field present). */
const checked = (input: PortalInput): Array<string> =>
  input.form.getAll("permissions").flatMap((v) => (typeof v === "string" && v !== "" ? [v] : []))

const permissionParam = (raw: string): Effect.Effect<Permission, ApiError> =>
  (PERMISSIONS as ReadonlyArray<string>).includes(raw) ? Effect.succeed(raw as Permission) : Effect.fail(notFound(`no permission "${raw}"`))

const listPage = (input: PortalInput, form: NewUserForm, problems: ReadonlyArray<Problem>, status = 200) =>
  Effect.map(
    Effect.flatMap(Access, (a) => a.users),
    (users) => htmlResponse(usersPage(input.page, users, { notice: noticeOf(input.url, ""), form, problems }), status)
  )

const onePage = (input: PortalInput, problems: UserPageProblems, status = 200) =>
  Effect.map(
    Effect.flatMap(Access, (a) => a.user(input.params["name"] ?? "")),
    (user) => htmlResponse(userPage(input.page, user, { notice: noticeOf(input.url, ""), problems }), status)
  ).pipe(Effect.mapError(accessError))

const NO_PROBLEMS: UserPageProblems = { permissions: [], password: [] }

/** Where to go after a change of `input.principal`'s own permissions: /users only while still an admin. */
const afterOwnChange = (input: PortalInput, adminTo: string, otherwise: string) =>
  Effect.map(
    Effect.flatMap(Access, (a) => a.user(input.principal.username)),
    (me) => redirect(input.request, isAdmin({ permissions: new Set(me.permissions) }) ? adminTo : otherwise)
  ).pipe(Effect.mapError(accessError))

export const userPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/users",
      portal.page("admin", (input) => listPage(input, { username: "", permissions: [] }, []))
    )
    .post(
      "/users",
      portal.action("admin", (input) =>
        Effect.gen(function* () {
          const form: NewUserForm = { username: text(input, "username").trim(), permissions: checked(input) }
          const decoded = decodeAll(NewUser)({ username: form.username, password: text(input, "password"), permissions: form.permissions })
          if (Either.isLeft(decoded)) return yield* listPage(input, form, decoded.left, 400)
          const added = yield* Effect.either(
            (yield* Access).addUser(decoded.right.username, decoded.right.password, decoded.right.permissions)
          )
          if (Either.isLeft(added)) {
            const e = added.left
            return yield* listPage(
              input,
              form,
              [{ path: e._tag === "InvalidUser" ? e.field : "username", message: e.message }],
              e._tag === "UserExists" ? 409 : 400
            )
          }
          return redirect(input.request, userHref(decoded.right.username, `?added=${encodeURIComponent(decoded.right.username)}`))
        })
      )
    )
    .get(
      "/users/:name",
      portal.page("admin", (input) => onePage(input, NO_PROBLEMS))
    )
    .post(
      "/users/:name/permissions",
      portal.action("admin", (input) =>
        Effect.gen(function* () {
          const name = input.params["name"] ?? ""
          const decoded = decodeAll(PermissionsInput)({ permissions: checked(input) })
          if (Either.isLeft(decoded)) return yield* onePage(input, { ...NO_PROBLEMS, permissions: decoded.left }, 400)
          const set = yield* Effect.either((yield* Access).setPermissions(name, decoded.right.permissions))
          if (Either.isLeft(set)) {
            if (set.left._tag === "UnknownUser") return yield* Effect.fail(accessError(set.left))
            return yield* onePage(input, { ...NO_PROBLEMS, permissions: [{ path: "permissions", message: set.left.message }] }, 403)
          }
          const notice = `?updated=${encodeURIComponent(`the permissions of ${name}`)}`
          return yield* afterOwnChange(input, userHref(name, notice), `/account${notice}`)
        })
      )
    )
    .post(
      "/users/:name/password",
      portal.action("admin", (input) =>
        Effect.gen(function* () {
          const name = input.params["name"] ?? ""
          const decoded = decodeAll(PasswordReset)({ password: text(input, "password") })
          if (Either.isLeft(decoded)) return yield* onePage(input, { ...NO_PROBLEMS, password: decoded.left }, 400)
          const reset = yield* Effect.either((yield* Access).setPassword(name, decoded.right.password))
          if (Either.isLeft(reset)) {
            if (reset.left._tag === "UnknownUser") return yield* Effect.fail(accessError(reset.left))
            return yield* onePage(input, { ...NO_PROBLEMS, password: [{ path: "password", message: reset.left.message }] }, 400)
          }
          // Resetting one's own password ends one's own sessions too: the next page asks to sign in.
          return redirect(input.request, userHref(name, `?updated=${encodeURIComponent(`the password of ${name}; their sessions ended`)}`))
        })
      )
    )
    .post(
      "/users/:name/disabled",
      portal.action("admin", (input) =>
        Effect.gen(function* () {
          const name = input.params["name"] ?? ""
          const disabled = text(input, "disabled") === "true"
          yield* (yield* Access).setDisabled(name, disabled, input.principal.username).pipe(Effect.mapError(accessError))
          return redirect(input.request, `/users?${disabled ? "disabled" : "enabled"}=${encodeURIComponent(name)}`)
        })
      )
    )
    .post(
      "/users/:name/permissions/:permission/remove",
      portal.action("admin", (input) =>
        Effect.gen(function* () {
          const name = input.params["name"] ?? ""
          const permission = yield* permissionParam(input.params["permission"] ?? "")
          yield* (yield* Access).revoke(name, permission).pipe(Effect.mapError(accessError))
          // Removing one's own last admin permission leaves /users: go back to the tokens page then.
          return yield* afterOwnChange(
            input,
            `/users?removed=${encodeURIComponent(`${permission} from ${name}`)}`,
            `/account?removed=${encodeURIComponent(permission)}`
          )
        })
      )
    )
