/**
 * Portal pages for API tokens (/account: yours, the value shown once after creating) and users
 * (/users: holders of every permission disable, enable and remove permissions), through Access.
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import { Access, isAdmin, PERMISSIONS, TOKEN_DEFAULT_DAYS, type Permission } from "../../access/Access.ts"
import { decodeAll, type Problem } from "../../contract/Problem.ts"
import { accountPage, usersPage, type TokenForm } from "../../../views/pages/account.ts"
import { accessError, requireSession, TokenInput } from "../api/tokens.ts"
import { notFound, type ApiError } from "../respond.ts"
import { htmlResponse, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const text = (input: PortalInput, name: string): string => {
  const v = input.form.get(name)
  return typeof v === "string" ? v : ""
}

const render = (input: PortalInput, form: TokenForm, problems: ReadonlyArray<Problem>, created: { name: string; secret: string } | null, status = 200) =>
  Effect.map(
    Effect.flatMap(Access, (a) => a.tokens(input.principal.username)),
    (tokens) => htmlResponse(accountPage(input.page, tokens, { form, problems, created, notice: noticeOf(input.url, "") }), status)
  ).pipe(Effect.mapError(accessError))

const blank: TokenForm = { name: "", expiresInDays: String(TOKEN_DEFAULT_DAYS) }

const permissionParam = (raw: string): Effect.Effect<Permission, ApiError> =>
  (PERMISSIONS as ReadonlyArray<string>).includes(raw) ? Effect.succeed(raw as Permission) : Effect.fail(notFound(`no permission "${raw}"`))

export const accountPages = (portal: PortalRunner) =>
  new Elysia()
    .get("/account", portal.page("read", (input) => render(input, blank, [], null)))
    .post(
      "/account/tokens",
      portal.action("read", (input) =>
        Effect.gen(function* () {
          yield* requireSession(input.principal)
          const form: TokenForm = { name: text(input, "name").trim(), expiresInDays: text(input, "expiresInDays").trim() }
          const days = /^\d{1,9}$/.test(form.expiresInDays) ? Number(form.expiresInDays) : form.expiresInDays === "" ? undefined : Number.NaN
          const decoded = decodeAll(TokenInput)({ name: form.name, ...(days === undefined ? {} : { expiresInDays: days }) })
          if (Either.isLeft(decoded)) return yield* render(input, form, decoded.left, null, 400)
          const made = yield* (yield* Access).createToken(input.principal.username, decoded.right.name, decoded.right.expiresInDays).pipe(Effect.mapError(accessError))
          // Rendered, not redirected: the value exists only in this response (no-store) and is never shown again.
          return yield* render(input, blank, [], { name: made.view.name, secret: made.token })
        })
      )
    )
    .post(
      "/account/tokens/:id/revoke",
      portal.action("read", (input) =>
        Effect.map(
          Effect.flatMap(Access, (a) => a.revokeToken(input.principal.username, input.params["id"] ?? "")),
          (t) => redirect(input.request, `/account?revoked=${encodeURIComponent(t.name)}`)
        ).pipe(Effect.mapError(accessError))
      )
    )
    .get("/users", portal.page("admin", ({ page, url }) => Effect.map(Effect.flatMap(Access, (a) => a.users), (users) => htmlResponse(usersPage(page, users, noticeOf(url, ""))))))
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
          const still = (yield* (yield* Access).users).find((u) => u.username === input.principal.username)
          const admin = still !== undefined && isAdmin({ permissions: new Set(still.permissions) })
          return redirect(input.request, admin ? `/users?removed=${encodeURIComponent(`${permission} from ${name}`)}` : `/account?removed=${encodeURIComponent(permission)}`)
        })
      )
    )
