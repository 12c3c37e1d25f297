/**
 * Projects: the list, creation (id, name, optional root inside the job roots), and a project's page
 * with its settings (a form for agents.manage: name, root, resource limits that lower the server's,
 * transcripts and their retention) and
 * the model bindings that apply to its jobs. A project's sections are one
 * sub-navigation (`PROJECT_SECTIONS`): a page of its own (memory, web, …) adds one line there.
 */
import type { Binding } from "../../src/providers/Bindings.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import type { JobResources } from "../../src/tools/jobResources.ts"
import type { Project } from "../../src/worker/Projects.ts"
import {
  agentHref,
  alert,
  emptyState,
  errorSummary,
  fieldProblems,
  pageHeader,
  postInPlace,
  PROJECT_ID_RULES,
  slotId,
  time
} from "../components.ts"
import { plainMessage } from "../forms/plainProblems.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export const projectHref = (id: string, rest = ""): string => `/projects/${encodeURIComponent(id)}${rest}`

/** The sections of a project's page, in order; `key` marks the current one. */
const PROJECT_SECTIONS: ReadonlyArray<{ readonly key: string; readonly label: string; readonly href: (id: string) => string }> = [
  { key: "overview", label: "Overview", href: (id) => projectHref(id) },
  { key: "memory", label: "Memory", href: (id) => `${projectHref(id)}/memory` },
  { key: "web", label: "Web", href: (id) => `${projectHref(id)}/web` }
]

/** Boosted: moving between sections swaps the page in place (the unsaved-changes guard asks first). */
const projectNav = (id: string, active: string): Html => html`
  <nav class="tabs" aria-label="Project" hx-boost="true"><ul>${PROJECT_SECTIONS.map(
    (s) => html`<li><a href="${s.href(id)}"${s.key === active ? html` aria-current="page"` : html``}>${s.label}</a></li>`
  )}</ul></nav>`

/** The header every project section shares: breadcrumb, name and id, the sub-navigation. */
export const projectHeader = (project: Pick<Project, "id" | "name">, active: string, notice: string | null = null): Html => html`
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
      ? emptyState(
          "No projects yet.",
          "Jobs can run without a project; a project lets you bind other models and confine its jobs to a folder."
        )
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

type ResourceKey = keyof JobResources

/** The job resources a project may lower, in the order the form and the facts list them. */
const RESOURCES: Readonly<Record<ResourceKey, { readonly label: string; readonly unit: string }>> = {
  memoryMb: { label: "Memory", unit: "MiB" },
  processes: { label: "Processes at once", unit: "" },
  cpuSec: { label: "CPU time per process", unit: "s" },
  tmpMb: { label: "Temporary space", unit: "MiB" },
  outDirMb: { label: "Output directory", unit: "MiB" }
}
const RESOURCE_KEYS: ReadonlyArray<ResourceKey> = ["memoryMb", "processes", "cpuSec", "tmpMb", "outDirMb"]
/** A resource's value with its unit: "512 MiB", "16". */
const amount = (key: ResourceKey, n: number): string => (RESOURCES[key].unit === "" ? String(n) : `${n} ${RESOURCES[key].unit}`)

export interface ProjectFormValues {
  readonly id: string
  readonly name: string
  readonly root: string
  /** The resource fields as typed (edit form only); "" = the server's setting. */
  readonly resources?: Readonly<Partial<Record<ResourceKey, string>>>
  /** `off` or `full` (edit form only). */
  readonly transcripts?: string
  /** Days as typed (edit form only); "" = 30. */
  readonly transcriptRetentionDays?: string
}

const LABELS: Readonly<Record<string, string>> = {
  id: "Id",
  name: "Name",
  root: "Root folder",
  ...Object.fromEntries(RESOURCE_KEYS.map((k) => [k, RESOURCES[k].label])),
  transcripts: "Transcripts",
  transcriptRetentionDays: "Keep transcripts for"
}
const HINTS: Readonly<Record<string, string>> = {
  id: "Lower-case letters, digits, dots, dashes and underscores (at most 64). Jobs name the project by it; it cannot change or be reused.",
  name: "What people call it.",
  root: "Optional: a folder inside the job roots. Every job of the project must then work inside it."
}
/**
 * A problem's field (`resources.memoryMb` is the field `memoryMb`); one the form has no field for (the
 * id, when editing) goes to the first field.
 */
const slotOf = (p: Problem, slots: ReadonlyArray<string>): string => {
  const path = p.path.startsWith("resources.") ? p.path.slice("resources.".length) : p.path
  return slots.includes(path) ? path : (slots[0] ?? "name")
}

/**
 * The fields of a project form (`slots`: id, name, root when creating; name, root when editing), with
 * the summary on top; with `server` (editing), the resource limits below them.
 */
const projectFields = (
  values: ProjectFormValues,
  problems: ReadonlyArray<Problem>,
  slots: ReadonlyArray<"id" | "name" | "root">,
  server?: JobResources
): Html => {
  const all: ReadonlyArray<string> = server === undefined ? slots : [...slots, ...RESOURCE_KEYS, "transcripts", "transcriptRetentionDays"]
  const at = (slot: string) => problems.filter((p) => slotOf(p, all) === slot)
  const input = (slot: "id" | "name" | "root") => html`
    <div class="field" data-slot="${slot}"><label for="f-${slot}">${LABELS[slot] ?? slot}</label>
      <p class="hint" id="hint-${slot}">${HINTS[slot] ?? ""}</p>
      <input id="f-${slot}" name="${slot}" value="${values[slot]}" autocomplete="off" spellcheck="false" aria-describedby="hint-${slot} ${slotId(slot)}"${slot === "root" ? html`` : html` required`}${slot === "id" ? PROJECT_ID_RULES : html``}${at(slot).length > 0 ? html` aria-invalid="true"` : html``}>
      ${fieldProblems(slot, at(slot))}</div>`
  const resource = (key: ResourceKey, server: JobResources) => html`
    <div class="field" data-slot="${key}"><label for="f-${key}">${RESOURCES[key].label}${RESOURCES[key].unit === "" ? "" : ` (${RESOURCES[key].unit})`}</label>
      <input id="f-${key}" name="${key}" type="number" min="1" step="1" inputmode="numeric" value="${values.resources?.[key] ?? ""}" placeholder="${String(server[key])}" autocomplete="off" aria-describedby="hint-resources ${slotId(key)}"${at(key).length > 0 ? html` aria-invalid="true"` : html``}>
      ${fieldProblems(key, at(key))}</div>`
  return html`
    ${errorSummary(problems.map((p) => ({ label: LABELS[slotOf(p, all)] ?? "Project", message: plainMessage(p.message), target: slotId(slotOf(p, all)) })))}
    ${slots.map(input)}
    ${
      server === undefined
        ? html``
        : html`<fieldset class="stack">
      <legend>Resource limits of each job</legend>
      <p class="hint" id="hint-resources">A project can only lower the server's limits, never raise them: each job gets the lowest of
        the server's setting (shown when a field is empty), the project's and its own. Empty = the server's setting.</p>
      ${RESOURCE_KEYS.map((k) => resource(k, server))}
    </fieldset>
    ${transcriptFields(values, at)}`
    }`
}

/** Transcripts of the project's jobs: off or full, and how many days a turn is kept. */
const transcriptFields = (values: ProjectFormValues, at: (slot: string) => ReadonlyArray<Problem>): Html => {
  const setting = values.transcripts ?? "off"
  const option = (value: string, label: string) =>
    html`<option value="${value}"${setting === value ? html` selected` : html``}>${label}</option>`
  return html`<fieldset class="stack">
      <legend>Transcripts</legend>
      <p class="hint" id="hint-transcripts">With <strong>full</strong>, every job of the project keeps what its model saw, turn by turn
        (messages, tool inputs and results, compaction), encrypted with the installation's key; people with <code>transcripts.read</code>
        see it on the job's page. Events never carry it. Applies to jobs that start from now on.</p>
      <div class="field" data-slot="transcripts"><label for="f-transcripts">${LABELS["transcripts"]}</label>
        <select id="f-transcripts" name="transcripts" aria-describedby="hint-transcripts ${slotId("transcripts")}"${at("transcripts").length > 0 ? html` aria-invalid="true"` : html``}>
          ${option("off", "off: keep nothing")}${option("full", "full: keep every turn")}
        </select>
        ${fieldProblems("transcripts", at("transcripts"))}</div>
      <div class="field" data-slot="transcriptRetentionDays"><label for="f-transcriptRetentionDays">${LABELS["transcriptRetentionDays"]} (days)</label>
        <input id="f-transcriptRetentionDays" name="transcriptRetentionDays" type="number" min="1" max="3650" step="1" inputmode="numeric" value="${values.transcriptRetentionDays ?? ""}" placeholder="30" autocomplete="off" aria-describedby="hint-transcripts ${slotId("transcriptRetentionDays")}"${at("transcriptRetentionDays").length > 0 ? html` aria-invalid="true"` : html``}>
        ${fieldProblems("transcriptRetentionDays", at("transcriptRetentionDays"))}</div>
    </fieldset>`
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
  /** The server's own job resources (KINTSUGI_JOB_*), which the project's can only lower. */
  readonly server: JobResources
  /** The bindings made for this project (each overrides the agent's installation default). */
  readonly bindings: ReadonlyArray<Binding>
  readonly notice: string | null
  /** The settings form as submitted, when a save was refused (else the stored settings). */
  readonly values?: ProjectFormValues
  readonly problems?: ReadonlyArray<Problem>
}

/** The form values of a stored project. */
const projectValues = (project: Project): ProjectFormValues => ({
  id: project.id,
  name: project.name,
  root: project.root ?? "",
  resources: Object.fromEntries(RESOURCE_KEYS.map((k) => [k, project.resources[k] === undefined ? "" : String(project.resources[k])])),
  transcripts: project.transcripts,
  transcriptRetentionDays: String(project.transcriptRetentionDays)
})

/** One resource as a job of the project gets it: the project's value when it lowers the server's, else the server's. */
const resourceFact = (key: ResourceKey, project: Project, server: JobResources): Html => {
  const own = project.resources[key]
  if (own === undefined) return html`<span class="muted">the server's: ${amount(key, server[key])}</span>`
  return own < server[key]
    ? html`${amount(key, own)}`
    : html`${amount(key, own)} <span class="muted">(the server's ${amount(key, server[key])} applies)</span>`
}

const settingsFacts = (project: Project, server: JobResources): Html => html`
  <section class="card" hx-disable>
    <h2>Settings</h2>
    <dl class="facts">
      <dt>Id</dt><dd><code>${project.id}</code></dd>
      <dt>Name</dt><dd>${project.name}</dd>
      <dt>Root folder</dt><dd>${project.root === null ? html`<span class="muted">none: the job roots</span>` : html`<code>${project.root}</code>`}</dd>
      <dt>Created</dt><dd>${time(project.createdAt)}</dd>
      ${RESOURCE_KEYS.map((k) => html`<dt>${RESOURCES[k].label}</dt><dd>${resourceFact(k, project, server)}</dd>`)}
      <dt>Transcripts</dt><dd>${project.transcripts === "full" ? `full, kept ${project.transcriptRetentionDays} days` : "off"}</dd>
    </dl>
    <p class="muted">A project can only lower the server's resource limits, never raise them.</p>
  </section>`

/** The settings as a form (agents.manage): name, root and resources, the same checks as `PUT /api/projects/<id>`. */
const settingsForm = (
  ctx: PageContext,
  project: Project,
  values: ProjectFormValues,
  problems: ReadonlyArray<Problem>,
  server: JobResources
): Html => {
  const action = projectHref(project.id)
  return html`
  <form method="post" action="${action}"${postInPlace(action)} class="stack card" novalidate data-unsaved-guard aria-labelledby="settings-title">
    <h2 id="settings-title">Settings</h2>
    ${csrfField(ctx)}
    <p class="muted" hx-disable>Id <code>${project.id}</code> (it cannot change), created ${time(project.createdAt)}.
      A changed root or limit applies to every job that starts from now on: a queued job whose workspace lies outside the root is refused when it starts.</p>
    ${projectFields(values, problems, ["name", "root"], server)}
    <div><button type="submit" class="primary">Save settings</button></div>
  </form>`
}

/** Everything inside `<main>` of a project's page (what a settings save swaps in). */
export const projectBody = (ctx: PageContext, props: ProjectPageProps): Html => {
  const { project } = props
  return html`
  ${projectHeader(project, "overview", props.notice)}
  ${ctx.viewer?.canManage === true ? settingsForm(ctx, project, props.values ?? projectValues(project), props.problems ?? [], props.server) : settingsFacts(project, props.server)}
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
