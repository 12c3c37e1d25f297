/**
 * Jobs: the list (filters, cursor pages, refreshed by htmx), the run form of an agent (with the model
 * and thinking level the job will get), and one job's page like a CI run or a trace view — facts (who
 * started and aborted it, when, how long it waited and ran), cost and tokens, output files, the
 * timeline of events (timestamps, tool calls and results expandable) and the nested spans. The live
 * page follows the server's rendered rows over SSE (htmx SSE extension): every row and section is
 * rendered here only.
 */
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import type { JobRow, JobStatus } from "../../src/worker/JobStore.ts"
import { agentHref, alert, badge, emptyState, fieldProblems, jobHref, pageHeader, problemList, time, usd, type Tone } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export const STATUS_TONE: Readonly<Record<JobStatus, Tone | "muted">> = { queued: "muted", running: "info", completed: "ok", failed: "error" }
export const isFinished = (s: JobStatus): boolean => s === "completed" || s === "failed"
export const JOB_STATUSES: ReadonlyArray<JobStatus> = ["queued", "running", "completed", "failed"]

const statusBadge = (job: Pick<JobRow, "status" | "reason">): Html => badge(STATUS_TONE[job.status], job.reason === null ? job.status : `${job.status}: ${job.reason}`)

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

const ago = (ms: number | null): Html => (ms === null ? html`<span class="muted">—</span>` : html`${duration(ms)}`)

// ---------------------------------------------------------------- the list

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

export const jobsQueryString = (q: JobsQuery, overrides: Partial<JobsQuery> = {}): string => {
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

// ---------------------------------------------------------------- the timeline

/** One row of the timeline. `detail`: the full text behind an expandable row. */
export interface TimelineRow {
  /** The seq of the (first) event. */
  readonly seq: number
  readonly at: string
  readonly kind: string
  readonly label: string
  readonly text: string
  readonly detail?: string
}

const clip = (s: string, n = 200): string => (s.length > n ? `${s.slice(0, n)}…` : s)
const pretty = (v: unknown): string => {
  try {
    return JSON.stringify(v, null, 2) ?? String(v)
  } catch {
    return String(v)
  }
}

export const eventRow = (e: JobEvent): TimelineRow | null => {
  const base = { seq: e.seq, at: e.at }
  switch (e.type) {
    case "job.started":
      return { ...base, kind: "started", label: "started", text: `${e.agentId} v${String(e.agentVersion)}` }
    case "message.delta":
      return { ...base, kind: "message", label: "message", text: e.text }
    case "tool.call": {
      const line = `${e.tool} ${JSON.stringify(e.input)}${e.reason === undefined ? "" : ` (${e.reason})`}`
      return { ...base, kind: e.allowed ? "call" : "blocked", label: e.allowed ? "tool call" : "blocked", text: clip(line), detail: `${e.tool}\n${pretty(e.input)}${e.reason === undefined ? "" : `\n\n${e.reason}`}` }
    }
    case "tool.result": {
      const line = `${e.tool} (${duration(e.durationMs)}): ${e.summary}`
      return { ...base, kind: e.success ? "result" : "result-failed", label: e.success ? "result" : "tool failed", text: clip(line), detail: e.summary }
    }
    case "output":
      return { ...base, kind: "output", label: "output", text: e.path }
    case "source.read":
      return { ...base, kind: "read", label: "read", text: `${e.path}:${e.firstLine}${e.lastLine === null ? "" : `-${e.lastLine}`}` }
    case "job.completed":
      return { ...base, kind: "completed", label: "completed", text: e.summary }
    case "job.failed":
      return { ...base, kind: "failed", label: `failed: ${e.reason}`, text: e.message }
    case "usage":
    case "span":
      return null
  }
}

/** The timeline: consecutive message deltas joined into one message row. */
export const eventRows = (events: ReadonlyArray<JobEvent>): Array<TimelineRow> =>
  events.reduce<Array<TimelineRow>>((rows, e) => {
    const row = eventRow(e)
    if (row === null) return rows
    const last = rows[rows.length - 1]
    if (row.kind === "message" && last?.kind === "message") return [...rows.slice(0, -1), { ...last, text: last.text + row.text }]
    return [...rows, row]
  }, [])

/** The seq of the message row a next delta joins (the last row is a message), else null. */
export const openMessage = (events: ReadonlyArray<JobEvent>): number | null => {
  const rows = eventRows(events)
  const last = rows[rows.length - 1]
  return last?.kind === "message" ? last.seq : null
}

const clock = (at: string): string => (at.length >= 23 ? at.slice(11, 23) : at)
const offsetOf = (at: string, start: Date | null): string => {
  const t = Date.parse(at)
  if (start === null || Number.isNaN(t)) return ""
  const ms = t - start.getTime()
  return ms < 0 ? "" : `+${duration(ms)}`
}

/** One timeline row; a message row's text has an id so that live deltas append to it. */
export const timelineRow = (r: TimelineRow, start: Date | null): Html => html`
  <li class="ev ev-${r.kind}" id="ev-${r.seq}" hx-disable>
    <span class="ev-when"><time datetime="${r.at}">${clock(r.at)}</time> <span class="muted">${offsetOf(r.at, start)}</span></span>
    <span class="ev-label">${r.label}</span>
    ${
      r.detail === undefined || (r.detail === r.text && r.text.length < 200)
        ? html`<span class="ev-text" id="ev-${r.seq}-text">${r.text}</span>`
        : html`<details class="ev-text"><summary>${r.text}</summary><pre class="code">${r.detail}</pre></details>`
    }
  </li>`

/** A live message delta: appended to the open message row (htmx out-of-band swap). */
export const messageDelta = (rowSeq: number, text: string): Html => html`<span hx-swap-oob="beforeend:#ev-${rowSeq}-text">${text}</span>`

// ---------------------------------------------------------------- the trace (nested spans)

type SpanEvent = Extract<JobEvent, { type: "span" }>

interface SpanNode {
  readonly span: SpanEvent
  readonly children: Array<SpanNode>
}

export const spanTree = (events: ReadonlyArray<JobEvent>): Array<SpanNode> => {
  const spans = events.filter((e): e is SpanEvent => e.type === "span").sort((a, b) => Date.parse(a.start) - Date.parse(b.start))
  const nodes = new Map(spans.map((s) => [s.spanId, { span: s, children: [] as Array<SpanNode> }]))
  const roots: Array<SpanNode> = []
  for (const node of nodes.values()) {
    const parent = node.span.parentSpanId === undefined ? undefined : nodes.get(node.span.parentSpanId)
    if (parent === undefined) roots.push(node)
    else parent.children.push(node)
  }
  return roots
}

const SCALE = 1000

/** A waterfall bar: SVG geometry (attributes, not inline style: the CSP allows no inline style). */
const bar = (offsetMs: number, ms: number, totalMs: number, status: "ok" | "error"): Html => {
  const x = totalMs <= 0 ? 0 : Math.max(0, Math.min(SCALE, Math.round((offsetMs / totalMs) * SCALE)))
  const w = totalMs <= 0 ? SCALE : Math.max(2, Math.min(SCALE - x, Math.round((ms / totalMs) * SCALE)))
  return html`<svg class="span-bar" viewBox="0 0 ${SCALE} 10" preserveAspectRatio="none" aria-hidden="true" focusable="false"><rect class="span-${status}" x="${x}" y="0" width="${w}" height="10"></rect></svg>`
}

const spanItem = (node: SpanNode, origin: number, total: number): Html => {
  const s = node.span
  const attrs = Object.entries(s.attributes).map(([k, v]) => `${k}=${String(v)}`).join(" ")
  const offset = Date.parse(s.start) - origin
  return html`<li class="span span-${s.status}">
    <div class="span-row">
      <span class="span-name">${s.name.replace(/^kintsugi\./, "")}</span>
      <span class="span-attrs" hx-disable>${attrs}</span>
      <span class="span-time">${offset > 0 ? `+${duration(offset)} · ` : ""}${duration(s.durationMs)}</span>
      ${bar(offset, s.durationMs, total, s.status)}
    </div>
    ${node.children.length === 0 ? html`` : html`<ol class="spans">${node.children.map((c) => spanItem(c, origin, total))}</ol>`}
  </li>`
}

export const traceSection = (events: ReadonlyArray<JobEvent>, oob = false): Html => {
  const roots = spanTree(events)
  const origin = Math.min(...roots.map((r) => Date.parse(r.span.start)))
  const end = Math.max(...roots.map((r) => Date.parse(r.span.start) + r.span.durationMs))
  return html`<section class="card" id="job-trace" aria-labelledby="trace-title"${oob ? html` hx-swap-oob="true"` : html``}>
    <h2 id="trace-title">Trace</h2>
    ${
      roots.length === 0
        ? html`<p class="muted">The spans (turns, tool calls, compactions) appear here as they end.</p>`
        : html`<ol class="spans spans-root">${roots.map((r) => spanItem(r, origin, end - origin))}</ol>`
    }
  </section>`
}

// ---------------------------------------------------------------- the job page's sections

/** Output paths the job reported (`output` events), in order, each once. */
export const outputPaths = (events: ReadonlyArray<JobEvent>): Array<string> => [
  ...new Set(events.flatMap((e) => (e.type === "output" ? [e.path] : [])))
]

export const outputHref = (jobId: string, path: string, download: boolean): string =>
  jobHref(jobId, `/output?path=${encodeURIComponent(path)}${download ? "&download=1" : ""}`)

export const outputsSection = (job: JobRow, events: ReadonlyArray<JobEvent>, oob = false): Html => {
  const paths = outputPaths(events)
  return html`<section class="card" id="job-outputs" aria-labelledby="outputs-title"${oob ? html` hx-swap-oob="true"` : html``}>
    <h2 id="outputs-title">Output files</h2>
    <p class="muted" hx-disable>In <code>${job.workspace.outDir}</code>${job.outputs === null ? html`` : html` — ${job.outputs}`}</p>
    ${
      paths.length === 0
        ? html`<p class="muted">${isFinished(job.status) ? "The job wrote no file." : "Files the job writes are listed here."}</p>`
        : html`<ul class="outputs" hx-disable>${paths.map(
            (p) => html`<li><code>${p}</code> <a href="${outputHref(job.id, p, false)}" target="_blank" rel="noopener">View</a> <a href="${outputHref(job.id, p, true)}" download>Download</a></li>`
          )}</ul>`
    }
  </section>`
}

export const statusSection = (job: JobRow, oob = false): Html =>
  html`<span id="job-status" role="status" aria-live="polite"${oob ? html` hx-swap-oob="true"` : html``}>${statusBadge(job)}</span>`

/** Abort, behind a confirmation (a disclosure with the real button inside). */
export const actionsSection = (ctx: PageContext, job: JobRow, canAbort: boolean, oob = false): Html =>
  html`<div id="job-actions"${oob ? html` hx-swap-oob="true"` : html``}>${
    canAbort && !isFinished(job.status)
      ? html`<details class="confirm"><summary class="button danger">Abort…</summary>
          <form id="abort-form" method="post" action="${jobHref(job.id, "/abort")}" class="confirm-body">${csrfField(ctx)}
            <p>Stop this job? It ends as <strong>failed: aborted</strong>; files it already wrote stay in place.</p>
            <button type="submit" class="danger">Abort job</button>
          </form></details>`
      : html``
  }${canAbort ? html` <a class="button secondary" href="${agentHref(job.agentName, `/run?from=${encodeURIComponent(job.id)}`)}">Re-run</a>` : html``}</div>`

export const failureSection = (job: JobRow, oob = false): Html =>
  html`<div id="job-failure"${oob ? html` hx-swap-oob="true"` : html``}>${job.status === "failed" ? alert("error", job.message ?? "", `Failed (${job.reason ?? "error"}):`) : html``}</div>`

export const factsSection = (job: JobRow, oob = false): Html => {
  const waited = job.startedAt === null ? null : job.startedAt.getTime() - job.createdAt.getTime()
  return html`<section class="card" id="job-facts" aria-label="Job"${oob ? html` hx-swap-oob="true"` : html``}>
    <dl class="facts" hx-disable>
      <dt>Agent</dt><dd><a href="${agentHref(job.agentName)}">${job.agentName}</a>${job.agentVersion === null ? html`` : html` v${job.agentVersion}`}${job.projectId === "" ? html`` : html` in project <code>${job.projectId}</code>`}</dd>
      <dt>Model</dt><dd id="job-model">${job.model ?? html`<span class="muted">resolved when it starts</span>`}</dd>
      <dt>Task</dt><dd><pre class="code">${job.task}</pre></dd>
      <dt>Sources</dt><dd>${job.workspace.readOnly.join(", ")}</dd>
      <dt>Queued</dt><dd id="job-queued">${time(job.createdAt)} by ${job.createdBy}</dd>
      <dt>Started</dt><dd id="job-started">${
        job.startedAt === null
          ? html`<span class="muted">${isFinished(job.status) ? "never (it ended before a worker took it)" : "waiting for a worker"}</span>`
          : html`${time(job.startedAt)}${waited !== null && waited >= 1000 ? html` <span class="muted">(waited ${duration(waited)})</span>` : html``}`
      }</dd>
      <dt>Finished</dt><dd id="job-finished">${job.finishedAt === null ? html`<span class="muted">not yet</span>` : time(job.finishedAt)}</dd>
      <dt>Duration</dt><dd id="job-duration">${ago(runTime(job))}${job.finishedAt === null && job.startedAt !== null ? html` <span class="muted">so far</span>` : html``}</dd>
      ${job.abortedBy === null ? html`` : html`<dt>Aborted</dt><dd id="job-aborted">by ${job.abortedBy}, ${time(job.abortedAt)}</dd>`}
    </dl>
  </section>`
}

const num = (u: Record<string, unknown> | null, k: string): string => {
  const v = u?.[k]
  return typeof v === "number" ? String(v) : "—"
}

export const usageSection = (job: Pick<JobRow, "costUsd" | "usage">, oob = false): Html => html`
  <section class="card usage" id="job-usage" aria-label="Usage"${oob ? html` hx-swap-oob="true"` : html``}>
    <dl class="facts">
      <dt>Cost</dt><dd id="job-cost">${usd(job.costUsd)}</dd>
      <dt>Tokens in / out</dt><dd id="job-tokens">${num(job.usage, "inputTokens")} / ${num(job.usage, "outputTokens")}</dd>
      <dt>Cache read / write</dt><dd id="job-cache">${num(job.usage, "cacheReadTokens")} / ${num(job.usage, "cacheWriteTokens")}</dd>
      <dt>Turns</dt><dd id="job-turns">${num(job.usage, "turns")}</dd>
    </dl>
  </section>`

/** The live note, removed (emptied) when the job ends. */
export const liveNote = (live: boolean, oob = false): Html =>
  html`<p class="muted" id="job-live"${oob ? html` hx-swap-oob="true"` : html``}>${live ? "Following live…" : ""}</p>`

export const jobPage = (ctx: PageContext, job: JobRow, events: ReadonlyArray<JobEvent>, canAbort: boolean): Html => {
  const last = events.length === 0 ? -1 : (events[events.length - 1]?.seq ?? -1)
  const live = !isFinished(job.status)
  const rows = eventRows(events)
  return layout(
    ctx,
    `Job ${job.id.slice(0, 8)}`,
    html`
  ${pageHeader(html`Job <code>${job.id.slice(0, 8)}</code>`, {
    crumbs: [["/jobs", "Jobs"]],
    meta: html`<div class="badges">${statusSection(job)}</div>`,
    actions: actionsSection(ctx, job, canAbort)
  })}
  ${failureSection(job)}
  <div class="grid-2">${factsSection(job)}${usageSection(job)}</div>
  ${outputsSection(job, events)}
  <section class="card" aria-labelledby="timeline-title"${live ? html` hx-ext="sse" sse-connect="${jobHref(job.id, `/stream?after=${last}`)}" sse-close="job-end"` : html``}>
    <h2 id="timeline-title">Timeline</h2>
    <ol id="job-events" class="job-events" data-last-seq="${last}" data-live="${live ? "true" : "false"}"${live ? html` sse-swap="row,final" hx-swap="beforeend"` : html``}>
      ${rows.map((r) => timelineRow(r, job.startedAt))}
    </ol>
    ${liveNote(live)}
  </section>
  ${traceSection(events)}`
  )
}

// ---------------------------------------------------------------- the run form

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

/** The form filled from an earlier job (re-run), with a fresh key. */
export const runValuesOfJob = (job: JobRow): RunValues => ({
  task: job.task,
  root: job.workspace.root,
  readOnly: job.workspace.readOnly.join("\n"),
  outDir: job.workspace.outDir,
  timeoutSec: String(job.limits.timeoutSec),
  maxCostUsd: job.limits.maxCostUsd === undefined ? "" : String(job.limits.maxCostUsd),
  project: job.projectId,
  idempotencyKey: crypto.randomUUID()
})

/** Problems of a job request by field: agent, task, project, workspace.* and limits.*. */
export const runSlot = (p: Problem): string => {
  const path = p.path.replace(/\[(\d+)\]/g, ".$1")
  if (path.startsWith("workspace.readOnly")) return "readOnly"
  if (path.startsWith("workspace.root")) return "root"
  if (path.startsWith("workspace.outDir")) return "outDir"
  if (path.startsWith("limits.maxCostUsd")) return "maxCostUsd"
  if (path.startsWith("limits")) return "timeoutSec"
  return ["task", "project"].includes(path) ? path : "general"
}

/** What a job of this agent runs on, from its bindings (the installation default, then per project). */
export interface RunModel {
  /** '' = the installation default. */
  readonly project: string
  readonly model: string
  /** The level the job gets (the binding's, else the agent's, clamped to what the model has). */
  readonly thinking: string
  /** Where that level comes from, in words. */
  readonly thinkingSource: string
}

const modelFacts = (models: ReadonlyArray<RunModel>): Html => {
  const fallback = models.find((m) => m.project === "")
  return html`<section class="card run-model" id="run-model" aria-label="Model" hx-disable>
    ${
      fallback === undefined
        ? alert("warn", html`A job started without a project binding would fail at its start. Bind a model on the agent's <em>Model</em> tab first.`, "This agent has no model binding.")
        : html`<p>Jobs run on <strong id="run-model-name">${fallback.model}</strong> with thinking <strong id="run-thinking">${fallback.thinking}</strong> <span class="muted">(${fallback.thinkingSource})</span>.</p>`
    }
    ${
      models.some((m) => m.project !== "")
        ? html`<ul class="inline-list">${models
            .filter((m) => m.project !== "")
            .map((m) => html`<li>Project <code>${m.project}</code>: ${m.model}, thinking ${m.thinking}</li>`)}</ul>`
        : html``
    }
  </section>`
}

export const runPage = (ctx: PageContext, agent: string, v: RunValues, problems: ReadonlyArray<Problem>, models: ReadonlyArray<RunModel>): Html => {
  const at = (slot: string) => problems.filter((p) => runSlot(p) === slot)
  const field = (slot: keyof RunValues, label: string, hint: string, control: Html) => html`
    <div class="field"><label for="f-${slot}">${label}</label>
      ${hint === "" ? html`` : html`<p class="hint" id="hint-${slot}">${hint}</p>`}
      ${control}
      ${fieldProblems(slot, at(slot))}</div>`
  const described = (slot: keyof RunValues, hint: boolean) => `${hint ? `hint-${slot} ` : ""}problems-${slot}`
  const input = (slot: keyof RunValues, hint: boolean, mode = "text") =>
    html`<input id="f-${slot}" name="${slot}" type="text" inputmode="${mode}" value="${v[slot]}" autocomplete="off" spellcheck="false" aria-describedby="${described(slot, hint)}"${at(slot).length > 0 ? html` aria-invalid="true"` : html``}>`
  return layout(
    ctx,
    `Run ${agent}`,
    html`
  ${pageHeader(html`Run <code>${agent}</code>`, { crumbs: [["/agents", "Agents"], [agentHref(agent), agent]] })}
  ${modelFacts(models)}
  <form method="post" action="${agentHref(agent, "/run")}" hx-post="${agentHref(agent, "/run")}" hx-target="body" hx-disabled-elt="find button[type=submit]" class="stack card" novalidate>
    ${csrfField(ctx)}
    <input type="hidden" name="idempotencyKey" value="${v.idempotencyKey}">
    ${problems.length === 0 ? html`` : alert("error", html`This job was not started. ${at("general").length === 0 ? "Fix the fields marked below." : problemList(at("general"))}`, "The job has problems.")}
    ${field("task", "Task", "What the agent should do.", html`<div hx-disable><textarea id="f-task" name="task" rows="4" aria-describedby="hint-task problems-task">${v.task}</textarea></div>`)}
    ${field("root", "Workspace root", "An absolute directory on the server; the others lie inside it.", input("root", true))}
    ${field("readOnly", "Read-only source folders", "One absolute path per line.", html`<div hx-disable><textarea id="f-readOnly" name="readOnly" rows="3" spellcheck="false" aria-describedby="hint-readOnly problems-readOnly">${v.readOnly}</textarea></div>`)}
    ${field("outDir", "Output folder", "Where the agent may write.", input("outDir", true))}
    <div class="grid-2">
      ${field("timeoutSec", "Time limit (seconds)", "", input("timeoutSec", false, "numeric"))}
      ${field("maxCostUsd", "Cost limit (USD, optional)", "", input("maxCostUsd", false, "decimal"))}
    </div>
    ${field("project", "Project (optional)", "Uses the project's model binding when it has one.", input("project", true))}
    <div class="save-bar"><button type="submit" class="primary">Start job</button></div>
  </form>`
  )
}
