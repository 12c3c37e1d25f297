/**
 * How a portal route runs: authenticate (no body is read for an anonymous request), read the form
 * (capped, strict), then the same checks as the API (CSRF token from header or `_csrf` field +
 * same-origin check; deny by default), run the handler on the app runtime, and render every error as
 * HTML: a fragment for htmx, a page otherwise.
 */
import { Cause, Effect, Exit, Option } from "effect"
import type { Principal } from "../../access/Access.ts"
import { errorFragment, errorPage, type ErrorProps } from "../../../views/pages/errorPage.ts"
import type { Assets, PageContext } from "../../../views/layout.ts"
import { authenticate, crossSiteProblem, permit, type Guard } from "../auth.ts"
import { emptyForm, formBody, MAX_BODY_BYTES, type PostedForm } from "../body.ts"
import { statusOf, type ApiError } from "../respond.ts"
import type { AppRuntime, AppServices } from "../route.ts"
import { htmlResponse, isHtmx, redirect } from "./pageResponse.ts"
import { noteUser, underRequest } from "../observe.ts"

export interface PortalInput {
  readonly request: Request
  readonly url: URL
  readonly params: Readonly<Record<string, string | undefined>>
  readonly principal: Principal
  readonly page: PageContext
  /** The posted form (empty for GET). */
  readonly form: PostedForm
}

export type { PostedForm } from "../body.ts"

export type PortalHandler = (input: PortalInput) => Effect.Effect<Response, ApiError, AppServices>
export type ElysiaHandler = (ctx: { readonly request: Request; readonly params: Readonly<Record<string, string | undefined>> }) => Promise<Response>

const TITLES: Readonly<Record<number, string>> = {
  400: "The request has problems",
  401: "Please sign in",
  403: "Not allowed",
  404: "Not found",
  409: "Not possible right now",
  422: "Cannot run",
  500: "Something went wrong"
}

export const errorProps = (e: ApiError): ErrorProps => {
  const status = statusOf(e)
  return {
    status,
    title: TITLES[status] ?? "Error",
    message: e.message,
    problems: "problems" in e ? e.problems : [],
    agents: "agents" in e ? e.agents : [],
    signIn: e._tag === "Unauthenticated"
  }
}

/** An error as HTML; htmx fragments go to the toast region (HX-Retarget), whatever the element targeted. */
export const errorHtml = (request: Request, page: PageContext, props: ErrorProps): Response =>
  isHtmx(request)
    ? htmlResponse(errorFragment(props), props.status, { "hx-retarget": "#flash", "hx-reswap": "innerHTML" })
    : htmlResponse(errorPage(page, props), props.status)

/** The posted form (urlencoded or multipart), read by body.ts: capped at `max`, strictly decoded. */
export const readForm = (request: Request, max = MAX_BODY_BYTES): Effect.Effect<PostedForm, ApiError> => formBody(request, max)

export const portalRunner = (rt: AppRuntime, log: (line: string) => void, assets: Assets) => {
  const anonymous = (path: string): PageContext => ({ viewer: null, assets, path })
  const pageOf = (principal: Principal, path: string): PageContext => ({
    viewer: {
      username: principal.username,
      permissions: [...principal.permissions].sort(),
      canManage: principal.permissions.has("agents.manage"),
      csrfToken: principal.csrfToken ?? null
    },
    assets,
    path
  })

  const finish = async (request: Request, page: () => PageContext, program: Effect.Effect<Response, ApiError, AppServices>): Promise<Response> => {
    const exit = await rt.runPromiseExit(underRequest(request)(program))
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure)) return errorHtml(request, page(), errorProps(failure.value))
    log(`portal request failed: ${Cause.pretty(exit.cause)}`)
    return errorHtml(request, page(), { status: 500, title: TITLES[500] ?? "Error", message: "internal server error", problems: [], agents: [], signIn: false })
  }

  /** Unauthenticated: a GET page sends the browser to sign in and back; anything else gets a 401. */
  const unauthenticated = (request: Request, url: URL, e: ApiError): Response | undefined => {
    if (e._tag !== "Unauthenticated") return undefined
    if (request.method !== "GET") return errorHtml(request, anonymous(url.pathname), errorProps(e))
    const from = isHtmx(request) ? new URL(request.headers.get("hx-current-url") ?? url.href, url) : url
    const back = from.origin === url.origin ? `${from.pathname}${from.search}` : "/agents"
    return redirect(request, `/sign-in?next=${encodeURIComponent(back)}`)
  }

  const run = (guard: Guard, handler: PortalHandler, withForm: boolean): ElysiaHandler => async (ctx) => {
    const request = ctx.request
    const url = new URL(request.url)
    let principal: Principal | undefined
    const program = Effect.gen(function* () {
      if (withForm) {
        // Refused before anything else: a change from another site is 403 whether or not its cookie came along.
        const crossSite = crossSiteProblem(request)
        if (crossSite !== undefined) return yield* Effect.fail(crossSite)
      }
      // Who is asking, before any body is read: an anonymous request never makes the server buffer one.
      const who = yield* authenticate(request)
      noteUser(request, who.username)
      const form = withForm ? yield* readForm(request) : yield* emptyForm()
      const token = form.get("_csrf")
      principal = yield* permit(request, who, guard, typeof token === "string" ? token : undefined)
      return yield* handler({ request, url, params: ctx.params, principal, page: pageOf(principal, url.pathname), form })
    }).pipe(Effect.catchAll((e) => Option.match(Option.fromNullable(unauthenticated(request, url, e)), { onNone: () => Effect.fail(e), onSome: Effect.succeed })))
    return finish(request, () => (principal === undefined ? anonymous(url.pathname) : pageOf(principal, url.pathname)), program)
  }

  return {
    /** A GET page or fragment; reading needs a signed-in principal at least. */
    page: (guard: Guard, handler: PortalHandler) => run(guard, handler, false),
    /** A change: form body, CSRF token and same-origin check, then the guard's permission. */
    action: (guard: Guard, handler: PortalHandler) => run(guard, handler, true),
    /** No principal (sign-in); `page` renders errors for an anonymous visitor. */
    open: (handler: (request: Request, page: PageContext) => Effect.Effect<Response, ApiError, AppServices>): ElysiaHandler => async (ctx) => {
      const page = anonymous(new URL(ctx.request.url).pathname)
      return finish(ctx.request, () => page, handler(ctx.request, page))
    },
    anonymous
  }
}

export type PortalRunner = ReturnType<typeof portalRunner>
