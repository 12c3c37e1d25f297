/**
 * Projects: the list, creation (id, name, optional root inside the job roots), and a project's page
 * with its settings (a form for agents.manage) and the model bindings that apply to its jobs. A project's sections are one
 * sub-navigation (`PROJECT_SECTIONS`): a page of its own (memory, web, …) adds one line there.
 */
import type { Binding } from "../../src/providers/Bindings.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import type { Project } from "../../src/worker/Projects.ts"
import { agentHref, alert, emptyState, errorSummary, fieldProblems, pageHeader, postInPlace, slotId, time } from "../components.ts"
import { plainMessage } from "../forms/plainProblems.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export const projectHref = (id: string, rest = ""): string => `/projects/${encodeURIComponent(id)}${rest}`

/** The sections of a project's page, in order; `key` marks the current one. */
export const PROJECT_SECTIONS: ReadonlyArray<{ readonly key: string; readonly label: string; readonly href: (id: string) => string }> = [
  { key: "overview", label: "Overview", href: (id) => projectHref(id) },
  { key: "memory", label: "Memory", href: (id) => `${projectHref(id)}/memory` },
  { key: "web", label: "Web", href: (id) => `${projectHref(id)}/web` }
]

/** Boosted: moving between sections swaps the page in place (the unsaved-changes guard asks first). */
export const projectNav = (id: string, active: string): Html => html`
  <nav class="tabs" aria-label="Project" hx-boost="true"><ul>${PROJECT_SECTIONS.map(
    (s) => html`<li><a href="${s.href(id)}"${s.key === active ? html` aria-current="page"` : html``}>${s.label}</a></li>`
  )}</ul></nav>`

/** The header every project section shares: breadcrumb, name and id, the sub-navigation. */
export const projectHeader = (project: Project, active: string, notice: string | null = null): Html => html`
  ${pageHeader(project.name, { crumbs: [["/projects", "Projects"]], meta: html`<p class="muted" hx-disable>Project <code>${project.id}</code></p>` })}
  ${projectNav(project.id, active)}
  ${notice === null ? html`` : alert("ok", notice)}`

export const projectsPage = (ctx: PageContext, projects: ReadonlyArray<Project>, notice: string | null): Html =>
  layout(
    ctx,
    "Projects",
    html`
  ${pageHeader("Projects", {
    meta: html`<p class="muted">A project groups jobs: its own model bindings, and optionally a root folder its jobs must stay inside.</p>`,
    actions: ctx.viewer?.canManage === true ? html`<a class="button primary" href="/projects/-/new">New project</a>` : html``
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  ${
    projects.length === 0
      ? emptyState("No projects yet.", "Jobs can run without a project; a project lets you bind other models and confine its jobs to a folder.")
      : html`<table class="catalog">
      <thead><tr><th scope="col">Project</th><th scope="col">Id</th><th scope="col">Root</th><th scope="col">Created</th></tr></thead>
      <tbody hx-disable>${projects.map(
        (p) => html`<tr>
          <td data-label="Project"><a class="agent-name" href="${projectHref(p.id)}">${p.name}</a></td>
          <td data-label="Id"><code>${p.id}</code></td>
          <td data-label="Root">${p.root === null ? html`<span class="muted">the job roots</span>` : html`<code>${p.root}</code>`}</td>
          <td data-label="Created">${time(p.createdAt)}</td>
        </tr>`
      )}</tbody></table>`
  }`
  )

export interface ProjectFormValues {
  readonly id: string
  readonly name: string
  readonly root: string
}

const LABELS: Readonly<Record<string, string>> = { id: "Id", name: "Name", root: "Root folder" }
const HINTS: Readonly<Record<string, string>> = {
  id: "Lower-case letters, digits, dots, dashes and underscores (at most 64). Jobs name the project by it; it cannot change or be reused.",
  name: "What people call it.",
  root: "Optional: a folder inside the job roots. Every job of the project must then work inside it."
}
/** A problem's field; one the form has no field for (the id, when editing) goes to the first field. */
const slotOf = (p: Problem, slots: ReadonlyArray<string>): string => (slots.includes(p.path) ? p.path : slots[0] ?? "name")

/** The fields of a project form (`slots`: id, name, root when creating; name, root when editing), with the summary on top. */
const projectFields = (values: ProjectFormValues, problems: ReadonlyArray<Problem>, slots: ReadonlyArray<keyof ProjectFormValues>): Html => {
  const at = (slot: string) => problems.filter((p) => slotOf(p, slots) === slot)
  const input = (slot: keyof ProjectFormValues) => html`
    <div class="field" data-slot="${slot}"><label for="f-${slot}">${LABELS[slot] ?? slot}</label>
      <p class="hint" id="hint-${slot}">${HINTS[slot] ?? ""}</p>
      <input id="f-${slot}" name="${slot}" value="${values[slot]}" autocomplete="off" spellcheck="false" aria-describedby="hint-${slot} ${slotId(slot)}"${slot === "root" ? html`` : html` required`}${at(slot).length > 0 ? html` aria-invalid="true"` : html``}>
      ${fieldProblems(slot, at(slot))}</div>`
  return html`
    ${errorSummary(problems.map((p) => ({ label: LABELS[slotOf(p, slots)] ?? "Project", message: plainMessage(p.message), target: slotId(slotOf(p, slots)) })))}
    ${slots.map(input)}`
}

export const newProjectPage = (ctx: PageContext, values: ProjectFormValues, problems: ReadonlyArray<Problem>): Html =>
  layout(
    ctx,
    "New project",
    html`
  ${pageHeader("New project", { crumbs: [["/projects", "Projects"]] })}
  <form method="post" action="/projects" class="stack card" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    ${projectFields(values, problems, ["id", "name", "root"])}
    <div><button type="submit" class="primary">Create project</button></div>
  </form>`
  )

export interface ProjectPageProps {
  readonly project: Project
  /** The bindings made for this project (each overrides the agent's installation default). */
  readonly bindings: ReadonlyArray<Binding>
  readonly notice: string | null
  /** The settings form as submitted, when a save was refused (else the stored settings). */
  readonly values?: ProjectFormValues
  readonly problems?: ReadonlyArray<Problem>
}

/** The form values of a stored project. */
export const projectValues = (project: Project): ProjectFormValues => ({ id: project.id, name: project.name, root: project.root ?? "" })

const settingsFacts = (project: Project): Html => html`
  <section class="card" hx-disable>
    <h2>Settings</h2>
    <dl class="facts">
      <dt>Id</dt><dd><code>${project.id}</code></dd>
      <dt>Name</dt><dd>${project.name}</dd>
      <dt>Root folder</dt><dd>${project.root === null ? html`<span class="muted">none: the job roots</span>` : html`<code>${project.root}</code>`}</dd>
      <dt>Created</dt><dd>${time(project.createdAt)}</dd>
    </dl>
  </section>`

/** The settings as a form (agents.manage): name and root, the same checks as `PUT /api/projects/<id>`. */
const settingsForm = (ctx: PageContext, project: Project, values: ProjectFormValues, problems: ReadonlyArray<Problem>): Html => {
  const action = projectHref(project.id)
  return html`
  <form method="post" action="${action}"${postInPlace(action)} class="stack card" novalidate data-unsaved-guard aria-labelledby="settings-title">
    <h2 id="settings-title">Settings</h2>
    ${csrfField(ctx)}
    <p class="muted" hx-disable>Id <code>${project.id}</code> (it cannot change), created ${time(project.createdAt)}.
      A changed root applies to every job that starts from now on: a queued job whose workspace lies outside it is refused when it starts.</p>
    ${projectFields(values, problems, ["name", "root"])}
    <div><button type="submit" class="primary">Save settings</button></div>
  </form>`
}

/** Everything inside `<main>` of a project's page (what a settings save swaps in). */
export const projectBody = (ctx: PageContext, props: ProjectPageProps): Html => {
  const { project } = props
  return html`
  ${projectHeader(project, "overview", props.notice)}
  ${ctx.viewer?.canManage === true ? settingsForm(ctx, project, props.values ?? projectValues(project), props.problems ?? []) : settingsFacts(project)}
  <section class="card">
    <h2>Model bindings</h2>
    <p class="muted">A job of this project runs an agent on the project's binding when there is one, else on the agent's installation default.
      Bind an agent from its Model binding tab, choosing this project.</p>
    ${
      props.bindings.length === 0
        ? emptyState("No binding for this project.", "Its jobs use each agent's installation default.")
        : html`<table class="catalog">
      <thead><tr><th scope="col">Agent</th><th scope="col">Model</th><th scope="col">Thinking</th></tr></thead>
      <tbody hx-disable>${props.bindings.map(
        (b) => html`<tr>
          <td data-label="Agent"><a href="${agentHref(b.agentName, "/binding")}">${b.agentName}</a></td>
          <td data-label="Model"><code>${b.providerId} / ${b.modelId}</code></td>
          <td data-label="Thinking">${b.thinking ?? html`<span class="muted">the agent's</span>`}</td>
        </tr>`
      )}</tbody></table>`
    }
  </section>`
}

export const projectPage = (ctx: PageContext, props: ProjectPageProps): Html => layout(ctx, props.project.name, projectBody(ctx, props))
