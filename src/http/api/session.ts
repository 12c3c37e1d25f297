/**
 * Sign-in and sign-out for programs and the portal: a session cookie plus the session's CSRF token.
 * Sign-in is refused from other sites (login CSRF), reads at most 64 KiB and is throttled; so is the
 * check of the current password when a signed-in user changes theirs.
 */
import { Effect, Schema } from "effect"
import { Elysia } from "elysia"
import { Access, type Principal } from "../../access/Access.ts"
import { SignInThrottle, type SignInThrottled } from "../../access/SignInThrottle.ts"
import { clearedSessionCookie, cookieValue, crossSiteProblem, SESSION_COOKIE, sessionCookie, type Guard } from "../auth.ts"
import { SIGN_IN_BODY_BYTES } from "../body.ts"
import { clientAddress } from "../edge.ts"
import { badRequest, json, TooManyRequests, type ApiError } from "../respond.ts"
import { decodeBody, type AppServices, type Handler } from "../route.ts"

const SignIn = Schema.Struct({ username: Schema.String, password: Schema.String })
const PasswordChange = Schema.Struct({ currentPassword: Schema.String, newPassword: Schema.String })

const who = (p: Principal) => ({ username: p.username, permissions: [...p.permissions].sort(), csrfToken: p.csrfToken ?? null })

/** A throttled sign-in as the API's 429 (with Retry-After). */
const tooManyRequests = (e: SignInThrottled): ApiError =>
  new TooManyRequests({ message: e.message, retryAfterSeconds: e.retryAfterSeconds })

/** Access.signIn behind the throttle (per username and per the request's client address). */
export const throttledSignIn = (request: Request, username: string, password: string) =>
  Effect.flatMap(Effect.all([Access, SignInThrottle]), ([access, throttle]) =>
    throttle.guard(username, clientAddress(request), access.signIn(username, password))
  )

/**
 * Changes the principal's own password behind the throttle (the current one is a password check like a
 * sign-in); ends their other sessions and keeps the request's own. Every refusal names the field.
 */
export const changeOwnPassword = (request: Request, principal: Principal, currentPassword: string, newPassword: string) =>
  Effect.flatMap(Effect.all([Access, SignInThrottle]), ([access, throttle]) =>
    throttle.guard(
      principal.username,
      clientAddress(request),
      access.changePassword(
        principal.username,
        currentPassword,
        newPassword,
        principal.via === "session" ? cookieValue(request, SESSION_COOKIE) : undefined
      )
    )
  ).pipe(
    Effect.catchTags({
      InvalidCredentials: () => Effect.fail(badRequest([{ path: "currentPassword", message: "is not your current password" }])),
      InvalidUser: (e) => Effect.fail(badRequest([{ path: "newPassword", message: e.message }])),
      SignInThrottled: (e) => Effect.fail(tooManyRequests(e))
    })
  )

export const sessionRoutes = (
  route: (guard: Guard, handler: Handler) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>,
  publicRoute: (
    handler: (request: Request) => Effect.Effect<Response, ApiError, AppServices>
  ) => (ctx: { request: Request }) => Promise<Response>,
  throttle: SignInThrottle["Type"]
) =>
  new Elysia({ name: "session-api" })
    .post(
      "/api/session",
      publicRoute((request) =>
        Effect.gen(function* () {
          // No session yet, so no CSRF token: the same-origin check keeps other sites from signing a browser in.
          const crossSite = crossSiteProblem(request)
          if (crossSite !== undefined) return yield* Effect.fail(crossSite)
          const { username, password } = yield* decodeBody(request, SignIn, SIGN_IN_BODY_BYTES)
          const session = yield* throttledSignIn(request, username, password).pipe(
            Effect.catchTag("SignInThrottled", (e) => Effect.fail(tooManyRequests(e)))
          )
          return json({ user: who(session.principal) }, 200, { "set-cookie": sessionCookie(session.token, session.expiresAt) })
        }).pipe(Effect.provideService(SignInThrottle, throttle))
      )
    )
    .get(
      "/api/session",
      route("read", ({ principal }) => Effect.succeed(json({ user: who(principal) })))
    )
    .post(
      "/api/account/password",
      route("read", ({ request, principal }) =>
        Effect.gen(function* () {
          const input = yield* decodeBody(request, PasswordChange, SIGN_IN_BODY_BYTES)
          yield* changeOwnPassword(request, principal, input.currentPassword, input.newPassword)
          return new Response(null, { status: 204 })
        }).pipe(Effect.provideService(SignInThrottle, throttle))
      )
    )
    .delete(
      "/api/session",
      route("read", ({ request }) =>
        Effect.gen(function* () {
          const token = cookieValue(request, SESSION_COOKIE)
          if (token !== undefined) yield* (yield* Access).signOut(token)
          return new Response(null, { status: 204, headers: { "set-cookie": clearedSessionCookie } })
        })
      )
    )
