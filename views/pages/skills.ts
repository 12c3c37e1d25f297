/**
 * Shared skills: the list (with the agents using each), one skill read-only or in its edit form,
 * creation, and deletion behind a confirmation step (refused, naming the agents, while in use).
 */
import type { SkillView } from "../../src/agents/SkillStore.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import {
  agentHref,
  alert,
  badge,
  emptyState,
  errorSummary,
  fieldProblems,
  NAME_RULES,
  pageHeader,
  postInPlace,
  problemList,
  skillHref,
  slotId,
  time
} from "../components.ts"
import { plainMessage } from "../forms/plainProblems.ts"
import { skillTabs } from "./skillVersions.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export interface SkillFormValues {
  readonly name: string
  readonly description: string
  readonly content: string
}

const usedBy = (agents: ReadonlyArray<string>): Html =>
  agents.length === 0
    ? html`<span class="muted">no agent</span>`
    : html`<ul class="inline-list">${agents.map((a) => html`<li><a href="${agentHref(a)}">${a}</a></li>`)}</ul>`

export const skillsPage = (ctx: PageContext, skills: ReadonlyArray<SkillView>, notice: string | null): Html =>
  layout(
    ctx,
    "Shared skills",
    html`
  ${pageHeader("Shared skills", {
    meta: html`<p class="muted">Skills agents list by name; an edit applies to every agent using it at its next job.</p>`,
    actions: ctx.viewer?.canManage === true ? html`<a class="button primary" href="/agent-skills/-/new">New shared skill</a>` : html``
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  ${
    skills.length === 0
      ? emptyState("No shared skills yet.", "A shared skill is a piece of instructions several agents can use.")
      : html`<table class="catalog">
      <thead><tr><th scope="col">Skill</th><th scope="col">Kind</th><th scope="col">Used by</th><th scope="col">Updated</th></tr></thead>
      <tbody hx-disable>${skills.map(
        (s) => html`<tr>
          <td data-label="Skill"><div><a class="agent-name" href="${skillHref(s.name)}">${s.name}</a><div class="description">${s.description}</div></div></td>
          <td data-label="Kind">${s.builtin ? badge("muted", "built-in") : badge("info", "custom")}</td>
          <td data-label="Used by">${usedBy(s.usedBy)}</td>
          <td data-label="Updated">${s.builtin ? html`<span class="muted">with the release</span>` : html`${time(s.updatedAt)} by ${s.updatedBy ?? ""}`}</td>
        </tr>`
      )}</tbody></table>`
  }`
  )

const SKILL_LABELS: Readonly<Record<string, string>> = { name: "Name", description: "Description", content: "Content", general: "Skill" }

const slotOf = (p: Problem): string => (p.path === "name" || p.path === "description" || p.path === "content" ? p.path : "general")

/** The create or edit form; `name` is editable only when creating. */
const skillForm = (ctx: PageContext, values: SkillFormValues, problems: ReadonlyArray<Problem>, creating: boolean): Html => {
  const at = (slot: string) => problems.filter((p) => slotOf(p) === slot)
  const action = creating ? "/agent-skills" : skillHref(values.name)
  return html`
  <form method="post" action="${action}"${creating ? html`` : postInPlace(action)} class="stack card" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    ${errorSummary(problems.map((p) => ({ label: SKILL_LABELS[slotOf(p)] ?? "Skill", message: plainMessage(p.message), target: slotOf(p) === "general" ? "skill-general" : slotId(slotOf(p)) })))}
    <div id="skill-general"></div>
    ${at("general").length === 0 ? html`` : alert("error", problemList(at("general")))}
    ${
      creating
        ? html`<div class="field"><label for="skill-name">Name</label>
            <p class="hint" id="hint-name">Lower-case letters, digits and dashes, starting with a letter. Agents list it by this name.</p>
            <input id="skill-name" name="name" value="${values.name}" required${NAME_RULES} autocomplete="off" spellcheck="false" aria-describedby="problems-name hint-name">
            ${fieldProblems("name", at("name"))}</div>`
        : html``
    }
    <div class="field"><label for="skill-description">Description</label>
      <div hx-disable><textarea id="skill-description" name="description" rows="2" aria-describedby="problems-description">${values.description}</textarea></div>
      ${fieldProblems("description", at("description"))}</div>
    <div class="field"><label for="skill-content">Content</label>
      <div hx-disable><textarea id="skill-content" name="content" rows="16" class="mono" spellcheck="false" aria-describedby="problems-content">${values.content}</textarea></div>
      ${fieldProblems("content", at("content"))}</div>
    ${
      creating
        ? html``
        : html`<div class="field"><label for="skill-change-note">Change note (optional)</label>
            <p class="hint" id="hint-change-note">What changed and why; stored with the new version. Saving without a change adds no version.</p>
            <input id="skill-change-note" name="changeNote" maxlength="2000" autocomplete="off" data-guard-ignore aria-describedby="hint-change-note"></div>`
    }
    <div><button type="submit" class="primary">${creating ? "Create shared skill" : "Save shared skill"}</button></div>
  </form>`
}

export const newSkillPage = (ctx: PageContext, values: SkillFormValues, problems: ReadonlyArray<Problem>): Html =>
  layout(
    ctx,
    "New shared skill",
    html`${pageHeader("New shared skill", { crumbs: [["/agent-skills", "Shared skills"]] })}${skillForm(ctx, values, problems, true)}`
  )

const deleteForm = (ctx: PageContext, skill: SkillView): Html => html`
  <details class="action-menu">
    <summary class="button danger">Delete</summary>
    <form class="popover stack" method="post" action="${skillHref(skill.name, "/delete")}" hx-post="${skillHref(skill.name, "/delete")}" hx-disabled-elt="find button">
      ${csrfField(ctx)}
      <p>Delete the shared skill <strong>${skill.name}</strong>? A skill that an agent still lists cannot be deleted.</p>
      <button type="submit" class="danger">Delete ${skill.name}</button>
    </form>
  </details>`

/** The resource files stored with an imported skill, where jobs read them (none: no card). */
const resourcesCard = (skill: SkillView): Html =>
  skill.resources.length === 0
    ? html``
    : html`<section class="card" id="skill-resources" aria-labelledby="skill-resources-title">
    <h2 id="skill-resources-title">Resource files</h2>
    <p class="muted">Jobs of agents that list this skill read them, read-only, under <code>/skills/${skill.name}/</code>.</p>
    <ul class="outputs" hx-disable>${skill.resources.map((r) => html`<li><code>/skills/${skill.name}/${r.path}</code> <span class="muted">${String(r.bytes)} bytes</span></li>`)}</ul>
  </section>`

/** Everything inside `<main>` of a shared skill's page (what a save swaps in). */
export const skillBody = (
  ctx: PageContext,
  skill: SkillView,
  values: SkillFormValues,
  problems: ReadonlyArray<Problem>,
  notice: string | null
): Html => {
  const editable = ctx.viewer?.canManage === true && !skill.builtin
  return html`
  ${pageHeader(skill.name, {
    crumbs: [["/agent-skills", "Shared skills"]],
    meta: html`<div class="badges">${skill.builtin ? badge("muted", "built-in, read-only") : html`${badge("info", "custom")} ${badge("muted", `v${String(skill.version ?? 1)}`)}`}</div>`,
    actions: editable ? deleteForm(ctx, skill) : html``
  })}
  ${skill.builtin ? html`` : skillTabs(skill.name, "skill")}
  ${notice === null ? html`` : alert("ok", notice)}
  <section class="card"><h2>Used by</h2>${usedBy(skill.usedBy)}</section>
  ${resourcesCard(skill)}
  ${
    editable
      ? skillForm(ctx, values, problems, false)
      : html`<section class="card" hx-disable><h2>Description</h2><p>${skill.description}</p><h2>Content</h2><pre class="code">${skill.content}</pre></section>`
  }`
}

export const skillPage = (
  ctx: PageContext,
  skill: SkillView,
  values: SkillFormValues,
  problems: ReadonlyArray<Problem>,
  notice: string | null
): Html => layout(ctx, skill.name, skillBody(ctx, skill, values, problems, notice))
