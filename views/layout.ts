/**
 * The portal's page shell: head (CSP-friendly: only served scripts and styles, htmx configured by a
 * meta tag), navigation, the signed-in user and their permissions, the toast region and the request bar.
 */
import { html, type Html } from "./html.ts"

interface Viewer {
  readonly username: string
  readonly permissions: ReadonlyArray<string>
  /** Holds agents.manage: sees edit controls. */
  readonly canManage: boolean
  /** The session's CSRF token (null for API-token principals, which need none). */
  readonly csrfToken: string | null
}

export interface Assets {
  readonly css: string
  readonly js: string
  /** forms.js: the unsaved-changes guard and the error summary. */
  readonly formsJs: string
  readonly htmx: string
  /** htmx's SSE extension (`hx-ext="sse"`). */
  readonly sse: string
}

/** What every page knows besides its own props. */
export interface PageContext {
  readonly viewer: Viewer | null
  readonly assets: Assets
  /** The request path, to mark the current navigation item. */
  readonly path: string
  /** Process tools (shell, git) run without the sandbox here (KINTSUGI_SANDBOX=off). */
  readonly processToolsUnconfined: boolean
}

/**
 * htmx settings: no eval, no script tags from responses, requests to our origin only, indicator
 * styles from our stylesheet (an injected <style> would break the CSP), no page snapshots in
 * sessionStorage, and 4xx/5xx responses swapped (they are HTML error fragments).
 */
const HTMX_CONFIG = {
  allowEval: false,
  allowScriptTags: false,
  selfRequestsOnly: true,
  includeIndicatorStyles: false,
  historyCacheSize: 0,
  refreshOnHistoryMiss: true,
  historyRestoreAsHxRequest: false,
  // Settling copies these attributes from the old element to its swapped-in twin with setAttribute;
  // a `style` attribute set that way is inline style, which the CSP refuses.
  attributesToSettle: ["class", "width", "height"],
  responseHandling: [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "[45]..", swap: true, error: true },
    { code: "...", swap: false }
  ]
} as const

const NAV: ReadonlyArray<{ readonly href: string; readonly label: string; readonly manageOnly: boolean }> = [
  { href: "/home", label: "Home", manageOnly: false },
  { href: "/agents", label: "Agents", manageOnly: false },
  { href: "/agent-skills", label: "Shared skills", manageOnly: false },
  { href: "/agents/-/import", label: "Import", manageOnly: true },
  { href: "/jobs", label: "Jobs", manageOnly: false },
  { href: "/projects", label: "Projects", manageOnly: false },
  { href: "/providers", label: "LLM providers", manageOnly: false },
  { href: "/mcp-servers", label: "MCP servers", manageOnly: false },
  { href: "/web-search", label: "Web search", manageOnly: false }
]

const current = (path: string, href: string): boolean =>
  href === "/agents" ? path === "/agents" || (path.startsWith("/agents/") && !path.startsWith("/agents/-/import")) : path.startsWith(href)

export const csrfField = (ctx: PageContext): Html =>
  ctx.viewer?.csrfToken == null ? html`` : html`<input type="hidden" name="_csrf" value="${ctx.viewer.csrfToken}">`

const userBox = (ctx: PageContext, viewer: Viewer): Html => html`
  <div class="user">
    <a class="user-name link" href="/account" title="Signed in: your API tokens">${viewer.username}</a>
    <span class="perms">${
      viewer.permissions.length === 0
        ? html`<span class="chip">read only</span>`
        : viewer.permissions.map((p) => html`<span class="chip">${p}</span>`)
    }</span>
    <form method="post" action="/sign-out" class="inline">
      ${csrfField(ctx)}
      <button type="submit" class="link">Sign out</button>
    </form>
  </div>`

const header = (ctx: PageContext): Html => {
  const viewer = ctx.viewer
  return html`
  <header class="topbar">
    <a class="brand" href="/">Kintsugi <span>Agent Builder</span></a>
    ${
      viewer === null
        ? html``
        : html`<nav aria-label="Administration">
          <ul>${NAV.filter((n) => !n.manageOnly || viewer.canManage).map(
            (n) => html`<li><a href="${n.href}"${current(ctx.path, n.href) ? html` aria-current="page"` : html``}>${n.label}</a></li>`
          )}</ul>
        </nav>
        ${userBox(ctx, viewer)}`
    }
  </header>`
}

/** A whole page. `title` is plain text; `body` is the page's markup. */
export const layout = (ctx: PageContext, title: string, body: Html): Html => {
  const csrf = ctx.viewer?.csrfToken
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${JSON.stringify(HTMX_CONFIG)}">
<title>${title} - Kintsugi</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ctx.assets.css}">
<script src="${ctx.assets.htmx}" defer></script>
<script src="${ctx.assets.sse}" defer></script>
<script src="${ctx.assets.js}" defer></script>
<script src="${ctx.assets.formsJs}" defer></script>
</head>
<body hx-indicator="#request-bar"${csrf == null ? html`` : html` hx-headers="${JSON.stringify({ "x-csrf-token": csrf })}"`}>
<a class="skip-link" href="#main">Skip to content</a>
<div id="request-bar" class="htmx-indicator" role="progressbar" aria-label="Working"></div>
${header(ctx)}
<div id="flash" class="flash" role="alert" aria-live="assertive"></div>
<main id="main" tabindex="-1">
${body}
</main>
</body>
</html>
`
}
