/**
 * The HTTP edge around the app, before any routing: exactly one `Host`, the `Host` allowlist (DNS rebinding), URL paths and
 * query strings that are strict UTF-8 without control characters, the client's socket address for the
 * handlers, and `x-content-type-options: nosniff` on every response whatever produced it.
 */
import { Config, Effect, Option } from "effect"
import type { Problem } from "../contract/Problem.ts"
import { characterProblem, percentDecoded, urlEncodedPairs } from "./textBounds.ts"

/** Always answered for any Host: health checks (Kubernetes probes send the pod's IP) carry no data. */
const HEALTH_PATHS = new Set(["/healthz", "/readyz"])

interface HostRule {
  readonly host: string
  /** Undefined: every port. */
  readonly port: string | undefined
}

/** `name`, `name:port`, `1.2.3.4`, `[::1]:7777` (a bare IPv6 address is bracketed); lowercased, no trailing dot. */
export const parseHostRule = (value: string): HostRule | undefined => {
  let v = value.trim().toLowerCase()
  if (v === "") return undefined
  if (!v.startsWith("[") && (v.match(/:/g) ?? []).length > 1) v = `[${v}]`
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]/\s@]+)(?::(\d{1,5}))?$/.exec(v)
  if (m === null) return undefined
  return { host: m[1]!.replace(/\.$/, ""), port: m[2] }
}

/**
 * The Host values the server answers: `KINTSUGI_ALLOWED_HOSTS` (comma-separated) when set, else
 * localhost, 127.0.0.1, [::1] and the bind address `HOST`. An entry without a port allows any port.
 */
export const allowedHostsFromEnv = (env: Readonly<Record<string, string | undefined>>): ReadonlyArray<string> => {
  const configured = env["KINTSUGI_ALLOWED_HOSTS"]
  if (configured !== undefined && configured.trim() !== "")
    return configured
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "")
  return ["localhost", "127.0.0.1", "[::1]", ...(env["HOST"] === undefined || env["HOST"] === "" ? [] : [env["HOST"]])]
}

/** `allowedHostsFromEnv` over the configuration (KINTSUGI_ALLOWED_HOSTS, HOST); never fails. */
export const allowedHostsConfig: Effect.Effect<ReadonlyArray<string>> = Config.all({
  allowed: Config.option(Config.string("KINTSUGI_ALLOWED_HOSTS")),
  host: Config.option(Config.string("HOST"))
}).pipe(
  Effect.map(({ allowed, host }) =>
    allowedHostsFromEnv({ KINTSUGI_ALLOWED_HOSTS: Option.getOrUndefined(allowed), HOST: Option.getOrUndefined(host) })
  ),
  Effect.orElseSucceed(() => allowedHostsFromEnv({}))
)

export const hostAllowed = (rules: ReadonlyArray<HostRule>, hostHeader: string): boolean => {
  const asked = parseHostRule(hostHeader)
  return asked !== undefined && rules.some((r) => r.host === asked.host && (r.port === undefined || r.port === asked.port))
}

const addresses = new WeakMap<Request, string>()

/** The socket address of the client that sent `request` (never a forwarded header), or "unknown" in-process. */
export const clientAddress = (request: Request): string => addresses.get(request) ?? "unknown"

/** Problems of the URL's path segments and query parameters: not UTF-8, or a character that cannot be stored. */
const urlProblems = (url: URL): Array<Problem> => {
  const problems: Array<Problem> = []
  for (const segment of url.pathname.split("/")) {
    const decoded = percentDecoded(segment, false)
    const p = decoded === undefined ? "is not valid UTF-8 percent-encoding" : characterProblem(decoded)
    if (p !== undefined) {
      problems.push({ path: "(path)", message: p })
      break
    }
  }
  if (url.search.length > 1) problems.push(...urlEncodedPairs(url.search.slice(1), (name) => `query.${name}`).problems)
  return problems
}

const refusal = (pathname: string, status: number, code: string, message: string, problems: ReadonlyArray<Problem> = []): Response =>
  pathname.startsWith("/api/")
    ? new Response(JSON.stringify({ error: { code, message, ...(problems.length > 0 ? { problems } : {}) } }), {
        status,
        headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" }
      })
    : new Response(`${message}\n${problems.map((p) => `${p.path}: ${p.message}\n`).join("")}`, {
        status,
        headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }
      })

/** Sets nosniff, copying the response first when its headers are immutable (a fetched one). */
const nosniff = (response: Response): Response => {
  try {
    response.headers.set("x-content-type-options", "nosniff")
    return response
  } catch {
    const copy = new Response(response.body, response)
    copy.headers.set("x-content-type-options", "nosniff")
    return copy
  }
}

export interface EdgeOptions {
  /** Host header values answered (see `allowedHostsFromEnv`). */
  readonly allowedHosts: ReadonlyArray<string>
}

export interface Handles {
  readonly handle: (request: Request) => Promise<Response>
}

/**
 * The app behind the edge checks: `handle(request, address)` where `address` is the client's socket
 * address (`server.requestIP(request)`); more than one Host is 400, a wrong Host 421, a bad URL 400, all
 * before routing.
 */
export const withEdge = (app: Handles, options: EdgeOptions) => {
  const rules = options.allowedHosts.flatMap((h) => {
    const rule = parseHostRule(h)
    return rule === undefined ? [] : [rule]
  })
  return async (request: Request, address?: string): Promise<Response> => {
    const url = new URL(request.url)
    const host = request.headers.get("host")
    // Bun joins repeated Host headers with ", "; no single Host value has a comma.
    if (host !== null && host.includes(",")) {
      return nosniff(
        refusal(url.pathname, 400, "bad-request", "the request has more than one Host header (RFC 9112 §3.2: send exactly one)")
      )
    }
    const isHealth = HEALTH_PATHS.has(url.pathname) && (request.method === "GET" || request.method === "HEAD")
    if (!isHealth && !hostAllowed(rules, host ?? url.host)) {
      return nosniff(
        refusal(url.pathname, 421, "misdirected-request", "this server does not answer for that Host (see KINTSUGI_ALLOWED_HOSTS)")
      )
    }
    const problems = urlProblems(url)
    if (problems.length > 0) return nosniff(refusal(url.pathname, 400, "bad-request", "the request has problems", problems))
    if (address !== undefined) addresses.set(request, address)
    return nosniff(await app.handle(request))
  }
}
