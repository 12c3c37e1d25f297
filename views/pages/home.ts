/**
 * The home page of a signed-in admin: a first-run checklist (what must exist before any job can run,
 * each step linking to where it is done) and the places of the portal.
 */
import { badge, pageHeader } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"

export interface Checklist {
  readonly providers: number
  readonly boundAgents: number
  readonly jobRoots: number
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
    detail: c.providers > 0 ? html`${c.providers} provider${c.providers === 1 ? "" : "s"} configured.` : html`No job can run until a model can be reached.`,
    href: "/providers/-/new",
    action: "Add a provider"
  },
  {
    done: c.boundAgents > 0,
    title: "Bind an agent to a model",
    detail: c.boundAgents > 0 ? html`${c.boundAgents} agent${c.boundAgents === 1 ? " is" : "s are"} bound.` : html`Open an agent, then its Model binding tab, and pick a provider's model.`,
    href: "/agents",
    action: "Choose an agent"
  },
  {
    done: c.jobRoots > 0,
    title: "Give jobs a root folder",
    detail:
      c.jobRoots > 0
        ? html`${c.jobRoots} job root${c.jobRoots === 1 ? "" : "s"} configured.`
        : html`Set <code>KINTSUGI_JOB_ROOTS</code> (folders separated by <code>:</code>) on the server and restart it: a job's workspace must lie inside one.`,
    href: null,
    action: ""
  },
  {
    done: c.projects > 0,
    title: "Optional: create a project",
    detail: c.projects > 0 ? html`${c.projects} project${c.projects === 1 ? "" : "s"}.` : html`Projects give their jobs their own bindings and root folder.`,
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
  <section class="card" aria-labelledby="sandbox-title">
    <h2 id="sandbox-title">Process sandbox</h2>
    <p>Jobs' <code>shell</code> and <code>git</code> run under: <strong data-sandbox>${checklist.sandbox.name}</strong>.
      ${checklist.sandbox.reason === undefined ? html`` : html`<span class="muted">Jobs granting them are refused: ${checklist.sandbox.reason}</span>`}
</p>
  </section>
  <section class="card">
    <h2>Places</h2>
    <ul class="inline-list">
      <li><a href="/agents">Agents</a></li><li><a href="/jobs">Jobs</a></li><li><a href="/projects">Projects</a></li>
      <li><a href="/providers">LLM providers</a></li><li><a href="/agent-skills">Shared skills</a></li>
    </ul>
  </section>`
  )
}
