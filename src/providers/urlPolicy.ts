/**
 * The outbound URL policy for MCP servers (security rule 12), checked when a server is saved and
 * again before every connection: http(s) only, no credentials in the URL, and — unless an admin
 * allowed private networks for that server — every address the host resolves to must be public
 * (no loopback, private, link-local, carrier-grade NAT, metadata or unspecified ranges).
 */
import { lookup } from "node:dns/promises"
import { isIP } from "node:net"

const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata", "instance-data", "metadata.azure.com"])

const v4 = (ip: string): number => ip.split(".").reduce((n, part) => (n << 8) + Number(part), 0) >>> 0
const inV4 = (ip: string, base: string, bits: number) => bits === 0 || (v4(ip) >>> (32 - bits)) === (v4(base) >>> (32 - bits))
const V4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4]
]

/** True when `ip` is not a public unicast address. */
export const isPrivateAddress = (ip: string): boolean => {
  const family = isIP(ip)
  if (family === 4) return V4_BLOCKED.some(([base, bits]) => inV4(ip, base, bits))
  if (family !== 6) return true
  const lower = ip.toLowerCase()
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)
  if (mapped?.[1] !== undefined) return isPrivateAddress(mapped[1])
  return (
    lower === "::" || lower === "::1" || lower.startsWith("fc") || lower.startsWith("fd") || /^fe[89ab]/.test(lower) ||
    lower.startsWith("ff") || lower.startsWith("64:ff9b:") || lower.startsWith("2001:db8")
  )
}

/** The problem with `url` for a server, or undefined when it may be reached. Resolves DNS. */
export const checkOutboundUrl = async (
  url: string,
  allowPrivateNetwork: boolean,
  resolve: (host: string) => Promise<ReadonlyArray<string>> = async (host) => (await lookup(host, { all: true })).map((a) => a.address)
): Promise<string | undefined> => {
  if (!URL.canParse(url)) return "is not a URL"
  const u = new URL(url)
  if (u.protocol !== "https:" && u.protocol !== "http:") return "must be an http or https URL"
  if (u.username !== "" || u.password !== "") return "must not carry credentials (use headers)"
  if (allowPrivateNetwork) return undefined
  const host = u.hostname.replace(/^\[|\]$/g, "").toLowerCase()
  if (METADATA_HOSTS.has(host) || host === "localhost" || host.endsWith(".localhost")) return "points at a local or metadata host"
  let addresses: ReadonlyArray<string>
  try {
    addresses = isIP(host) !== 0 ? [host] : await resolve(host)
  } catch {
    return "its host does not resolve"
  }
  if (addresses.length === 0) return "its host does not resolve"
  const blocked = addresses.find(isPrivateAddress)
  return blocked === undefined ? undefined : `resolves to a private, loopback, link-local or metadata address (${blocked}); an admin must allow private networks for this server`
}
