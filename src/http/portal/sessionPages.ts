/** Sign-in and sign-out pages, and `/`: the home page (first-run checklist) for a signed-in visitor, the sign-in page otherwise. */
import { Effect, Option } from "effect"
import { Elysia } from "elysia"
import { Access } from "../../access/Access.ts"
import { SignInThrottle } from "../../access/SignInThrottle.ts"
import { signInPage } from "../../../views/pages/signIn.ts"
import { authorize, clearedSessionCookie, cookieValue, crossSiteProblem, SESSION_COOKIE, sessionCookie } from "../auth.ts"
import { throttledSignIn } from "../api/session.ts"
import { SIGN_IN_BODY_BYTES } from "../body.ts"
import { errorHtml, errorProps, readForm, type PortalRunner, type PostedForm } from "./portalRoute.ts"
import { htmlResponse, localPath, PAGE_HEADERS, redirect } from "./pageResponse.ts"

const field = (form: PostedForm, name: string): string => {
  const v = form.get(name)
  return typeof v === "string" ? v : ""
}

/** The principal of the request's session, if any (never fails). */
const signedIn = (request: Request) => Effect.option(authorize(request, "read"))

export const sessionPages = (portal: PortalRunner, throttle: SignInThrottle["Type"]) =>
  new Elysia()
    .get(
      "/",
      portal.open((request) => Effect.map(signedIn(request), (p) => redirect(request, Option.isSome(p) ? "/home" : "/sign-in")))
    )
    .get(
      "/sign-in",
      portal.open((request, page) =>
        Effect.gen(function* () {
          const url = new URL(request.url)
          const next = localPath(url.searchParams.get("next"))
          if (Option.isSome(yield* signedIn(request))) return redirect(request, next)
          const notice = url.searchParams.has("signed-out") ? "You are signed out." : null
          return htmlResponse(signInPage(page, { username: "", next, error: null, notice }))
        })
      )
    )
    .post(
      "/sign-in",
      portal.open((request, page) =>
        Effect.gen(function* () {
          // No session yet, so no CSRF token: the same-origin check keeps other sites from signing a browser in.
          const crossSite = crossSiteProblem(request)
          if (crossSite !== undefined) return errorHtml(request, page, errorProps(crossSite))
          const form = yield* readForm(request, SIGN_IN_BODY_BYTES)
          const username = field(form, "username").trim()
          const next = localPath(field(form, "next"))
          return yield* throttledSignIn(request, username, field(form, "password")).pipe(
            Effect.map(
              (s) =>
                new Response(null, {
                  status: 303,
                  headers: { ...PAGE_HEADERS, location: next, "set-cookie": sessionCookie(s.token, s.expiresAt) }
                })
            ),
            Effect.catchTags({
              InvalidCredentials: (e) =>
                Effect.succeed(htmlResponse(signInPage(page, { username, next, error: e.message, notice: null }), 401)),
              SignInThrottled: (e) =>
                Effect.succeed(
                  htmlResponse(signInPage(page, { username, next, error: e.message, notice: null }), 429, {
                    "retry-after": String(e.retryAfterSeconds)
                  })
                )
            })
          )
        }).pipe(Effect.provideService(SignInThrottle, throttle))
      )
    )
    .post(
      "/sign-out",
      portal.action("read", ({ request }) =>
        Effect.gen(function* () {
          const token = cookieValue(request, SESSION_COOKIE)
          if (token !== undefined) yield* (yield* Access).signOut(token)
          return new Response(null, {
            status: 303,
            headers: { ...PAGE_HEADERS, location: "/sign-in?signed-out=1", "set-cookie": clearedSessionCookie }
          })
        })
      )
    )
