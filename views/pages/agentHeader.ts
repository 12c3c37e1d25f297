/**
 * The top of every agent page: name, status badges, tabs (definition, versions, job definition) and
 * the actions the viewer may take (enable/disable, export, copy, delete with a confirmation step).
 */
import type { AgentView } from "../../src/agents/AgentStore.ts"
import { agentHref, alert, badge, NAME_RULES, pageHeader, slotId, unconfinedWarning } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, type PageContext } from "../layout.ts"

export type AgentTab = "agent" | "versions" | "definition" | "model" | "evals"

/** The enabled state and its toggle; the toggle's response replaces this fragment. */
export const enabledToggle = (ctx: PageContext, agent: Pick<AgentView, "name" | "enabled" | "builtin">): Html => {
  const state = agent.enabled ? badge("ok", "enabled") : badge("warn", "disabled")
  if (agent.builtin || ctx.viewer?.canManage !== true) return html`<span id="enabled-toggle">${state}</span>`
  const action = agentHref(agent.name, "/enabled")
  return html`
  <form id="enabled-toggle" class="inline" method="post" action="${action}" hx-post="${action}" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
    ${csrfField(ctx)}
    <input type="hidden" name="enabled" value="${agent.enabled ? "false" : "true"}">
    ${state}
    <button type="submit" class="small secondary">${agent.enabled ? "Disable" : "Enable"}</button>
  </form>`
}

const tabs = (ctx: PageContext, agent: AgentView, active: AgentTab): Html => {
  const editable = !agent.builtin && ctx.viewer?.canManage === true
  const items: Array<readonly [AgentTab, string, string]> = [
    ["agent", editable ? "Editor" : "Overview", agentHref(agent.name)],
    ...(agent.builtin ? [] : [["versions", "Versions", agentHref(agent.name, "/versions")] as const]),
    ["definition", "Job definition", agentHref(agent.name, "/definition")],
    ["model", "Model", agentHref(agent.name, "/binding")],
    ["evals", "Evaluations", agentHref(agent.name, "/evals")]
  ]
  return html`<nav class="tabs" aria-label="Agent"><ul>${items.map(
    ([id, label, href]) => html`<li><a href="${href}"${id === active ? html` aria-current="page"` : html``}>${label}</a></li>`
  )}</ul></nav>`
}

/** A refused copy: the name as typed and what is wrong with it, in plain words. */
export interface CopyRefusal {
  readonly name: string
  readonly problems: ReadonlyArray<string>
}

/**
 * The Copy menu. htmx posts it and a refusal swaps the menu back in, open, with the problem under
 * the name field; a plain post gets the agent's page with the menu so.
 */
export const copyMenu = (ctx: PageContext, agent: Pick<AgentView, "name">, refusal: CopyRefusal | null = null): Html => {
  const action = agentHref(agent.name, "/copy")
  const invalid = refusal !== null && refusal.problems.length > 0
  return html`
  <details class="action-menu" id="copy-menu"${refusal === null ? html`` : html` open`}>
    <summary class="button secondary">Copy</summary>
    <form class="popover stack" method="post" action="${action}" hx-post="${action}" hx-target="#copy-menu" hx-swap="outerHTML" hx-disabled-elt="find button">
      ${csrfField(ctx)}
      <div class="field">
        <label for="copy-name">Name of the copy</label>
        <input id="copy-name" name="newName" required autocomplete="off" spellcheck="false"${NAME_RULES} title="Lower-case letters, digits and dashes, starting with a letter (at most 64)"
          value="${refusal?.name ?? `${agent.name}-copy`}" aria-describedby="copy-name-hint ${slotId("copy-name")}"${invalid ? html` aria-invalid="true" autofocus` : html``}>
        <p class="hint" id="copy-name-hint">Lower-case letters, digits and dashes, starting with a letter (at most 64).</p>
        <div id="${slotId("copy-name")}" class="field-problems" aria-live="polite">${
          invalid ? html`<ul class="problems" hx-disable>${refusal.problems.map((p) => html`<li>${p}</li>`)}</ul>` : html``
        }</div>
      </div>
      <button type="submit" class="primary">Copy as a custom agent</button>
    </form>
  </details>`
}

const deleteForm = (ctx: PageContext, agent: AgentView): Html => html`
  <details class="action-menu">
    <summary class="button danger">Delete</summary>
    <form class="popover stack" method="post" action="${agentHref(agent.name, "/delete")}">
      ${csrfField(ctx)}
      <p>Delete <strong>${agent.name}</strong>? Jobs can no longer use it. Its versions stay in the history, and its
        version numbers are never reused.</p>
      <button type="submit" class="danger">Delete ${agent.name}</button>
    </form>
  </details>`

export const agentHeader = (
  ctx: PageContext,
  agent: AgentView,
  active: AgentTab,
  notice: string | null,
  copy: CopyRefusal | null = null
): Html => {
  const manage = ctx.viewer?.canManage === true
  const actions = html`
    ${manage && agent.enabled && agent.problems.length === 0 ? html`<a class="button primary" href="${agentHref(agent.name, "/run")}">Run a job</a>` : html``}
    <a class="button secondary" href="${agentHref(agent.name, "/export")}" download>Export ZIP</a>
    ${manage ? copyMenu(ctx, agent, copy) : html``}
    ${manage && !agent.builtin ? deleteForm(ctx, agent) : html``}`
  const version = `v${agent.version}`
  return html`
  ${pageHeader(agent.name, {
    crumbs: [["/agents", "Agents"]],
    actions,
    meta: html`<div class="badges">
      ${agent.builtin ? badge("muted", "built-in, read-only") : badge("info", "custom")}
      ${badge("muted", agent.audience)}
      ${badge("muted", version)}
      ${agent.problems.length === 0 ? badge("ok", "valid") : badge("error", `${agent.problems.length} problem${agent.problems.length === 1 ? "" : "s"}`)}
      ${enabledToggle(ctx, agent)}
    </div>
    <p class="description" hx-disable>${agent.description}</p>`
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  ${unconfinedWarning(agent.package.tools, ctx.processToolsUnconfined)}
  ${agent.builtin ? alert("info", manage ? "Built-in agents are read-only. Copy this one to change it." : "Built-in agents are read-only.") : html``}
  ${!agent.builtin && !manage ? alert("info", "You can read this agent; changing it needs the agents.manage permission.") : html``}
  ${tabs(ctx, agent, active)}`
}
