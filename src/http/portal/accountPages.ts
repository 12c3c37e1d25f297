/**
 * Portal pages of your account (/account): your API tokens (the value shown once after creating) and
 * your password (/account/password: the current one is checked behind the sign-in throttle).
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import { Access, TOKEN_DEFAULT_DAYS } from "../../access/Access.ts"
import { SignInThrottle } from "../../access/SignInThrottle.ts"
import { decodeAll, type Problem } from "../../contract/Problem.ts"
import { accountPage, passwordPage, type TokenForm } from "../../../views/pages/account.ts"
import { changeOwnPassword } from "../api/session.ts"
import { accessError, requireSession, TokenInput } from "../api/tokens.ts"
import { htmlResponse, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const text = (input: PortalInput, name: string): string => {
  const v = input.form.get(name)
  return typeof v === "string" ? v : ""
}

const render = (
  input: PortalInput,
  form: TokenForm,
  problems: ReadonlyArray<Problem>,
  created: { name: string; secret: string } | null,
  status = 200
) =>
  Effect.map(
    Effect.flatMap(Access, (a) => a.tokens(input.principal.username)),
    (tokens) => htmlResponse(accountPage(input.page, tokens, { form, problems, created, notice: noticeOf(input.url, "") }), status)
  ).pipe(Effect.mapError(accessError))

const blank: TokenForm = { name: "", expiresInDays: String(TOKEN_DEFAULT_DAYS) }

export const accountPages = (portal: PortalRunner, throttle: SignInThrottle["Type"]) =>
  new Elysia()
    .get(
      "/account",
      portal.page("read", (input) => render(input, blank, [], null))
    )
    .post(
      "/account/tokens",
      portal.action("read", (input) =>
        Effect.gen(function* () {
          yield* requireSession(input.principal)
          const form: TokenForm = { name: text(input, "name").trim(), expiresInDays: text(input, "expiresInDays").trim() }
          const days = /^\d{1,9}$/.test(form.expiresInDays)
            ? Number(form.expiresInDays)
            : form.expiresInDays === ""
              ? undefined
              : Number.NaN
          const decoded = decodeAll(TokenInput)({ name: form.name, ...(days === undefined ? {} : { expiresInDays: days }) })
          if (Either.isLeft(decoded)) return yield* render(input, form, decoded.left, null, 400)
          const made = yield* (yield* Access)
            .createToken(input.principal.username, decoded.right.name, decoded.right.expiresInDays)
            .pipe(Effect.mapError(accessError))
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
    .get(
      "/account/password",
      portal.page("read", (input) => Effect.succeed(htmlResponse(passwordPage(input.page, { problems: [] }))))
    )
    .post(
      "/account/password",
      portal.action("read", (input) =>
        Effect.gen(function* () {
          const newPassword = text(input, "newPassword")
          if (newPassword !== text(input, "confirmPassword")) {
            return htmlResponse(
              passwordPage(input.page, { problems: [{ path: "confirmPassword", message: "is not the same as the new password" }] }),
              400
            )
          }
          const changed = yield* Effect.either(
            changeOwnPassword(input.request, input.principal, text(input, "currentPassword"), newPassword)
          )
          if (Either.isLeft(changed)) {
            const e = changed.left
            if (e._tag === "BadRequest") return htmlResponse(passwordPage(input.page, { problems: e.problems }), 400)
            if (e._tag === "TooManyRequests") {
              return htmlResponse(passwordPage(input.page, { problems: [{ path: "currentPassword", message: e.message }] }), 429, {
                "retry-after": String(e.retryAfterSeconds)
              })
            }
            return yield* Effect.fail(e)
          }
          return redirect(input.request, `/account?updated=${encodeURIComponent("your password; your other sessions ended")}`)
        }).pipe(Effect.provideService(SignInThrottle, throttle))
      )
    )
