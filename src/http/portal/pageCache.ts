/**
 * Signed-in pages answered from memory: the encoded page a session was last sent for a URL, kept
 * while nothing was written (DbWrites' epoch over every topic: users, sessions, tokens, permissions,
 * agents, bindings, skills, MCP servers — here or heard from another process) and while the session
 * would still be answered from memory (its expiry, and at most PRINCIPAL_TTL_MS). A hit runs no
 * Effect, no statement and no check: the same session, unchanged since, passed them for this URL.
 * Only pages that are a function of the viewer, the URL, the htmx header and those topics may use it.
 */
import type { Principal } from "../../access/Access.ts"
import { PRINCIPAL_TTL_MS } from "../../access/Access.ts"

export interface CachedPage {
  /** Who the page was rendered for (the access log's user). */
  readonly username: string
  readonly body: Blob
}

interface Held extends CachedPage {
  /** Clock time (ms) from which the page is not answered from memory. */
  readonly until: number
}

export interface PageCacheOptions {
  /** The current write epoch over every topic; undefined while writes may be unseen (nothing is reused). */
  readonly epoch: () => number | undefined
  /** The runtime clock's time in ms (a TestClock in tests). */
  readonly now: () => number
  /** Pages held at most (each up to a page's bytes); all are dropped when full. */
  readonly max?: number
}

/** The key of a request's page: its session cookie's hash, method, path and query, fragment or page. */
export const pageKey = (sessionToken: string, request: Request, url: URL, fragment: boolean): string =>
  `${new Bun.CryptoHasher("sha256").update(sessionToken).digest("base64")}\n${request.method} ${url.pathname}${url.search}\n${fragment ? "f" : "p"}`

export const makePageCache = (options: PageCacheOptions) => {
  const max = options.max ?? 128
  const held = new Map<string, Held>()
  let heldAt: number | undefined
  return {
    /** The page held for `key`, if nothing was written since it was rendered and its session is still good. */
    get: (key: string): CachedPage | undefined => {
      const epoch = options.epoch()
      if (epoch === undefined || epoch !== heldAt) {
        held.clear()
        heldAt = epoch
        return undefined
      }
      const hit = held.get(key)
      return hit !== undefined && options.now() < hit.until ? hit : undefined
    },
    /**
     * Keeps `body`, rendered for `principal` (a session's, with its expiry) after `epoch` was taken; a
     * write since then, or no expiry known, keeps nothing.
     */
    keep: (key: string, epoch: number | undefined, principal: Principal, body: Blob): void => {
      const expiresAt = principal.expiresAt?.getTime()
      if (epoch === undefined || expiresAt === undefined || principal.via !== "session" || options.epoch() !== epoch) return
      if (heldAt !== epoch) {
        held.clear()
        heldAt = epoch
      }
      if (held.size >= max) held.clear()
      held.set(key, { username: principal.username, body, until: Math.min(options.now() + PRINCIPAL_TTL_MS, expiresAt) })
    }
  }
}
