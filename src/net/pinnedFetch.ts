/**
 * `fetch` for URLs an administrator registered (MCP servers, web fetch): the URL policy runs at
 * connect time on one DNS answer, and the connection goes to exactly the address that was checked.
 */
import { Either, Schema } from "effect"
import { checkTarget, systemResolver, type CheckedTarget, type NetworkAllowance, type Resolver } from "./urlPolicy.ts"

export class UrlRefused extends Schema.TaggedError<UrlRefused>()("UrlRefused", { problem: Schema.String }) {
  override get message(): string {
    return `the URL ${this.problem}`
  }
}

export interface PinnedFetchOptions {
  /** The server's admin allowance: private, loopback and link-local addresses may be reached (`"loopback"`: loopback only, tests). */
  readonly allowPrivateNetwork: NetworkAllowance
  /** Resolves the host; the system resolver by default (a seam for tests). */
  readonly resolve?: Resolver
}

/**
 * Resolves the URL's host once, checks every address (`checkTarget`), then connects to the first
 * checked address, never resolving again: a DNS answer that changes between check and connect (DNS
 * rebinding) cannot redirect the request. The request keeps the URL's `Host` header and, for https, its
 * TLS server name (SNI and the certificate check use the host name, not the address).
 *
 * Always `redirect: "manual"` (a redirect is the caller's to check again) and never a pooled
 * connection (one verified for another host name at the same address must not be reused).
 * Rejects with `UrlRefused` when the policy refuses the URL; network failures reject as `fetch` does.
 */
export const pinnedFetch = async (input: string | URL, init: BunFetchRequestInit, options: PinnedFetchOptions): Promise<Response> => {
  const checked = await checkTarget(String(input), options.allowPrivateNetwork, options.resolve ?? systemResolver)
  if (Either.isLeft(checked)) throw new UrlRefused({ problem: checked.left })
  return fetchPinned(checked.right, init)
}

/**
 * The connection half of `pinnedFetch`, for a caller that ran the policy itself (web fetch names the
 * rule a URL broke): connects to the first checked address only, keeping Host and the TLS server name.
 */
export const fetchPinned = (checked: CheckedTarget, init: BunFetchRequestInit): Promise<Response> => {
  const { url, host, literal, addresses } = checked
  const address = addresses[0]!
  const target = new URL(url)
  target.hostname = address.includes(":") ? `[${address}]` : address
  const headers = new Headers(init.headers)
  headers.set("host", url.host)
  const tls = url.protocol === "https:" && !literal ? { ...init.tls, serverName: host } : init.tls
  return fetch(target, { ...init, headers, redirect: "manual", keepalive: false, ...(tls === undefined ? {} : { tls }) })
}
