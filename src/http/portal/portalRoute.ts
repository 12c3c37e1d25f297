/**
 * How a portal route runs: the API's request runner (route.ts — authenticate before any body, the form
 * capped and strict, CSRF token from header or `_csrf` field, same-origin check, deny by default, one
 * error mapping), with every error rendered as HTML: a fragment for htmx, a page otherwise.
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../access/Access.ts"
import { DbWrites } from "../../db/DbWrites.ts"
import { errorFragment, errorPage, type ErrorProps } from "../../../views/pages/errorPage.ts"
import type { Assets, PageContext } from "../../../views/layout.ts"
import { cookieValue, type Guard, SESSION_COOKIE } from "../auth.ts"
import { formBody, MAX_BODY_BYTES, type PostedForm } from "../body.ts"
import { sandboxConfig } from "../../tools/Sandbox.ts"
import { statusOf, type ApiError } from "../respond.ts"
import { noteUser } from "../observe.ts"
import { requestRunner, type AppRuntime, type AppServices } from "../route.ts"
import { makePageCache, pageKey } from "./pageCache.ts"
import { htmlBlobResponse, htmlResponse, isHtmx, redirect } from "./pageResponse.ts"

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
export type ElysiaHandler = (ctx: {
  readonly request: Request
  readonly params: Readonly<Record<string, string | undefined>>
}) => Promise<Response>

const TITLES: Readonly<Record<number, string>> = {
  400: "The request has problems",
  401: "Please sign in",
  403: "Not allowed",
  404: "Not found",
  409: "Not possible right now",
  422: "Cannot run",
  500: "Something went wrong",
  503: "Try again shortly"
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
  // Read once: the installation's sandbox setting does not change while it serves.
  const processToolsUnconfined = rt.runSync(sandboxConfig).mode === "off"
  const anonymous = (path: string): PageContext => ({ viewer: null, assets, path, processToolsUnconfined })
  const pageOf = (principal: Principal, path: string): PageContext => ({
    viewer: {
      username: principal.username,
      permissions: [...principal.permissions].sort(),
      canManage: principal.permissions.has("agents.manage"),
      csrfToken: principal.csrfToken ?? null
    },
    assets,
    path,
    processToolsUnconfined
  })
  const pageFor = (request: Request, principal: Principal | undefined): PageContext => {
    const path = new URL(request.url).pathname
    return principal === undefined ? anonymous(path) : pageOf(principal, path)
  }

  /** Unauthenticated: a GET page sends the browser to sign in and back; anything else gets a 401. */
  const unauthenticated = (request: Request): Response => {
    const url = new URL(request.url)
    const from = isHtmx(request) ? new URL(request.headers.get("hx-current-url") ?? url.href, url) : url
    const back = from.origin === url.origin ? `${from.pathname}${from.search}` : "/home"
    return redirect(request, `/sign-in?next=${encodeURIComponent(back)}`)
  }

  // The API's runner and error mapping (route.ts, respond.ts), rendered as HTML.
  const runner = requestRunner(rt, log, {
    failure: (request, e, principal) =>
      e._tag === "Unauthenticated" && request.method === "GET"
        ? unauthenticated(request)
        : errorHtml(request, pageFor(request, principal), errorProps(e)),
    defect: (request, principal) =>
      errorHtml(request, pageFor(request, principal), {
        status: 500,
        title: TITLES[500] ?? "Error",
        message: "internal server error",
        problems: [],
        agents: [],
        signIn: false
      })
  })

  // Pages answered from memory (pageCache.ts), by the runtime's write counter and clock; none without a counter.
  const writes = rt.runSync(Effect.serviceOption(DbWrites))
  const clock = rt.runSync(Effect.clock)
  const pages = Option.match(writes, {
    onNone: () => undefined,
    onSome: (w) => makePageCache({ epoch: () => w.epoch(), now: () => clock.unsafeCurrentTimeMillis() })
  })

  const run =
    (guard: Guard, handler: PortalHandler, withForm: boolean): ElysiaHandler =>
    (ctx) => {
      const url = new URL(ctx.request.url)
      return runner.guarded(ctx.request, { guard, form: withForm }, ({ principal, form }) =>
        handler({ request: ctx.request, url, params: ctx.params, principal, page: pageOf(principal, url.pathname), form })
      )
    }

  return {
    /** A GET page or fragment; reading needs a signed-in principal at least. */
    page: (guard: Guard, handler: PortalHandler) => run(guard, handler, false),
    /**
     * A GET page that is a function of the viewer, the URL, the htmx header and what DbWrites counts
     * (users, sessions, tokens, agents, bindings, skills, MCP servers): a session asking again before
     * anything was written gets the same bytes from memory (pageCache.ts), without running `handler`.
     */
    cachedPage:
      (guard: Guard, handler: (input: PortalInput) => Effect.Effect<Blob, ApiError, AppServices>): ElysiaHandler =>
      (ctx) => {
        const { request } = ctx
        const url = new URL(request.url)
        // A request with an Authorization header is authenticated by it (auth.ts), never by its cookie.
        const session = request.headers.has("authorization") ? undefined : cookieValue(request, SESSION_COOKIE)
        const key = pages === undefined || session === undefined ? undefined : pageKey(session, request, url, isHtmx(request))
        const hit = key === undefined ? undefined : pages?.get(key)
        if (hit !== undefined) {
          noteUser(request, hit.username)
          return Promise.resolve(htmlBlobResponse(hit.body))
        }
        const epoch = Option.isSome(writes) ? writes.value.epoch() : undefined
        return runner.guarded(request, { guard, form: false }, ({ principal, form }) =>
          Effect.map(handler({ request, url, params: ctx.params, principal, page: pageOf(principal, url.pathname), form }), (body) => {
            if (key !== undefined) pages?.keep(key, epoch, principal, body)
            return htmlBlobResponse(body)
          })
        )
      },
    /** A change: form body, CSRF token and same-origin check, then the guard's permission. */
    action: (guard: Guard, handler: PortalHandler) => run(guard, handler, true),
    /** No principal (sign-in); `page` renders errors for an anonymous visitor. */
    open:
      (handler: (request: Request, page: PageContext) => Effect.Effect<Response, ApiError, AppServices>): ElysiaHandler =>
      (ctx) =>
        runner.open(ctx.request, handler(ctx.request, anonymous(new URL(ctx.request.url).pathname))),
    anonymous
  }
}

export type PortalRunner = ReturnType<typeof portalRunner>
