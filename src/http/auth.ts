/**
 * Who is asking, and may they: a portal session (cookie, plus a CSRF token and a same-origin check on
 * every change) or an API token (Bearer). Deny by default: a route names the permission it needs, and
 * reading needs at least a signed-in principal.
 */
import { Effect, Option } from "effect"
import { timingSafeEqual } from "node:crypto"
import { Access, ADMIN_PERMISSIONS, isAdmin, type Permission, type Principal } from "../access/Access.ts"
import { forbidden, Unauthenticated, type ApiError } from "./respond.ts"

/** `__Host-`: Secure, no Domain, Path=/ — browsers treat http://localhost as secure, so it works there too. */
export const SESSION_COOKIE = "__Host-kintsugi-session"
export const CSRF_HEADER = "x-csrf-token"

/** `admin`: every admin permission at once (user administration, everyone's tokens). */
export type Guard = "read" | "admin" | Permission

export const cookieValue = (request: Request, name: string): string | undefined => {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=")
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      // A value that is not valid percent-encoding proves nothing: the request is anonymous.
      try {
        return decodeURIComponent(part.slice(eq + 1).trim())
      } catch {
        return undefined
      }
    }
  }
  return undefined
}

export const sessionCookie = (token: string, expiresAt: Date): string =>
  `${SESSION_COOKIE}=${token}; Path=/; Secure; HttpOnly; SameSite=Lax; Expires=${expiresAt.toUTCString()}`
export const clearedSessionCookie = `${SESSION_COOKIE}=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0`

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** A change must come from our own pages: no cross-site fetch metadata and an Origin (when sent) equal to ours. */
export const crossSiteProblem = (request: Request): ApiError | undefined => {
  const site = request.headers.get("sec-fetch-site")
  if (site !== null && site !== "same-origin" && site !== "none") return forbidden("cross-site requests are refused")
  const origin = request.headers.get("origin")
  const host = request.headers.get("host")
  if (origin !== null && (host === null || origin.replace(/^https?:\/\//, "") !== host)) {
    return forbidden("the request's Origin is not this site")
  }
  return undefined
}

/**
 * A change made with a session must come from our own pages (`crossSiteProblem`) and carry the
 * session's CSRF token in the header or the form field `_csrf`.
 */
const checkSameOrigin = (request: Request, principal: Principal, formToken: string | undefined): ApiError | undefined => {
  const crossSite = crossSiteProblem(request)
  if (crossSite !== undefined) return crossSite
  const token = request.headers.get(CSRF_HEADER) ?? formToken
  if (principal.csrfToken === undefined || token === undefined || !sameText(token, principal.csrfToken)) {
    return forbidden("missing or wrong CSRF token")
  }
  return undefined
}

/** The principal of the request's API token or session cookie, or 401. Reads no body. */
export const authenticate = (request: Request): Effect.Effect<Principal, ApiError, Access> =>
  Effect.gen(function* () {
    const access = yield* Access
    const auth = request.headers.get("authorization")
    const bearer = auth?.startsWith("Bearer ") === true ? auth.slice(7).trim() : undefined
    const cookie = cookieValue(request, SESSION_COOKIE)
    const principal =
      bearer !== undefined ? yield* access.bearer(bearer) : cookie !== undefined ? yield* access.session(cookie) : Option.none()
    if (Option.isNone(principal)) return yield* Effect.fail<ApiError>(new Unauthenticated({ message: "sign in or send an API token" }))
    return principal.value
  })

/** May `who` do this: a change made with a session passes the same-origin and CSRF checks (403), then the guard (403). */
export const permit = (request: Request, who: Principal, guard: Guard, formToken?: string): Effect.Effect<Principal, ApiError> => {
  if (who.via === "session" && !SAFE_METHODS.has(request.method)) {
    const refused = checkSameOrigin(request, who, formToken)
    if (refused !== undefined) return Effect.fail(refused)
  }
  // An admin passes every guard (a permission added later, like metrics.read, included).
  if (guard === "admin" ? !isAdmin(who) : guard !== "read" && !who.permissions.has(guard) && !isAdmin(who)) {
    const needs = guard === "admin" ? `every admin permission (${ADMIN_PERMISSIONS.join(", ")})` : `the ${guard} permission`
    return Effect.fail<ApiError>(forbidden(`this needs ${needs}`))
  }
  return Effect.succeed(who)
}

/** The principal of the request, or 401; then the guard's permission, or 403. */
export const authorize = (request: Request, guard: Guard, formToken?: string): Effect.Effect<Principal, ApiError, Access> =>
  Effect.flatMap(authenticate(request), (who) => permit(request, who, guard, formToken))
