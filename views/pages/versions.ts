/**
 * Version history of a custom agent: who saved what and when, restore, one saved version read-only,
 * and the line diff between any two versions (a fragment the compare form swaps in).
 */
import type { AgentView, RestoreRow, VersionInfo } from "../../src/agents/AgentStore.ts"
import type { SkillVersionInfo } from "../../src/agents/SkillStore.ts"
import type { FileDiff, Hunk } from "../forms/lineDiff.ts"
import { hunks } from "../forms/lineDiff.ts"
import { agentHref, alert, badge, emptyState, postInPlace, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { agentHeader } from "./agentHeader.ts"
import { packageDetails } from "./agentView.ts"

export interface DiffProps {
  readonly from: number
  readonly to: number
  readonly files: ReadonlyArray<FileDiff>
}

export interface VersionsProps {
  readonly agent: AgentView
  readonly versions: ReadonlyArray<VersionInfo>
  readonly diff: DiffProps | null
  readonly notice: string | null
  /** Who made an older version current again, newest first. */
  readonly restores: ReadonlyArray<RestoreRow>
  /** Edits of the shared skills the agent lists (they change what its jobs get), newest first. */
  readonly skillChanges: ReadonlyArray<SkillVersionInfo>
}

/** What the save was, then the author's own words. */
export const noteCell = (v: { readonly note: string; readonly changeNote?: string }): Html =>
  html`${v.note}${v.changeNote === undefined ? html`` : html`<span class="change-note">${v.changeNote}</span>`}`

/**
 * Restore of a version (an agent's or a shared skill's) posted to `action`: `inPlace` on a history
 * page (the page's new body is swapped in), a plain post elsewhere. None for readers or the current one.
 */
export const restoreForm = (
  ctx: PageContext,
  action: string,
  v: { readonly version: number; readonly current: boolean },
  inPlace = false
): Html =>
  ctx.viewer?.canManage !== true || v.current
    ? html``
    : html`<form class="inline" method="post" action="${action}"${inPlace ? postInPlace(action) : html``}>
        ${csrfField(ctx)}<button type="submit" class="small secondary">Restore v${v.version}</button>
      </form>`

const restoreButton = (ctx: PageContext, name: string, v: VersionInfo, inPlace = false): Html =>
  restoreForm(ctx, agentHref(name, `/versions/${v.version}/restore`), v, inPlace)

const historyTable = (ctx: PageContext, name: string, versions: ReadonlyArray<VersionInfo>): Html => html`
  <table class="versions">
    <thead><tr><th scope="col">Version</th><th scope="col">Saved by</th><th scope="col">When</th><th scope="col">Note</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${versions.map(
      // User text inside hx-disable cells; the actions cell stays live for its in-place Restore.
      (v) => html`<tr${v.current ? html` class="current"` : html``}>
        <td data-label="Version" hx-disable><a href="${agentHref(name, `/versions/${v.version}`)}">v${v.version}</a> ${v.current ? badge("ok", "current") : html``}</td>
        <td data-label="Saved by" hx-disable>${v.savedBy}</td>
        <td data-label="When" hx-disable>${time(v.savedAt)}</td>
        <td data-label="Note" hx-disable>${noteCell(v)}</td>
        <td class="row-actions"><a class="button small secondary" href="${agentHref(name, `/export?version=${v.version}`)}" download>Export</a> ${restoreButton(ctx, name, v, true)}</td>
      </tr>`
    )}</tbody>
  </table>`

/** A version picker (the compare forms of agents' and shared skills' histories, the Evaluations tab); `name` defaults to from/to. */
export const versionSelect = (
  id: string,
  label: string,
  versions: ReadonlyArray<{ readonly version: number; readonly current: boolean }>,
  chosen: number,
  name: string = id === "diff-from" ? "from" : "to"
): Html => html`
  <div class="field">
    <label for="${id}">${label}</label>
    <select id="${id}" name="${name}">${versions.map(
      (v) =>
        html`<option value="${v.version}"${v.version === chosen ? html` selected` : html``}>v${v.version}${v.current ? " (current)" : ""}</option>`
    )}</select>
  </div>`

const sign = { same: " ", add: "+", del: "-" } as const

const hunkRows = (h: Hunk): Html => html`
  ${h.skippedBefore > 0 ? html`<tr class="skip"><td colspan="4">${h.skippedBefore} unchanged line${h.skippedBefore === 1 ? "" : "s"}</td></tr>` : html``}
  ${h.lines.map(
    (l) =>
      html`<tr class="${l.op}"><td class="ln">${l.oldLine ?? ""}</td><td class="ln">${l.newLine ?? ""}</td><td class="sign" aria-label="${l.op === "add" ? "added" : l.op === "del" ? "removed" : "unchanged"}">${sign[l.op]}</td><td class="text"><code>${l.text}</code></td></tr>`
  )}`

const fileDiff = (f: FileDiff): Html => html`
  <section class="file-diff">
    <h3><code>${f.path}</code> ${badge(f.change === "added" ? "ok" : f.change === "removed" ? "error" : "info", f.change)}
      <span class="muted">+${f.added} -${f.removed}</span></h3>
    <table class="diff"><tbody>${hunks(f.lines).map(hunkRows)}</tbody></table>
  </section>`

/** The diff of two versions: changed files with their hunks, then how many files did not change. */
export const diffView = (d: DiffProps): Html => {
  const changed = d.files.filter((f) => f.change !== "unchanged")
  const same = d.files.length - changed.length
  return html`
  <div class="diff-view" hx-disable>
    <h3 class="diff-title">v${d.from} to v${d.to}</h3>
    ${changed.length === 0 ? emptyState("No differences.", `v${d.from} and v${d.to} hold the same package.`) : changed.map(fileDiff)}
    ${same > 0 && changed.length > 0 ? html`<p class="muted">${same} file${same === 1 ? "" : "s"} unchanged.</p>` : html``}
  </div>`
}

const compareForm = (name: string, versions: ReadonlyArray<VersionInfo>, diff: DiffProps | null): Html => {
  const current = versions.find((v) => v.current)?.version ?? versions[0]?.version ?? 1
  const previous = versions.find((v) => v.version < current)?.version ?? current
  return html`
  <form class="diff-form" method="get" action="${agentHref(name, "/diff")}" hx-get="${agentHref(name, "/diff")}" hx-target="#diff" hx-push-url="true">
    ${versionSelect("diff-from", "From", versions, diff?.from ?? previous)}
    ${versionSelect("diff-to", "To", versions, diff?.to ?? current)}
    <button type="submit" class="secondary">Compare</button>
  </form>`
}

const restoresCard = (restores: ReadonlyArray<RestoreRow>): Html =>
  restores.length === 0
    ? html``
    : html`<section class="card">
    <h2>Restores</h2>
    <table class="restores">
      <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Restored</th><th scope="col">Current before</th></tr></thead>
      <tbody hx-disable>${restores.map(
        (r) =>
          html`<tr><td data-label="When">${time(r.restoredAt)}</td><td data-label="Who">${r.restoredBy}</td><td data-label="Restored">v${r.toVersion}</td><td data-label="Current before">v${r.fromVersion}</td></tr>`
      )}</tbody>
    </table>
  </section>`

const skillChangesCard = (changes: ReadonlyArray<SkillVersionInfo>): Html =>
  changes.length === 0
    ? html``
    : html`<section class="card">
    <h2>Shared skill changes</h2>
    <p class="muted">This agent lists these shared skills; each edit changes what its next job gets.</p>
    <table class="skill-changes">
      <thead><tr><th scope="col">Skill</th><th scope="col">Version</th><th scope="col">Saved by</th><th scope="col">When</th><th scope="col">Note</th></tr></thead>
      <tbody hx-disable>${changes.map(
        (v) => html`<tr><td data-label="Skill"><a href="/agent-skills/${encodeURIComponent(v.name)}/versions">${v.name}</a></td>
          <td data-label="Version"><a href="/agent-skills/${encodeURIComponent(v.name)}/versions/${v.version}">v${v.version}</a></td>
          <td data-label="Saved by">${v.savedBy}</td><td data-label="When">${time(v.savedAt)}</td><td data-label="Note">${noteCell(v)}</td></tr>`
      )}</tbody>
    </table>
  </section>`

/** Everything inside `<main>` of the history page (what a restore swaps in). */
export const versionsBody = (ctx: PageContext, props: VersionsProps): Html => html`
  ${agentHeader(ctx, props.agent, "versions", props.notice)}
  <section class="card">
    <h2>History</h2>
    <p class="muted">Every save is a new version; restore makes an older one current again.</p>
    ${historyTable(ctx, props.agent.name, props.versions)}
  </section>
  ${restoresCard(props.restores)}
  ${skillChangesCard(props.skillChanges)}
  <section class="card">
    <h2>Compare two versions</h2>
    ${compareForm(props.agent.name, props.versions, props.diff)}
    <div id="diff">${props.diff === null ? html`<p class="muted">Choose two versions and compare them.</p>` : diffView(props.diff)}</div>
  </section>`

export const versionsPage = (ctx: PageContext, props: VersionsProps): Html =>
  layout(ctx, `${props.agent.name}: versions`, versionsBody(ctx, props))

export const versionPage = (ctx: PageContext, agent: AgentView, info: VersionInfo, version: AgentView): Html =>
  layout(
    ctx,
    `${agent.name} v${info.version}`,
    html`
  ${agentHeader(ctx, agent, "versions", null)}
  ${alert(
    "info",
    html`<span hx-disable>Saved by ${info.savedBy}, ${time(info.savedAt)}${info.note === "" ? "" : ` (${info.note})`}.${info.changeNote === undefined ? "" : ` "${info.changeNote}"`}</span>
      <a href="${agentHref(agent.name, `/diff?from=${info.version}&to=${String(agent.version)}`)}">Compare with the current version</a>`,
    `Version ${info.version}${info.current ? " (current)" : ""}.`
  )}
  <div class="actions">
    <a class="button secondary" href="${agentHref(agent.name, `/export?version=${info.version}`)}" download>Export v${info.version}</a>
    ${restoreButton(ctx, agent.name, info)}
  </div>
  ${packageDetails(version.package)}`
  )
