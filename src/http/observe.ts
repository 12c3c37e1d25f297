/**
 * Every request observed: an HTTP server span when spans are exported (continuing a valid incoming
 * `traceparent`) that the handlers' Effects run under, one access log line (method, path without its query, route, status,
 * duration, user — never headers, cookies or tokens) and the request counters of /metrics.
 */
import { type Clock, Context, Effect, Exit, type ManagedRuntime, Option, type Tracer } from "effect"
import { LogFields } from "../telemetry/Logging.ts"
import { Metrics } from "../telemetry/Metrics.ts"
import { parseTraceParent } from "../telemetry/traceParent.ts"

const spans = new WeakMap<Request, Tracer.Span>()
const users = new WeakMap<Request, string>()

/** Records who the request turned out to be (for the access log line); called once authenticated. */
export const noteUser = (request: Request, username: string): void => void users.set(request, username)

/** `effect` under the request's server span, when the request is being observed. */
export const underRequest =
  (request: Request) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
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
  // Answers by method and path, so a path asked again is not matched against every route again; cleared
  // when full (paths holding ids are many).
  const known = new Map<string, string>()
  const match = (method: string, pathname: string): string => {
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
  return (method: string, pathname: string): string => {
    const key = `${method} ${pathname}`
    const hit = known.get(key)
    if (hit !== undefined) return hit
    const route = match(method, pathname)
    // Only paths of the app's routes, and not long ones: a client's made-up paths never fill it.
    if (route === "(unmatched)" || key.length > 256) return route
    if (known.size >= 1024) known.clear()
    known.set(key, route)
    return route
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

/** Effect's own tracer (no export configured): its spans are seen by nothing outside the fiber. */
const inProcessTracer = Effect.runSync(Effect.tracer)

/** What observing a request needs from the runtime, taken once: its tracer (undefined: Effect's own), clock and metrics. */
interface Observers {
  readonly tracer: Tracer.Tracer | undefined
  readonly clock: Clock.Clock
  readonly metrics: Metrics["Type"]
}

/**
 * `handle` observed: its span is made by the runtime's tracer, and its access log line and counters
 * are written in `rt` (whose logger applies). The handler runs outside any fiber of this wrapper (one
 * fiber per request, the handler's own): the span is made and ended directly, and the line and the
 * counters are one short fiber once the answer is known.
 */
export const withObservation = (
  handle: (request: Request, address?: string) => Promise<Response>,
  rt: ManagedRuntime.ManagedRuntime<Metrics, never>,
  routeOf: (method: string, pathname: string) => string
) => {
  let observers: Observers | undefined
  const observe = (): Observers | undefined => {
    if (observers !== undefined) return observers
    try {
      const taken = rt.runSync(Effect.all({ tracer: Effect.tracer, clock: Effect.clock, metrics: Metrics }))
      observers = { ...taken, tracer: taken.tracer === inProcessTracer ? undefined : taken.tracer }
      return observers
    } catch {
      // The runtime is not built yet, or already disposed: answer unobserved (health probes then say 503).
      // Once taken, they are kept: `kintsugi serve` stops the server before it disposes the runtime, and a
      // request answered after that has its span but loses its line (a closed runtime's fiber ends at once).
      return undefined
    }
  }
  return async (request: Request, address?: string): Promise<Response> => {
    const o = observe()
    if (o === undefined) return handle(request, address)
    const started = performance.now()
    const url = new URL(request.url)
    const route = routeOf(request.method, url.pathname)
    const parent = parseTraceParent(request.headers.get("traceparent"))
    // No span under Effect's own tracer: nothing would see it, and the handler's Effect would copy its context for it.
    const span = o.tracer?.span(
      route === "(unmatched)" ? request.method : `${request.method} ${route}`,
      parent === undefined ? Option.none() : Option.some(parent),
      Context.empty(),
      [],
      o.clock.unsafeCurrentTimeNanos(),
      "server",
      { captureStackTrace: false }
    )
    if (span !== undefined) {
      span.attribute("http.request.method", request.method)
      span.attribute("url.path", url.pathname)
      span.attribute("url.scheme", url.protocol.replace(":", ""))
      span.attribute("http.route", route)
      spans.set(request, span)
    }
    let response: Response
    try {
      response = await handle(request, address)
    } catch (e) {
      span?.end(o.clock.unsafeCurrentTimeNanos(), Exit.die(e))
      throw e
    }
    const seconds = (performance.now() - started) / 1000
    if (span !== undefined) {
      span.attribute("http.response.status_code", response.status)
      span.end(
        o.clock.unsafeCurrentTimeNanos(),
        response.status >= 500 ? Exit.fail(new ServerErrorStatus(response)) : Exit.succeed(response)
      )
    }
    const user = users.get(request)
    // The span's ids as fields of the line (as the logger writes them for a line under a span), without
    // running the line under the span or annotating the fiber: either would copy and compare fiber state
    // (the runtime's whole context, the annotations map) for one line.
    const fields = new LogFields({
      method: request.method,
      path: url.pathname,
      route,
      status: response.status,
      durationMs: Math.round(seconds * 1e4) / 10,
      ...(user === undefined ? {} : { user }),
      ...(address === undefined ? {} : { client: address }),
      ...(span === undefined || span.traceId === "native" ? {} : { traceId: span.traceId, spanId: span.spanId })
    })
    // Probes come every few seconds: below the default level, so they do not drown the log.
    const log = PROBES.has(url.pathname) ? Effect.logDebug("http request", fields) : Effect.logInfo("http request", fields)
    try {
      rt.runFork(Effect.zipRight(o.metrics.httpRequest({ method: request.method, route, status: response.status, seconds }), log))
    } catch {
      // Whatever the runtime does at its end, the answer still goes out.
    }
    return response
  }
}
