/**
 * MCP servers (Settings → MCP servers): the list and the add/edit form. Header values are
 * write-only: stored headers are listed by name with an empty value field; URL policy problems
 * appear at the URL field.
 */
import type { McpServerView, McpToolView } from "../../src/providers/McpServers.ts"
import type { HeaderRow, McpForm } from "../forms/providerForm.ts"
import {
  alert,
  badge,
  canManageProviders,
  emptyState,
  fieldProblems,
  generalProblems,
  mcpHref,
  NAME_RULES,
  pageHeader,
  placedSummary,
  time
} from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import type { Placed } from "./providers.ts"

export const mcpServersPage = (ctx: PageContext, servers: ReadonlyArray<McpServerView>, notice: string | null): Html =>
  layout(
    ctx,
    "MCP servers",
    html`
  ${pageHeader("MCP servers", {
    meta: html`<p class="muted">Servers agents may name; a grant in the agent (<code>mcp__server__tool</code>) and the allowed tools here both apply.</p>`,
    actions: canManageProviders(ctx.viewer) ? html`<a class="button primary" href="/mcp-servers/-/new">Add MCP server</a>` : html``
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  ${canManageProviders(ctx.viewer) ? html`` : alert("info", "Changing MCP servers needs the providers.manage permission.")}
  ${
    servers.length === 0
      ? emptyState("No MCP server yet.", "Register a server to let agents use its tools.")
      : html`<table class="catalog">
      <thead><tr><th scope="col">Server</th><th scope="col">Allowed tools</th><th scope="col">Headers</th><th scope="col">Updated</th></tr></thead>
      <tbody hx-disable>${servers.map(
        (s) => html`<tr>
          <td data-label="Server"><div><a class="agent-name" href="${mcpHref(s.name)}">${s.name}</a><div class="description">${s.url}</div>${s.allowPrivateNetwork ? badge("warn", "private network allowed") : html``}</div></td>
          <td data-label="Allowed tools">${s.allowedTools.length === 0 ? html`<span class="muted">none</span>` : s.allowedTools.join(", ")}</td>
          <td data-label="Headers">${s.headerNames.length === 0 ? html`<span class="muted">none</span>` : s.headerNames.join(", ")}</td>
          <td data-label="Updated">${time(s.updatedAt)} by ${s.updatedBy}</td>
        </tr>`
      )}</tbody></table>`
  }`
  )

const headerRow = (row: HeaderRow, stored: boolean): Html => html`
  <div class="repeat-row" data-row>
    <input type="hidden" name="headerKey" value="${row.key}">
    <div class="grid-2">
      <div class="field"><label for="h-${row.key}-name">Header name</label>
        <input id="h-${row.key}-name" name="h.${row.key}.name" value="${row.name}" autocomplete="off" spellcheck="false"></div>
      <div class="field"><label for="h-${row.key}-value">Value</label>
        <input id="h-${row.key}-value" name="h.${row.key}.value" type="password" value="" autocomplete="new-password" placeholder="${stored ? "stored; type to replace" : ""}"></div>
    </div>
    <button type="button" class="small secondary" data-remove-row>Remove header</button>
  </div>`

const MCP_LABELS: Readonly<Record<string, string>> = {
  name: "Name",
  url: "URL",
  headers: "Headers",
  timeoutSec: "Timeout",
  allowedTools: "Allowed tools",
  general: "MCP server"
}

export const mcpServerPage = (ctx: PageContext, form: McpForm, problems: Placed, creating: boolean, notice: string | null = null): Html => {
  const manage = canManageProviders(ctx.viewer)
  const dis = manage ? html`` : html` disabled`
  const general = problems.get("general") ?? []
  return layout(
    ctx,
    creating ? "New MCP server" : form.name,
    html`
  ${pageHeader(creating ? "New MCP server" : form.name, {
    crumbs: [["/mcp-servers", "MCP servers"]],
    actions:
      !creating && manage
        ? html`<details class="action-menu"><summary class="button danger">Delete</summary>
          <form class="popover stack" method="post" action="${mcpHref(form.name, "/delete")}">${csrfField(ctx)}
            <p>Delete <strong>${form.name}</strong> and its stored headers? Agents naming it can no longer start.</p>
            <button type="submit" class="danger">Delete ${form.name}</button></form></details>`
        : html``
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  <form method="post" action="${creating ? "/mcp-servers" : mcpHref(form.name)}" class="stack card" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    ${placedSummary(
      [...problems.entries()].flatMap(([slot, list]) => list.map((p) => [slot, p] as const)),
      MCP_LABELS,
      "mcp-general"
    )}
    ${generalProblems("mcp-general", general)}
    ${
      creating
        ? html`<div class="field"><label for="f-name">Name</label>
          <p class="hint" id="hint-name">Lower-case letters, digits and dashes; agents grant its tools as <code>mcp__name__tool</code>.</p>
          <input id="f-name" name="name" value="${form.name}" required${NAME_RULES} autocomplete="off" spellcheck="false" aria-describedby="hint-name problems-name">
          ${fieldProblems("name", problems.get("name"))}</div>`
        : html``
    }
    <div class="field"><label for="f-url">URL</label>
      <input id="f-url" name="url" type="url" value="${form.url}" autocomplete="off" spellcheck="false" aria-describedby="problems-url"${dis}>
      ${fieldProblems("url", problems.get("url"))}</div>
    <fieldset><legend>Headers (write-only)</legend>
      <p class="hint">Values are stored encrypted and never shown. Typing any value replaces all stored headers with the rows that have a value; typing none keeps them.</p>
      <div id="rows-header" class="rows" data-empty="No headers.">${form.headers.map((h) => headerRow(h, !creating))}</div>
      <template id="tpl-header">${headerRow({ key: "__KEY__", name: "" }, false)}</template>
      ${manage ? html`<button type="button" class="secondary" data-add-row="header">Add header</button>` : html``}
      ${creating ? html`` : html`<label class="check"><input type="checkbox" name="clearHeaders"> Remove the stored headers</label>`}
      ${fieldProblems("headers", problems.get("headers"))}
    </fieldset>
    <div class="grid-2">
      <div class="field"><label for="f-timeoutSec">Timeout (seconds)</label>
        <input id="f-timeoutSec" name="timeoutSec" inputmode="numeric" value="${form.timeoutSec}" aria-describedby="problems-timeoutSec"${dis}>
        ${fieldProblems("timeoutSec", problems.get("timeoutSec"))}</div>
      <div class="field"><label for="f-allowedTools">Allowed tools</label>
        <p class="hint" id="hint-allowedTools">Tools the server does not mark read-only that jobs may call, one name per line (read-only tools need no entry).</p>
        <div hx-disable><textarea id="f-allowedTools" name="allowedTools" rows="3" spellcheck="false" aria-describedby="hint-allowedTools problems-allowedTools"${dis}>${form.allowedTools}</textarea></div>
        ${fieldProblems("allowedTools", problems.get("allowedTools"))}</div>
    </div>
    <div class="field">
      <label class="check"><input type="checkbox" name="allowPrivateNetwork"${form.allowPrivateNetwork ? html` checked` : html``}${dis}> Allow private network addresses</label>
      ${alert("warn", "Only for a server on your own network: the URL may then reach loopback, private and link-local addresses, including this host's own services.")}
    </div>
    ${manage ? html`<div class="save-bar"><button type="submit" class="primary">${creating ? "Add server" : "Save server"}</button></div>` : html``}
  </form>
  ${
    creating || !manage
      ? html``
      : html`<section class="card stack"><h2>Tools</h2><p class="hint">${TOOLS_HINT}</p>
      <div id="mcp-tools"><a class="button secondary" href="${mcpHref(form.name, "/tools")}" hx-get="${mcpHref(form.name, "/tools")}" hx-target="#mcp-tools" hx-swap="outerHTML">List tools</a></div></section>`
  }`
  )
}

/** What a live listing found: the tools, or why the server could not be listed (never a header value). */
export type McpToolListing = { readonly tools: ReadonlyArray<McpToolView> } | { readonly error: string }

/** The server's tools as listed now: read-only flags, whether jobs get each, and allow/stop-allowing buttons. */
export const mcpToolsFragment = (ctx: PageContext, server: McpServerView, listing: McpToolListing): Html => {
  const manage = canManageProviders(ctx.viewer)
  if ("error" in listing) return html`<div id="mcp-tools">${alert("error", listing.error)}</div>`
  const listed = new Set(listing.tools.map((t) => t.name))
  const unlisted = server.allowedTools.filter((t) => !listed.has(t))
  const toggle = (tool: McpToolView) => html`<form method="post" action="${mcpHref(server.name, "/allowed-tools")}" class="inline"
      hx-post="${mcpHref(server.name, "/allowed-tools")}" hx-target="#mcp-tools" hx-swap="outerHTML" hx-disabled-elt="find button">${csrfField(ctx)}
      <input type="hidden" name="tool" value="${tool.name}"><input type="hidden" name="allowed" value="${tool.allowed ? "0" : "1"}">
      <button type="submit" class="small ${tool.allowed ? "secondary" : "primary"}">${tool.allowed ? "Stop allowing" : "Allow"}</button></form>`
  return html`<div id="mcp-tools">
    ${
      listing.tools.length === 0
        ? emptyState("The server lists no tools.", "")
        : html`<table class="catalog">
      <thead><tr><th scope="col">Tool</th><th scope="col">Read-only</th><th scope="col">Jobs get it</th>${manage ? html`<th scope="col">Admin</th>` : html``}</tr></thead>
      <tbody hx-disable>${listing.tools.map(
        (t) => html`<tr>
          <td data-label="Tool"><div><code>${t.name}</code><div class="description">${t.description}</div></div></td>
          <td data-label="Read-only">${t.readOnly ? badge("ok", "read-only") : badge("warn", "not read-only")}</td>
          <td data-label="Jobs get it">${t.offered ? (t.readOnly ? "yes" : badge("warn", "yes, allowed by an admin")) : html`<span class="muted">no</span>`}</td>
          ${manage ? html`<td data-label="Admin">${t.readOnly && !t.allowed ? html`<span class="muted">no allowance needed</span>` : toggle(t)}</td>` : html``}
        </tr>`
      )}</tbody></table>`
    }
    ${unlisted.length === 0 ? html`` : html`<p class="muted" hx-disable>Allowed but not listed by the server now: ${unlisted.join(", ")}</p>`}
  </div>`
}

/** The tools listing as a page of its own (no htmx, or after allowing a tool). */
export const mcpToolsPage = (ctx: PageContext, server: McpServerView, listing: McpToolListing, notice: string | null): Html =>
  layout(
    ctx,
    `${server.name}: tools`,
    html`
  ${pageHeader(`Tools of ${server.name}`, {
    crumbs: [
      ["/mcp-servers", "MCP servers"],
      [mcpHref(server.name), server.name]
    ]
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  <p class="hint">${TOOLS_HINT}</p>
  ${mcpToolsFragment(ctx, server, listing)}`
  )

const TOOLS_HINT =
  "Listed live from the server with its stored headers. A job granting this server gets the tools the server marks read-only and those an admin allowed here by name; it is never offered any other tool."
