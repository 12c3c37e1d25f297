/**
 * Small view pieces the pages share: problem lists and field problem slots, alerts, badges, empty
 * states, the unconfined-tools warning, page headers. User text is always inside `hx-disable`.
 */
import type { Problem } from "../src/contract/Problem.ts"
import { plainMessage, plainPath, type SummaryItem } from "./forms/plainProblems.ts"
import { html, type Html, type Interpolation } from "./html.ts"

export type Tone = "info" | "ok" | "warn" | "error"

export const alert = (tone: Tone, body: Interpolation, title?: string): Html => html`
  <div class="alert alert-${tone}"${tone === "error" || tone === "warn" ? html` role="alert"` : html` role="status"`}>
    ${title === undefined ? html`` : html`<strong>${title}</strong> `}${body}
  </div>`

export const badge = (tone: Tone | "muted", text: string): Html => html`<span class="badge badge-${tone}">${text}</span>`

/** A list of problems in plain words (user text: inside hx-disable, escaped). */
export const problemList = (problems: ReadonlyArray<Problem>, showPath = true): Html =>
  problems.length === 0
    ? html``
    : html`<ul class="problems" hx-disable>${problems.map(
        (p) => html`<li>${showPath ? html`<code>${p.path}</code> ` : html``}${plainMessage(p.message)}</li>`
      )}</ul>`

/**
 * The one summary of a refused form, at its top: how many problems, each in plain words with a link
 * to the field it concerns (forms.js focuses the summary on load and moves to the field on a click).
 */
export const errorSummary = (items: ReadonlyArray<SummaryItem>, lead = ""): Html =>
  items.length === 0
    ? html``
    : html`<div class="error-summary" role="alert" tabindex="-1" aria-labelledby="error-summary-title">
        <h2 id="error-summary-title">${items.length === 1 ? "There is a problem" : `There are ${items.length} problems`}</h2>
        ${lead === "" ? html`` : html`<p>${lead}</p>`}
        <ul hx-disable>${items.map((i) => html`<li><a href="#${i.target}">${i.label}: ${i.message}</a></li>`)}</ul>
      </div>`

export const slotId = (slot: string): string => `problems-${slot}`

/**
 * A form's summary from its placed problems: a field's problem links to the field's slot, labelled by
 * `labels` (else the slot in words); a problem of no field (slot `general`) links to `generalId`, the
 * element holding the form's own problem list.
 */
export const placedSummary = (
  placed: ReadonlyArray<readonly [slot: string, problem: Problem]>,
  labels: Readonly<Record<string, string>>,
  generalId: string,
  lead = ""
): Html =>
  errorSummary(
    placed.map(([slot, p]) => ({
      label: labels[slot] ?? (slot === "general" ? "Form" : plainPath(slot)),
      message: plainMessage(p.message),
      target: slot === "general" ? generalId : slotId(slot)
    })),
    lead
  )

/** A form's problems that belong to no field, where the summary's links point (`id`). */
export const generalProblems = (id: string, problems: ReadonlyArray<Problem>, title?: string): Html =>
  html`<div id="${id}">${problems.length === 0 ? html`` : alert("error", problemList(problems), title)}</div>`

/**
 * A change that stays on its page: htmx posts it and swaps the page's new body (notice, problems or
 * the changed data) into `<main>`; without JavaScript the form posts as usual and the route redirects.
 */
export const postInPlace = (action: string): Html =>
  html` hx-post="${action}" hx-target="#main" hx-swap="innerHTML" hx-disabled-elt="find button[type=submit]"`

/**
 * The problem slot next to a field. With `oob`, the same element as an out-of-band swap, so one
 * preview response updates every slot in place.
 */
export const fieldProblems = (slot: string, problems: ReadonlyArray<Problem> | undefined, oob = false): Html => html`
  <div id="${slotId(slot)}" class="field-problems" aria-live="polite"${oob ? html` hx-swap-oob="true"` : html``}>${problemList(problems ?? [], false)}</div>`

export const emptyState = (title: string, body: Interpolation, action?: Html): Html => html`
  <div class="empty">
    <p class="empty-title">${title}</p>
    <p>${body}</p>
    ${action ?? html``}
  </div>`

/** The process tools (shell, git) an agent grants: `tools` absent grants every kernel tool. */
const unconfinedTools = (tools: ReadonlyArray<string> | undefined): Array<string> =>
  ["shell", "git"].filter((t) => tools === undefined || tools.includes(t))

/** What granting shell/git means here: unconfined with KINTSUGI_SANDBOX=off, else inside the process sandbox (bubblewrap or Landlock). */
export const unconfinedWarning = (tools: ReadonlyArray<string> | undefined, unconfined: boolean): Html => {
  const granted = unconfinedTools(tools)
  if (granted.length === 0) return html``
  if (!unconfined) {
    return alert(
      "info",
      html`${granted.join(" and ")} ${granted.length === 1 ? "runs" : "run"} in the process sandbox (bubblewrap, or Landlock where
      user namespaces are blocked, as in a container): only the workspace is reachable (sources read-only, the output folder
      writable), with no network, no other process, and bounded memory, processes, CPU time and disk. Where no sandbox is
      available, jobs of this agent are refused.`,
      `This agent grants ${granted.join(" and ")}.`
    )
  }
  return alert(
    "warn",
    html`${granted.join(" and ")} ${granted.length === 1 ? "runs" : "run"} unconfined (<code>KINTSUGI_SANDBOX=off</code>): as the runtime's own user, with no sandbox,
    able to read and write anything that user can. Deny-command patterns are a tripwire, not a boundary: a determined
    model can spell around them. Grant ${granted.length === 1 ? "it" : "them"} only to agents you trust with the host.`,
    `This agent grants ${granted.join(" and ")}.`
  )
}

export const pageHeader = (
  title: Interpolation,
  options: { readonly crumbs?: ReadonlyArray<readonly [string, string]>; readonly actions?: Html; readonly meta?: Html } = {}
): Html => html`
  <div class="page-header">
    ${
      options.crumbs === undefined
        ? html``
        : html`<nav aria-label="Breadcrumb" class="crumbs"><ol>${options.crumbs.map(([href, label]) => html`<li><a href="${href}">${label}</a></li>`)}</ol></nav>`
    }
    <div class="page-title">
      <h1>${title}</h1>
      ${options.meta ?? html``}
    </div>
    ${options.actions === undefined ? html`` : html`<div class="actions">${options.actions}</div>`}
  </div>`

/** A timestamp as UTC text, machine-readable in `datetime`. */
export const time = (d: Date | null): Html =>
  d === null
    ? html`<span class="muted">never</span>`
    : html`<time datetime="${d.toISOString()}">${d.toISOString().slice(0, 16).replace("T", " ")} UTC</time>`

/** `/agents/<name>` with the name URL-encoded (names are checked, but paths are built defensively). */
export const agentHref = (name: string, rest = ""): string => `/agents/${encodeURIComponent(name)}${rest}`
export const providerHref = (id: string, rest = ""): string => `/providers/${encodeURIComponent(id)}${rest}`
export const mcpHref = (name: string, rest = ""): string => `/mcp-servers/${encodeURIComponent(name)}${rest}`
export const jobHref = (id: string, rest = ""): string => `/jobs/${encodeURIComponent(id)}${rest}`

/** Holds providers.manage: may change providers, bindings and MCP servers. */
export const canManageProviders = (viewer: { readonly permissions: ReadonlyArray<string> } | null): boolean =>
  viewer?.permissions.includes("providers.manage") === true

/** A money amount in USD with enough digits for small jobs. */
export const usd = (n: number | null): string => (n === null ? "—" : `$${n < 0.01 ? n.toFixed(6) : n.toFixed(4)}`)

export const skillHref = (name: string, rest = ""): string => `/agent-skills/${encodeURIComponent(name)}${rest}`

/**
 * A name field's rules as the server checks them (agents, shared and local skills, providers, MCP
 * servers): a lower-case letter, then lower-case letters, digits and dashes, at most 64 characters.
 */
export const NAME_RULES: Html = html` pattern="[a-z][a-z0-9\\-]*" maxlength="64"`

/** A project id's rules as the server checks them: lower-case letters, digits, dots, dashes and underscores, at most 64. */
export const PROJECT_ID_RULES: Html = html` pattern="[a-z0-9][a-z0-9._\\-]*" maxlength="64"`
