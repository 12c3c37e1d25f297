/**
 * Every request observed: an HTTP server span (continuing a valid incoming `traceparent`) that the
 * handlers' Effects run under, one access log line (method, path without its query, route, status,
 * duration, user — never headers, cookies or tokens) and the request counters of /metrics.
 */
import { Effect, type ManagedRuntime, type Tracer } from "effect"
import { Metrics } from "../telemetry/Metrics.ts"
import { parseTraceParent } from "../telemetry/traceParent.ts"

const spans = new WeakMap<Request, Tracer.Span>()
const users = new WeakMap<Request, string>()

/** Records who the request turned out to be (for the access log line); called once authenticated. */
export const noteUser = (request: Request, username: string): void => void users.set(request, username)

/** `effect` under the request's server span, when the request is being observed. */
export const underRequest = (request: Request) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const span = spans.get(request)
  return span === undefined ? effect : Effect.withParentSpan(effect, span)
}

export interface RouteRef {
  readonly method: string
  readonly path: string
}

/**
 * The route pattern a path falls under (`/api/jobs/:id`), for span names and metric labels; the most
 * specific pattern wins (static segments before parameters before `*`); "(unmatched)" otherwise.
 */
export const routeMatcher = (routes: () => ReadonlyArray<RouteRef>) => {
  let table: Array<{ method: string; path: string; segments: Array<string> }> | undefined
  return (method: string, pathname: string): string => {
    table ??= routes().map((r) => ({ method: r.method.toUpperCase(), path: r.path, segments: r.path.split("/").slice(1) }))
    const asked = pathname.split("/").slice(1)
    const m = method === "HEAD" ? "GET" : method
    let best: { path: string; score: number } | undefined
    for (const r of table) {
      if (r.method !== m && r.method !== "ALL") continue
      let score = 0
      let ok = true
      for (let i = 0; i < r.segments.length && ok; i++) {
        const s = r.segments[i]!
        if (s === "*") {
          score -= 1000
          break
        }
        if (i >= asked.length) ok = false
        else if (s.startsWith(":")) ok = asked[i] !== ""
        else if (s === asked[i]) score += 1
        else ok = false
        if (ok && i === r.segments.length - 1 && asked.length !== r.segments.length) ok = false
      }
      if (ok && (best === undefined || score > best.score)) best = { path: r.path, score }
    }
    return best?.path ?? "(unmatched)"
  }
}

/** A 5xx answer: the server span ends in error (a fixed message, no stack). */
class ServerErrorStatus extends Error {
  constructor(readonly response: Response) {
    super(`answered ${response.status}`)
    this.name = "ServerErrorStatus"
    this.stack = `${this.name}: ${this.message}`
  }
}

const PROBES = new Set(["/healthz", "/readyz"])

/** `handle` observed: its span, access log line and counters are made in `rt` (whose tracer and logger apply). */
export const withObservation = (
  handle: (request: Request, address?: string) => Promise<Response>,
  rt: ManagedRuntime.ManagedRuntime<Metrics, never>,
  routeOf: (method: string, pathname: string) => string
) =>
  async (request: Request, address?: string): Promise<Response> => {
    const started = performance.now()
    const url = new URL(request.url)
    const route = routeOf(request.method, url.pathname)
    const parent = parseTraceParent(request.headers.get("traceparent"))
    let handled = false
    const program = Effect.useSpan(
      route === "(unmatched)" ? request.method : `${request.method} ${route}`,
      {
        kind: "server",
        captureStackTrace: false,
        ...(parent === undefined ? {} : { parent }),
        attributes: { "http.request.method": request.method, "url.path": url.pathname, "url.scheme": url.protocol.replace(":", ""), "http.route": route }
      },
      (span) =>
        Effect.gen(function* () {
          spans.set(request, span)
          handled = true
          const response = yield* Effect.promise(() => handle(request, address))
          span.attribute("http.response.status_code", response.status)
          const seconds = (performance.now() - started) / 1000
          yield* (yield* Metrics).httpRequest({ method: request.method, route, status: response.status, seconds })
          const user = users.get(request)
          const line = Effect.annotateLogs({
            method: request.method,
            path: url.pathname,
            route,
            status: response.status,
            durationMs: Math.round(seconds * 1e4) / 10,
            ...(user === undefined ? {} : { user }),
            ...(address === undefined ? {} : { client: address })
          })
          // Probes come every few seconds: below the default level, so they do not drown the log.
          yield* line(PROBES.has(url.pathname) ? Effect.logDebug("http request") : Effect.logInfo("http request"))
          return response.status >= 500 ? yield* Effect.fail(new ServerErrorStatus(response)) : response
        }).pipe(Effect.withParentSpan(span))
    ).pipe(Effect.catchAll((e) => Effect.succeed(e.response)))
    try {
      return await rt.runPromise(program)
    } catch (e) {
      // The runtime is gone (shutting down): answer unobserved (health probes then say 503).
      if (!handled) return handle(request, address)
      throw e
    }
  }
