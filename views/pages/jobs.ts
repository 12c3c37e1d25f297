/**
 * Jobs: the list (filters, cursor pages, rows refreshed by htmx) and what the job pages share — the
 * status badge and durations. One job's page is jobPage.ts, the run form runForm.ts.
 */
import type { JobRow, JobStatus } from "../../src/worker/JobStore.ts"
import { agentHref, badge, emptyState, jobHref, pageHeader, time, usd, type Tone } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"

const STATUS_TONE: Readonly<Record<JobStatus, Tone | "muted">> = { queued: "muted", running: "info", completed: "ok", failed: "error" }
export const isFinished = (s: JobStatus): boolean => s === "completed" || s === "failed"
export const JOB_STATUSES: ReadonlyArray<JobStatus> = ["queued", "running", "completed", "failed"]

export const statusBadge = (job: Pick<JobRow, "status" | "reason">): Html =>
  badge(STATUS_TONE[job.status], job.reason === null ? job.status : `${job.status}: ${job.reason}`)

/** A duration in words: 850 ms, 12.3 s, 4 min 05 s, 2 h 03 min. */
export const duration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`
}

/** How long the job ran (start to end, or to `now` while running); null before it started. */
export const runTime = (job: Pick<JobRow, "startedAt" | "finishedAt">, now: Date = new Date()): number | null =>
  job.startedAt === null ? null : (job.finishedAt ?? now).getTime() - job.startedAt.getTime()

export const ago = (ms: number | null): Html => (ms === null ? html`<span class="muted">—</span>` : html`${duration(ms)}`)

export interface JobsQuery {
  readonly status: string
  readonly agent: string
  readonly project: string
  readonly before: string
  /** Rows per page ('' = the default). */
  readonly limit: string
}

export interface JobsListProps {
  readonly jobs: ReadonlyArray<JobRow>
  readonly query: JobsQuery
  /** The cursor of the next (older) page; null on the last page. */
  readonly next: string | null
  /** The agent and project names to filter by. */
  readonly agents: ReadonlyArray<string>
  readonly projects: ReadonlyArray<string>
  readonly canRun: boolean
}

const jobsQueryString = (q: JobsQuery, overrides: Partial<JobsQuery> = {}): string => {
  const all = { ...q, ...overrides }
  const params = new URLSearchParams()
  for (const k of ["status", "agent", "project", "limit", "before"] as const) if (all[k] !== "") params.set(k, all[k])
  const s = params.toString()
  return s === "" ? "" : `?${s}`
}

/** The rows of the list; on the first page it refreshes itself every 5 s (the same filters). */
export const jobsRows = (p: JobsListProps): Html => {
  const live = p.query.before === ""
  return html`<tbody id="jobs-rows"${live ? html` hx-get="/jobs/rows${jobsQueryString(p.query)}" hx-trigger="every 5s" hx-swap="outerHTML"` : html``}>${
    p.jobs.length === 0
      ? html`<tr><td colspan="6" class="muted">No job matches these filters.</td></tr>`
      : p.jobs.map(
          (j) => html`<tr data-job="${j.id}">
          <td data-label="Job"><div hx-disable><a class="agent-name" href="${jobHref(j.id)}"><code>${j.id.slice(0, 8)}</code></a><div class="description">${j.task.slice(0, 120)}</div></div></td>
          <td data-label="Agent" hx-disable><a href="${agentHref(j.agentName)}">${j.agentName}</a>${j.projectId === "" ? html`` : html` <span class="muted">(${j.projectId})</span>`}</td>
          <td data-label="Status" hx-disable>${statusBadge(j)}${j.message === null ? html`` : html`<div class="description">${j.message.slice(0, 160)}</div>`}</td>
          <td data-label="Duration">${ago(runTime(j))}</td>
          <td data-label="Cost">${usd(j.costUsd)}</td>
          <td data-label="Started" hx-disable>${time(j.startedAt ?? j.createdAt)} by ${j.createdBy}${
            p.canRun ? html` <a class="rerun" href="${agentHref(j.agentName, `/run?from=${encodeURIComponent(j.id)}`)}">Re-run</a>` : html``
          }</td>
        </tr>`
        )
  }</tbody>`
}

const select = (name: string, label: string, current: string, options: ReadonlyArray<string>, any: string): Html => html`
  <div class="field"><label for="filter-${name}">${label}</label>
    <select id="filter-${name}" name="${name}">
      <option value="">${any}</option>
      ${options.map((o) => html`<option value="${o}"${o === current ? html` selected` : html``}>${o}</option>`)}
    </select></div>`

export const jobsPage = (ctx: PageContext, p: JobsListProps): Html =>
  layout(
    ctx,
    "Jobs",
    html`
  ${pageHeader("Jobs", { meta: html`<p class="muted">The newest first, refreshed every few seconds. Start one from an agent's page ("Run a job").</p>` })}
  <form method="get" action="/jobs" class="filters card" role="search" aria-label="Filter jobs">
    ${select("status", "Status", p.query.status, JOB_STATUSES, "Any status")}
    ${select("agent", "Agent", p.query.agent, p.agents, "Any agent")}
    ${select("project", "Project", p.query.project, p.projects, "Any project")}
    ${p.query.limit === "" ? html`` : html`<input type="hidden" name="limit" value="${p.query.limit}">`}
    <div class="field"><button type="submit">Filter</button> <a href="/jobs">Clear</a></div>
  </form>
  ${
    p.jobs.length === 0 && p.query.status === "" && p.query.agent === "" && p.query.project === "" && p.query.before === ""
      ? emptyState("No job has run yet.", html`Open an <a href="/agents">agent</a> and choose "Run a job".`)
      : html`<table class="catalog" id="jobs-table">
      <thead><tr><th scope="col">Job</th><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Cost</th><th scope="col">Started</th></tr></thead>
      ${jobsRows(p)}</table>
      <nav class="pager" aria-label="Pages">
        ${p.query.before === "" ? html`` : html`<a href="/jobs${jobsQueryString(p.query, { before: "" })}">Newest</a>`}
        ${p.next === null ? html`` : html`<a rel="next" href="/jobs${jobsQueryString(p.query, { before: p.next })}">Older jobs</a>`}
      </nav>`
  }`
  )
