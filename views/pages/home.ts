/**
 * The home page of a signed-in admin: a first-run checklist (what must exist before any job can run,
 * each step linking to where it is done) and the places of the portal.
 */
import { badge, pageHeader } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"
import { jobRootList } from "./workspaces.ts"

export interface Checklist {
  readonly providers: number
  readonly boundAgents: number
  /** The job roots as the server resolved them (KINTSUGI_JOB_ROOTS, canonical). */
  readonly jobRoots: ReadonlyArray<string>
  /** Workspace folders found in them. */
  readonly workspaces: number
  readonly projects: number
  /** The process sandbox in force for shell and git (`sandboxName`), and why none is when unavailable. */
  readonly sandbox: { readonly name: string; readonly reason?: string }
}

interface Step {
  readonly done: boolean
  readonly title: string
  readonly detail: Html
  readonly href: string | null
  readonly action: string
}

const steps = (c: Checklist): ReadonlyArray<Step> => [
  {
    done: c.providers > 0,
    title: "Add an LLM provider",
    detail:
      c.providers > 0
        ? html`${c.providers} provider${c.providers === 1 ? "" : "s"} configured.`
        : html`No job can run until a model can be reached.`,
    href: "/providers/-/new",
    action: "Add a provider"
  },
  {
    done: c.boundAgents > 0,
    title: "Bind an agent to a model",
    detail:
      c.boundAgents > 0
        ? html`${c.boundAgents} agent${c.boundAgents === 1 ? " is" : "s are"} bound.`
        : html`Open an agent, then its Model binding tab, and pick a provider's model.`,
    href: "/agents",
    action: "Choose an agent"
  },
  {
    done: c.workspaces > 0,
    title: "Add a workspace",
    detail:
      c.workspaces > 0
        ? html`${c.workspaces} workspace${c.workspaces === 1 ? "" : "s"} in the job roots.`
        : html`A folder in a job root with the sources a job reads and a folder it writes: from a git URL or an uploaded archive.`,
    href: "/workspaces/-/new",
    action: "New workspace"
  },
  {
    done: c.projects > 0,
    title: "Optional: create a project",
    detail:
      c.projects > 0
        ? html`${c.projects} project${c.projects === 1 ? "" : "s"}.`
        : html`Projects give their jobs their own bindings and root folder.`,
    href: "/projects/-/new",
    action: "Create a project"
  }
]

export const homePage = (ctx: PageContext, checklist: Checklist): Html => {
  const list = steps(checklist)
  const required = list.slice(0, 3)
  const ready = required.every((s) => s.done)
  return layout(
    ctx,
    "Home",
    html`
  ${pageHeader("Home", { meta: html`<p class="muted">${ready ? "Jobs can run here." : "A few steps before the first job can run."}</p>` })}
  <section class="card" aria-labelledby="checklist-title">
    <h2 id="checklist-title">Getting started</h2>
    <ol class="checklist">${list.map(
      (s) => html`<li class="${s.done ? "step-done" : "step-todo"}">
        ${badge(s.done ? "ok" : "warn", s.done ? "done" : "to do")}
        <div><strong>${s.title}</strong><p class="muted">${s.detail}</p>
          ${s.href === null || (s.done && s.href !== "/agents") ? html`` : html`<a href="${s.href}">${s.action}</a>`}</div>
      </li>`
    )}</ol>
  </section>
  <section class="card" aria-labelledby="roots-title">
    <h2 id="roots-title">Job roots</h2>
    <p>Every job works inside one of these folders (<code>KINTSUGI_JOB_ROOTS</code>, set when the server starts):</p>
    ${jobRootList(checklist.jobRoots)}
    <p><a href="/workspaces">Workspaces</a>${ctx.viewer?.canManage === true ? html` · <a href="/workspaces/-/new">New workspace</a>` : html``}</p>
  </section>
  <section class="card" aria-labelledby="sandbox-title">
    <h2 id="sandbox-title">Process sandbox</h2>
    <p>Jobs' <code>shell</code> and <code>git</code> run under: <strong data-sandbox>${checklist.sandbox.name}</strong>.
      ${checklist.sandbox.reason === undefined ? html`` : html`<span class="muted">Jobs granting them are refused: ${checklist.sandbox.reason}</span>`}
</p>
  </section>
  <section class="card">
    <h2>Places</h2>
    <ul class="inline-list">
      <li><a href="/agents">Agents</a></li><li><a href="/jobs">Jobs</a></li><li><a href="/workspaces">Workspaces</a></li><li><a href="/projects">Projects</a></li>
      <li><a href="/providers">LLM providers</a></li><li><a href="/agent-skills">Shared skills</a></li>
    </ul>
  </section>`
  )
}
