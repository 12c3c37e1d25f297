/**
 * Portal responses: HTML with the security headers (a CSP with no inline script or style), htmx
 * detection, redirects that work for plain forms (303) and htmx (HX-Redirect), success notices.
 */
import { Effect } from "effect"
import type { Html } from "../../../views/html.ts"

/** Scripts and styles only from our own files; no inline code, no eval, no framing, forms post home. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'"
].join("; ")

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
  // Pages and fragments share URLs: caches must key on the htmx header.
  vary: "HX-Request"
}

export const htmlResponse = (body: Html, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(body.text, { status, headers: { ...PAGE_HEADERS, ...headers } })

/** `htmlResponse` of markup already encoded (a UTF-8 Blob: sent without a copy, so one Blob serves many responses). */
export const htmlBlobResponse = (body: Blob, status = 200): Response => new Response(body, { status, headers: { ...PAGE_HEADERS } })

/** An htmx request that wants a fragment (a history restore wants the whole page). */
export const isHtmx = (request: Request): boolean =>
  request.headers.get("hx-request") === "true" && request.headers.get("hx-history-restore-request") !== "true"

/** After a change: 303 for a plain form, HX-Redirect for htmx (a full navigation to `location`). */
export const redirect = (request: Request, location: string): Response =>
  isHtmx(request)
    ? new Response("", { status: 200, headers: { ...PAGE_HEADERS, "hx-redirect": location } })
    : new Response(null, { status: 303, headers: { ...PAGE_HEADERS, location } })

/** An htmx request that swaps a page's body into `<main>` (a boosted one swaps a whole page, so it gets the page). */
const wantsBody = (request: Request): boolean => isHtmx(request) && request.headers.get("hx-boosted") !== "true"

/**
 * The answer to a change that stays on its page (`postInPlace`): the page's body for htmx (swapped
 * into `<main>`), a redirect to `location` for a plain form post.
 */
export const inPlace = <E, R>(request: Request, location: string, body: Effect.Effect<Html, E, R>): Effect.Effect<Response, E, R> =>
  wantsBody(request) ? Effect.map(body, (b) => htmlResponse(b)) : Effect.succeed(redirect(request, location))

/** A refused in-place change: the page's body alone for htmx, else the page. */
export const pageOrBody = (request: Request, page: () => Html, body: () => Html, status = 200): Response =>
  htmlResponse(wantsBody(request) ? body() : page(), status)

/** A local path to return to after signing in; anything else (`//host`, `https:`, nothing) becomes Home. */
export const localPath = (raw: string | null | undefined): string =>
  raw !== null && raw !== undefined && /^\/(?![/\\])[^\s]*$/.test(raw) && raw.length <= 2000 ? raw : "/home"

const NOTICES: ReadonlyArray<readonly [string, (value: string, subject: string) => string]> = [
  ["created", (v, s) => `Created ${s} (v${v}).`],
  ["saved", (v) => `Saved version ${v}.`],
  ["gated", (v) => `Saved as version ${v}. Its evals run now; it becomes current when every one passes (Evaluations).`],
  ["unchanged", (v) => `Nothing changed, so no version was added: version ${v} is still current.`],
  ["skill-unchanged", () => "Nothing changed, so no version was added."],
  ["skill-restored", (v) => `Restored the text of version ${v} as a new version.`],
  ["restored", (v) => `Version ${v} is current again.`],
  ["copied", (v) => `Copied from ${v}.`],
  ["imported", (v) => `Imported as version ${v}.`],
  ["import-unchanged", (v) => `No change: version ${v} is already this package, so no version was added.`],
  ["deleted", (v) => `Deleted ${v}.`],
  ["project-created", (_, s) => `Created the project ${s}.`],
  ["project-saved", (_, s) => `Saved the settings of ${s}.`],
  ["skill-created", (_, s) => `Created the shared skill ${s}.`],
  ["skill-saved", () => "Saved. Agents using this skill get the new text at their next job."],
  ["added", (v) => `Added ${v}.`],
  ["updated", (v) => `Saved ${v}.`],
  ["removed", (v) => `Removed ${v}.`],
  ["bound", (v) => `Bound to ${v}. The next job uses it.`],
  ["revoked", (v) => `Revoked the token ${v}. Requests with it are refused from now on.`],
  ["disabled", (v) => `Disabled ${v}: their sessions ended and their tokens are refused.`],
  ["enabled", (v) => `Enabled ${v}.`]
]

/** A success message by its key (as a redirect would ask for it with `?<key>=<value>`), for a change answered in place. */
export const noticeText = (key: string, value: string, subject = ""): string | null => {
  const found = NOTICES.find(([k]) => k === key)
  return found === undefined ? null : found[1](value.slice(0, 100), subject)
}

/** The success message a redirect asked for (`?saved=3`), as text; the views escape it. */
export const noticeOf = (url: URL, subject: string): string | null => {
  for (const [key, message] of NOTICES) {
    const value = url.searchParams.get(key)
    if (value !== null) return message(value.slice(0, 100), subject)
  }
  return null
}
