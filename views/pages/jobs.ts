/**
 * Jobs: the list (newest first), the run form of an agent, and one job's live page — the stored
 * events rendered here, then followed by views/static/portal.js over EventSource (rows appended as
 * text), with usage, cost, the terminal state and the failure reason.
 */
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import type { JobRow, JobStatus } from "../../src/worker/JobStore.ts"
import { agentHref, alert, badge, emptyState, fieldProblems, jobHref, pageHeader, problemList, time, usd, type Tone } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export const STATUS_TONE: Readonly<Record<JobStatus, Tone | "muted">> = { queued: "muted", running: "info", completed: "ok", failed: "error" }
export const isFinished = (s: JobStatus): boolean => s === "completed" || s === "failed"

const statusBadge = (job: Pick<JobRow, "status" | "reason">): Html => badge(STATUS_TONE[job.status], job.reason === null ? job.status : `${job.status}: ${job.reason}`)

export const jobsPage = (ctx: PageContext, jobs: ReadonlyArray<JobRow>): Html =>
  layout(
    ctx,
    "Jobs",
    html`
  ${pageHeader("Jobs", { meta: html`<p class="muted">The newest first. Start one from an agent's page ("Run a job").</p>` })}
  ${
    jobs.length === 0
      ? emptyState("No job has run yet.", html`Open an <a href="/agents">agent</a> and choose "Run a job".`)
      : html`<table class="catalog">
      <thead><tr><th scope="col">Job</th><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Cost</th><th scope="col">Started</th></tr></thead>
      <tbody hx-disable>${jobs.map(
        (j) => html`<tr>
          <td data-label="Job"><div><a class="agent-name" href="${jobHref(j.id)}"><code>${j.id.slice(0, 8)}</code></a><div class="description">${j.task.slice(0, 120)}</div></div></td>
          <td data-label="Agent"><a href="${agentHref(j.agentName)}">${j.agentName}</a>${j.projectId === "" ? html`` : html` <span class="muted">(${j.projectId})</span>`}</td>
          <td data-label="Status">${statusBadge(j)}${j.message === null ? html`` : html`<div class="description">${j.message.slice(0, 160)}</div>`}</td>
          <td data-label="Cost">${usd(j.costUsd)}</td>
          <td data-label="Started">${time(j.startedAt ?? j.createdAt)} by ${j.createdBy}</td>
        </tr>`
      )}</tbody></table>`
  }`
  )

/** One event as a row of the live view: the same mapping portal.js applies to live events. */
export interface EventRow {
  readonly kind: string
  readonly label: string
  readonly text: string
}

const clip = (s: string, n = 400): string => (s.length > n ? `${s.slice(0, n)}…` : s)

export const eventRow = (e: JobEvent): EventRow | null => {
  switch (e.type) {
    case "job.started":
      return { kind: "started", label: "started", text: `${e.agentId} v${String(e.agentVersion)}` }
    case "message.delta":
      return { kind: "message", label: "message", text: e.text }
    case "tool.call":
      return { kind: e.allowed ? "call" : "blocked", label: e.allowed ? "tool call" : "blocked", text: clip(`${e.tool} ${JSON.stringify(e.input)}${e.reason === undefined ? "" : ` (${e.reason})`}`) }
    case "tool.result":
      return { kind: e.success ? "result" : "result-failed", label: e.success ? "result" : "tool failed", text: clip(`${e.tool} (${e.durationMs} ms): ${e.summary}`) }
    case "output":
      return { kind: "output", label: "output", text: e.path }
    case "source.read":
      return { kind: "read", label: "read", text: `${e.path}:${e.firstLine}${e.lastLine === null ? "" : `-${e.lastLine}`}` }
    case "job.completed":
      return { kind: "completed", label: "completed", text: e.summary }
    case "job.failed":
      return { kind: "failed", label: `failed: ${e.reason}`, text: e.message }
    case "usage":
    case "span":
      return null
  }
}

/** Consecutive message deltas joined into one message row. */
export const eventRows = (events: ReadonlyArray<JobEvent>): Array<EventRow> =>
  events.reduce<Array<EventRow>>((rows, e) => {
    const row = eventRow(e)
    if (row === null) return rows
    const last = rows[rows.length - 1]
    if (row.kind === "message" && last?.kind === "message") return [...rows.slice(0, -1), { ...last, text: last.text + row.text }]
    return [...rows, row]
  }, [])

const num = (u: Record<string, unknown> | null, k: string): string => {
  const v = u?.[k]
  return typeof v === "number" ? String(v) : "—"
}

export const jobPage = (ctx: PageContext, job: JobRow, events: ReadonlyArray<JobEvent>, canAbort: boolean): Html => {
  const last = events.length === 0 ? -1 : (events[events.length - 1]?.seq ?? -1)
  const finished = isFinished(job.status)
  return layout(
    ctx,
    `Job ${job.id.slice(0, 8)}`,
    html`
  ${pageHeader(html`Job <code>${job.id.slice(0, 8)}</code>`, {
    crumbs: [["/jobs", "Jobs"]],
    meta: html`<div class="badges"><span id="job-status" role="status" aria-live="polite">${statusBadge(job)}</span></div>`,
    actions:
      canAbort && !finished
        ? html`<form id="abort-form" method="post" action="${jobHref(job.id, "/abort")}" class="inline">${csrfField(ctx)}<button type="submit" class="danger">Abort</button></form>`
        : html``
  })}
  <div id="job-failure">${job.status === "failed" ? alert("error", job.message ?? "", `Failed (${job.reason ?? "error"}):`) : html``}</div>
  <section class="card" hx-disable>
    <dl class="facts">
      <dt>Agent</dt><dd><a href="${agentHref(job.agentName)}">${job.agentName}</a>${job.agentVersion === null ? html`` : html` v${job.agentVersion}`}</dd>
      <dt>Model</dt><dd id="job-model">${job.model ?? html`<span class="muted">resolved when it starts</span>`}</dd>
      <dt>Task</dt><dd><pre class="code">${job.task}</pre></dd>
      <dt>Sources</dt><dd>${job.workspace.readOnly.join(", ")}</dd>
      <dt>Output folder</dt><dd><code>${job.workspace.outDir}</code>${job.outputs === null ? html`` : html` <span class="muted">(${job.outputs})</span>`}</dd>
      <dt>Started</dt><dd>${time(job.startedAt)} by ${job.createdBy}</dd>
    </dl>
  </section>
  <section class="card usage" aria-label="Usage">
    <dl class="facts">
      <dt>Cost</dt><dd id="job-cost">${usd(job.costUsd)}</dd>
      <dt>Tokens in / out</dt><dd id="job-tokens">${num(job.usage, "inputTokens")} / ${num(job.usage, "outputTokens")}</dd>
      <dt>Turns</dt><dd id="job-turns">${num(job.usage, "turns")}</dd>
    </dl>
  </section>
  <section class="card">
    <h2>Events</h2>
    <ol id="job-events" class="job-events" hx-disable data-events-url="/api/jobs/${job.id}/events" data-after="${last}" data-live="${finished ? "false" : "true"}">
      ${eventRows(events).map((r) => html`<li class="ev ev-${r.kind}"><span class="ev-label">${r.label}</span> <span class="ev-text">${r.text}</span></li>`)}
    </ol>
    ${finished ? html`` : html`<p class="muted" id="job-waiting">Following live…</p>`}
  </section>`
  )
}

export interface RunValues {
  readonly task: string
  readonly root: string
  readonly readOnly: string
  readonly outDir: string
  readonly timeoutSec: string
  readonly maxCostUsd: string
  readonly project: string
  /** New for every blank form: a double submit of one form starts one job (Idempotency-Key). */
  readonly idempotencyKey: string
}

export const blankRun = (): RunValues => ({ task: "", root: "", readOnly: "", outDir: "", timeoutSec: "600", maxCostUsd: "", project: "", idempotencyKey: crypto.randomUUID() })

/** Problems of JobInput by field: task, project, workspace.* and limits.*. */
export const runSlot = (p: Problem): string => {
  const path = p.path.replace(/\[(\d+)\]/g, ".$1")
  if (path.startsWith("workspace.readOnly")) return "readOnly"
  if (path.startsWith("workspace.root")) return "root"
  if (path.startsWith("workspace.outDir")) return "outDir"
  if (path.startsWith("limits.maxCostUsd")) return "maxCostUsd"
  if (path.startsWith("limits")) return "timeoutSec"
  return ["task", "project"].includes(path) ? path : "general"
}

export const runPage = (ctx: PageContext, agent: string, v: RunValues, problems: ReadonlyArray<Problem>): Html => {
  const at = (slot: string) => problems.filter((p) => runSlot(p) === slot)
  const field = (slot: keyof RunValues, label: string, hint: string, control: Html) => html`
    <div class="field"><label for="f-${slot}">${label}</label>
      ${hint === "" ? html`` : html`<p class="hint" id="hint-${slot}">${hint}</p>`}
      ${control}
      ${fieldProblems(slot, at(slot))}</div>`
  const input = (slot: keyof RunValues, type = "text", mode = "text") =>
    html`<input id="f-${slot}" name="${slot}" type="${type}" inputmode="${mode}" value="${v[slot]}" autocomplete="off" spellcheck="false" aria-describedby="problems-${slot}">`
  return layout(
    ctx,
    `Run ${agent}`,
    html`
  ${pageHeader(html`Run <code>${agent}</code>`, { crumbs: [["/agents", "Agents"], [agentHref(agent), agent]] })}
  <form method="post" action="${agentHref(agent, "/run")}" hx-post="${agentHref(agent, "/run")}" hx-target="body" hx-disabled-elt="find button[type=submit]" class="stack card" novalidate>
    ${csrfField(ctx)}
    <input type="hidden" name="idempotencyKey" value="${v.idempotencyKey}">
    ${at("general").length === 0 ? html`` : alert("error", problemList(at("general")))}
    ${field("task", "Task", "What the agent should do.", html`<div hx-disable><textarea id="f-task" name="task" rows="4" aria-describedby="problems-task">${v.task}</textarea></div>`)}
    ${field("root", "Workspace root", "An absolute directory on the server; the others lie inside it.", input("root"))}
    ${field("readOnly", "Read-only source folders", "One absolute path per line.", html`<div hx-disable><textarea id="f-readOnly" name="readOnly" rows="3" spellcheck="false" aria-describedby="hint-readOnly problems-readOnly">${v.readOnly}</textarea></div>`)}
    ${field("outDir", "Output folder", "Where the agent may write.", input("outDir"))}
    <div class="grid-2">
      ${field("timeoutSec", "Time limit (seconds)", "", input("timeoutSec", "text", "numeric"))}
      ${field("maxCostUsd", "Cost limit (USD, optional)", "", input("maxCostUsd", "text", "decimal"))}
    </div>
    ${field("project", "Project (optional)", "Uses the project's model binding when it has one.", input("project"))}
    <div class="save-bar"><button type="submit" class="primary">Start job</button></div>
  </form>`
  )
}
