/**
 * A shared skill's history: every version (who, when, what, the change note), one version read-only,
 * restore (saved as a new version, so it is in the history too), and the line diff of two versions.
 */
import type { SkillVersion, SkillVersionInfo, SkillView } from "../../src/agents/SkillStore.ts"
import { alert, badge, pageHeader, skillHref, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"
import { diffView, noteCell, restoreForm, versionSelect, type DiffProps } from "./versions.ts"

const restoreButton = (ctx: PageContext, name: string, v: SkillVersionInfo, inPlace = false): Html =>
  restoreForm(ctx, skillHref(name, `/versions/${v.version}/restore`), v, inPlace)

export const skillTabs = (name: string, active: "skill" | "versions"): Html => html`
  <nav class="tabs" aria-label="Shared skill"><ul>
    <li><a href="${skillHref(name)}"${active === "skill" ? html` aria-current="page"` : html``}>Skill</a></li>
    <li><a href="${skillHref(name, "/versions")}"${active === "versions" ? html` aria-current="page"` : html``}>History</a></li>
  </ul></nav>`

export interface SkillVersionsProps {
  readonly skill: SkillView
  readonly versions: ReadonlyArray<SkillVersionInfo>
  readonly diff: DiffProps | null
  readonly notice: string | null
}

/** Everything inside `<main>` of a shared skill's history (what a restore swaps in). */
export const skillVersionsBody = (ctx: PageContext, props: SkillVersionsProps): Html => {
  const { skill, versions } = props
  const current = versions.find((v) => v.current)?.version ?? versions[0]?.version ?? 1
  const previous = versions.find((v) => v.version < current)?.version ?? current
  return html`
  ${pageHeader(skill.name, { crumbs: [["/agent-skills", "Shared skills"]], meta: html`<div class="badges">${badge("info", "custom")}</div>` })}
  ${skillTabs(skill.name, "versions")}
  ${props.notice === null ? html`` : alert("ok", props.notice)}
  <section class="card">
    <h2>History</h2>
    <p class="muted">Every edit is a new version and reaches every agent using the skill at its next job${
      skill.usedBy.length === 0 ? "" : ` (now: ${skill.usedBy.join(", ")})`
    }. Restoring saves an older text as a new version.</p>
    <table class="versions">
      <thead><tr><th scope="col">Version</th><th scope="col">Saved by</th><th scope="col">When</th><th scope="col">Note</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>${versions.map(
        // User text inside hx-disable cells; the actions cell stays live for its in-place Restore.
        (v) => html`<tr${v.current ? html` class="current"` : html``}>
          <td data-label="Version" hx-disable><a href="${skillHref(skill.name, `/versions/${v.version}`)}">v${v.version}</a> ${v.current ? badge("ok", "current") : html``}</td>
          <td data-label="Saved by" hx-disable>${v.savedBy}</td>
          <td data-label="When" hx-disable>${time(v.savedAt)}</td>
          <td data-label="Note" hx-disable>${noteCell(v)}</td>
          <td class="row-actions">${restoreButton(ctx, skill.name, v, true)}</td>
        </tr>`
      )}</tbody>
    </table>
  </section>
  <section class="card">
    <h2>Compare two versions</h2>
    <form class="diff-form" method="get" action="${skillHref(skill.name, "/diff")}" hx-get="${skillHref(skill.name, "/diff")}" hx-target="#diff" hx-push-url="true">
      ${versionSelect("diff-from", "From", versions, props.diff?.from ?? previous)}
      ${versionSelect("diff-to", "To", versions, props.diff?.to ?? current)}
      <button type="submit" class="secondary">Compare</button>
    </form>
    <div id="diff">${props.diff === null ? html`<p class="muted">Choose two versions and compare them.</p>` : diffView(props.diff)}</div>
  </section>`
}

export const skillVersionsPage = (ctx: PageContext, props: SkillVersionsProps): Html =>
  layout(ctx, `${props.skill.name}: history`, skillVersionsBody(ctx, props))

export const skillVersionPage = (ctx: PageContext, skill: SkillView, v: SkillVersion): Html =>
  layout(
    ctx,
    `${skill.name} v${v.info.version}`,
    html`
  ${pageHeader(`${skill.name} v${v.info.version}`, {
    crumbs: [
      ["/agent-skills", "Shared skills"],
      [skillHref(skill.name, "/versions"), skill.name]
    ]
  })}
  ${skillTabs(skill.name, "versions")}
  ${alert(
    "info",
    html`<span hx-disable>Saved by ${v.info.savedBy}, ${time(v.info.savedAt)} (${v.info.note}).${v.info.changeNote === undefined ? "" : ` "${v.info.changeNote}"`}</span>
      <a href="${skillHref(skill.name, `/diff?from=${v.info.version}&to=${String(skill.version ?? v.info.version)}`)}">Compare with the current version</a>`,
    `Version ${v.info.version}${v.info.current ? " (current)" : ""}.`
  )}
  <div class="actions">${restoreButton(ctx, skill.name, v.info)}</div>
  <section class="card" hx-disable><h2>Description</h2><p>${v.description}</p><h2>Content</h2><pre class="code">${v.content}</pre></section>`
  )
