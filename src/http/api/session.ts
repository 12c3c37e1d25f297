/** Sign-in and sign-out for programs and the portal: a session cookie plus the session's CSRF token. */
import { Effect, Schema } from "effect"
import { Elysia } from "elysia"
import { Access, type Principal } from "../../access/Access.ts"
import { clearedSessionCookie, cookieValue, SESSION_COOKIE, sessionCookie, type Guard } from "../auth.ts"
import { json, type ApiError } from "../respond.ts"
import { decodeBody, type AppServices, type Handler } from "../route.ts"

const SignIn = Schema.Struct({ username: Schema.String, password: Schema.String })

const who = (p: Principal) => ({ username: p.username, permissions: [...p.permissions].sort(), csrfToken: p.csrfToken ?? null })

export const sessionRoutes = (
  route: (guard: Guard, handler: Handler) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>,
  publicRoute: (handler: (request: Request) => Effect.Effect<Response, ApiError, AppServices>) => (ctx: { request: Request }) => Promise<Response>
) =>
  new Elysia({ name: "session-api" })
    .post(
      "/api/session",
      publicRoute((request) =>
        Effect.gen(function* () {
          const { username, password } = yield* decodeBody(request, SignIn)
          const session = yield* (yield* Access).signIn(username, password)
          return json({ user: who(session.principal) }, 200, { "set-cookie": sessionCookie(session.token, session.expiresAt) })
        })
      )
    )
    .get("/api/session", route("read", ({ principal }) => Effect.succeed(json({ user: who(principal) }))))
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
