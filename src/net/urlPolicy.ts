/**
 * The outbound URL policy (security rule 12) for MCP servers and, later, web fetch: http(s) only, no
 * credentials in the URL, and — unless an admin allowed private networks — a host that is not local or
 * a metadata name and resolves only to public unicast addresses (ipaddr.js ranges, embedded IPv4 unwrapped).
 */
import { Either } from "effect"
import ipaddr from "ipaddr.js"
import { lookup } from "node:dns/promises"

/** Resolves a host name to every address it has (A and AAAA), as text. */
export type Resolver = (host: string) => Promise<ReadonlyArray<string>>

export const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address)

/** Cloud metadata names (compared without trailing dots); their addresses are refused anyway, the names too. */
const METADATA_HOSTS = new Set([
  "metadata.google.internal",
  "metadata.goog",
  "metadata",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.com",
  "metadata.tencentyun.com",
  "metadata.platformequinix.com"
])
const LOCAL_HOSTS = new Set(["localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"])

const RANGE_WORDS: Readonly<Record<string, string>> = {
  unspecified: "an unspecified",
  broadcast: "a broadcast",
  multicast: "a multicast",
  linkLocal: "a link-local",
  loopback: "a loopback",
  carrierGradeNat: "a carrier-grade NAT",
  private: "a private",
  uniqueLocal: "a unique-local",
  reserved: "a reserved",
  benchmarking: "a benchmarking",
  deprecatedSiteLocal: "a site-local"
}
const describeRange = (range: string): string => `${RANGE_WORDS[range] ?? `a non-public (${range})`} address`

const v4Of = (high: number, low: number): ipaddr.IPv4 => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

/** Every IPv4 address an IPv6 address carries inside it, by the rule of its range (none for native IPv6). */
const embeddedV4 = (a: ipaddr.IPv6): ReadonlyArray<ipaddr.IPv4> | "refuse" => {
  const p = a.parts
  switch (a.range()) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d (SIIT)
      return [v4Of(p[6]!, p[7]!)]
    case "rfc6052":
      // 64:ff9b::/96 carries the IPv4 in its last 32 bits; the local-use 64:ff9b:1::/48 can hide it anywhere.
      return p[2] === 0 ? [v4Of(p[6]!, p[7]!)] : "refuse"
    case "6to4": // 2002:AABB:CCDD::/48
      return [v4Of(p[1]!, p[2]!)]
    case "teredo": // 2001:0:<server v4>:<flags>:<port ^ ffff>:<client v4 ^ ffff ffff>
      return [v4Of(p[2]!, p[3]!), v4Of(p[6]! ^ 0xffff, p[7]! ^ 0xffff)]
    case "unicast":
      // IPv4-compatible ::a.b.c.d (deprecated, yet a stack may still route it to the IPv4 address).
      if (p.slice(0, 6).every((x) => x === 0)) return [v4Of(p[6]!, p[7]!)]
      // ISATAP interface identifiers (::0:5efe:a.b.c.d, ::200:5efe:a.b.c.d) under any prefix.
      if ((p[4]! & 0xfcff) === 0 && p[5] === 0x5efe) return [v4Of(p[6]!, p[7]!)]
      return []
    default:
      return "refuse"
  }
}

/**
 * Why `ip` is not a public unicast address (loopback, private, link-local, …, or an IPv6 form that
 * embeds such an IPv4 address), or undefined when it is public. Text that is not an address is refused.
 */
const addressProblem = (ip: string): string | undefined => {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(ip)
  } catch {
    return `${ip} is not an IP address`
  }
  if (parsed.kind() === "ipv4") {
    const range = parsed.range()
    return range === "unicast" ? undefined : `${parsed.toString()} is ${describeRange(range)}`
  }
  const v6 = parsed as ipaddr.IPv6
  const shown = v6.toRFC5952String()
  const range = v6.range()
  const inner = embeddedV4(v6)
  if (inner === "refuse") return `${shown} is ${describeRange(range)}`
  for (const v4 of inner) {
    const innerRange = v4.range()
    if (innerRange !== "unicast") return `${shown} embeds ${v4.toString()}, ${describeRange(innerRange)}`
  }
  return undefined
}

/** True when `ip` is not a public unicast address (see `addressProblem`). */
export const isPrivateAddress = (ip: string): boolean => addressProblem(ip) !== undefined

/** A URL that passed the policy: its host name (brackets and trailing dots removed) and the addresses it was checked at. */
export interface CheckedTarget {
  readonly url: URL
  readonly host: string
  /** True when the URL names an address, not a name (nothing was resolved). */
  readonly literal: boolean
  /** Every address the host resolved to, each checked; connect only to these. */
  readonly addresses: ReadonlyArray<string>
}

const hostOf = (url: URL): string =>
  url.hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.+$/, "")
    .toLowerCase()

/**
 * Who may be reached besides public unicast addresses: `false` nobody, `true` private networks (an
 * admin's per-server choice), `"loopback"` loopback addresses only — the web-fetch tests' scripted pages
 * on 127.0.0.1, never a production setting (src/web/webFetchPolicy.ts refuses it outside tests).
 */
export type NetworkAllowance = boolean | "loopback"

/** The rule of the URL policy a URL broke (web fetch names it in its refusal). */
export type UrlRule = "not-a-url" | "scheme" | "credentials" | "no-host" | "local-host" | "dns" | "non-public-address"

export interface UrlRefusal {
  readonly rule: UrlRule
  readonly problem: string
}

const isLoopback = (ip: string): boolean => {
  try {
    const a = ipaddr.process(ip)
    return a.range() === "loopback"
  } catch {
    return false
  }
}

/**
 * Checks `raw` and resolves its host once: the rule broken and the problem (left), or the addresses it
 * may be reached at (right). With `allow === true` only the scheme and credential rules apply, but the
 * host is still resolved once so a caller can pin its connection.
 */
export const checkTargetRule = async (
  raw: string,
  allow: NetworkAllowance,
  resolve: Resolver = systemResolver
): Promise<Either.Either<CheckedTarget, UrlRefusal>> => {
  const refuse = (rule: UrlRule, problem: string) => Either.left({ rule, problem })
  if (!URL.canParse(raw)) return refuse("not-a-url", "is not a URL")
  const url = new URL(raw)
  if (url.protocol !== "https:" && url.protocol !== "http:") return refuse("scheme", "must be an http or https URL")
  if (url.username !== "" || url.password !== "") return refuse("credentials", "must not carry credentials (use headers)")
  const host = hostOf(url)
  if (host === "") return refuse("no-host", "has no host")
  if (allow !== true && (LOCAL_HOSTS.has(host) || host.endsWith(".localhost") || METADATA_HOSTS.has(host))) {
    return refuse("local-host", "points at a local or metadata host")
  }
  // WHATWG URL has already turned decimal, hex, octal and short IPv4 forms into dotted quads.
  const literal = ipaddr.isValid(host)
  let addresses: ReadonlyArray<string>
  try {
    addresses = literal ? [ipaddr.parse(host).toString()] : await resolve(host)
  } catch {
    return refuse("dns", "its host does not resolve")
  }
  if (addresses.length === 0) return refuse("dns", "its host does not resolve")
  if (allow !== true) {
    // Every answer is checked: a rebinding DNS server may hand any one of them to a later lookup.
    const problems = addresses.flatMap((a) => (allow === "loopback" && isLoopback(a) ? [] : (addressProblem(a) ?? [])))
    if (problems.length > 0) return refuse("non-public-address", `resolves to a non-public address (${problems.join("; ")})`)
  }
  return Either.right({ url, host, literal, addresses })
}

/**
 * `checkTargetRule` for a registered server: the problem as one sentence (a non-public address adds
 * that an admin must allow private networks for the server).
 */
export const checkTarget = async (
  raw: string,
  allow: NetworkAllowance,
  resolve: Resolver = systemResolver
): Promise<Either.Either<CheckedTarget, string>> =>
  Either.mapLeft(await checkTargetRule(raw, allow, resolve), (r) =>
    r.rule === "non-public-address" ? `${r.problem}; an admin must allow private networks for this server` : r.problem
  )

/** The problem with `url` for a server, or undefined when it may be reached. Resolves DNS. */
export const checkOutboundUrl = async (
  url: string,
  allowPrivateNetwork: boolean,
  resolve: Resolver = systemResolver
): Promise<string | undefined> =>
  Either.match(await checkTarget(url, allowPrivateNetwork, resolve), { onLeft: (problem) => problem, onRight: () => undefined })
