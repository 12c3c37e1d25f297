/**
 * One job's page, like a CI run page or a trace view: facts (who started and aborted it, when, how
 * long it waited and ran), cost and tokens, output files, the timeline of events (timestamps, tool
 * calls and results expandable) and the nested spans. Each section has an id and an out-of-band form:
 * the live stream (src/http/portal/jobPages.ts) sends these same rows and sections over SSE, swapped
 * in by htmx's SSE extension — there is no second renderer in JavaScript.
 */
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import type { JobRow } from "../../src/worker/JobStore.ts"
import { agentHref, alert, jobHref, pageHeader, time, usd } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { ago, duration, isFinished, runTime, statusBadge } from "./jobs.ts"

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
      return {
        ...base,
        kind: e.allowed ? "call" : "blocked",
        label: e.allowed ? "tool call" : "blocked",
        text: clip(line),
        detail: `${e.tool}\n${pretty(e.input)}${e.reason === undefined ? "" : `\n\n${e.reason}`}`
      }
    }
    case "tool.result": {
      const line = `${e.tool} (${duration(e.durationMs)}): ${e.summary}`
      return {
        ...base,
        kind: e.success ? "result" : "result-failed",
        label: e.success ? "result" : "tool failed",
        text: clip(line),
        detail: e.summary
      }
    }
    case "output":
      return { ...base, kind: "output", label: "output", text: e.path }
    case "source.read":
      return { ...base, kind: "read", label: "read", text: `${e.path}:${e.firstLine}${e.lastLine === null ? "" : `-${e.lastLine}`}` }
    case "job.completed":
      return { ...base, kind: "completed", label: "completed", text: e.summary }
    case "job.failed":
      return { ...base, kind: "failed", label: `failed: ${e.reason}`, text: e.message }
    case "grounding":
      return {
        ...base,
        kind: e.ungrounded > 0 ? "blocked" : "read",
        label: "grounding",
        text: `${e.grounded} grounded, ${e.ungrounded} ungrounded, ${e.unknown} unknown path${e.required ? " (required)" : ""}`
      }
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

type SpanEvent = Extract<JobEvent, { type: "span" }>

interface SpanNode {
  readonly span: SpanEvent
  readonly children: Array<SpanNode>
}

const spanTree = (events: ReadonlyArray<JobEvent>): Array<SpanNode> => {
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
  const attrs = Object.entries(s.attributes)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(" ")
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

/** Output paths the job reported (`output` events), in order, each once. */
export const outputPaths = (events: ReadonlyArray<JobEvent>): Array<string> => [
  ...new Set(events.flatMap((e) => (e.type === "output" ? [e.path] : [])))
]

const outputHref = (jobId: string, path: string, download: boolean): string =>
  jobHref(jobId, `/output?path=${encodeURIComponent(path)}${download ? "&download=1" : ""}`)

export const outputsSection = (job: JobRow, events: ReadonlyArray<JobEvent>, oob = false): Html => {
  const paths = outputPaths(events)
  return html`<section class="card" id="job-outputs" aria-labelledby="outputs-title"${oob ? html` hx-swap-oob="true"` : html``}>
    <h2 id="outputs-title">Output files</h2>
    <p class="muted" hx-disable>In <code>${job.workspace.outDir}</code>${job.outputs === null ? html`` : html` — ${job.outputs}`}${
      job.outputs?.startsWith("committed ") === true
        ? html`. View and Download show each file as committed, whatever the folder holds now.`
        : html``
    }</p>
    ${
      paths.length === 0
        ? html`<p class="muted">${isFinished(job.status) ? "The job wrote no file." : "Files the job writes are listed here."}</p>`
        : html`<ul class="outputs" hx-disable>${paths.map(
            (p) =>
              html`<li><code>${p}</code> <a href="${outputHref(job.id, p, false)}" target="_blank" rel="noopener">View</a> <a href="${outputHref(job.id, p, true)}" download>Download</a></li>`
          )}</ul>`
    }
  </section>`
}

/** The typed answer of the job's `job.completed` event; undefined when it has none (the agent declares no `answer`). */
const answerOf = (events: ReadonlyArray<JobEvent>): unknown => {
  const done = events.findLast((e) => e.type === "job.completed")
  return done?.type === "job.completed" ? done.answer : undefined
}

/** The typed answer as indented JSON; an empty slot until the job completes with one (filled by the final swap). */
export const answerSection = (events: ReadonlyArray<JobEvent>, oob = false): Html => {
  const answer = answerOf(events)
  return html`<div id="job-answer"${oob ? html` hx-swap-oob="true"` : html``}>${
    answer === undefined
      ? html``
      : html`<section class="card" aria-labelledby="answer-title">
    <h2 id="answer-title">Answer</h2>
    <p class="muted">The final message as JSON, valid against the agent's answer schema.</p>
    <pre class="code" hx-disable>${JSON.stringify(answer, null, 2)}</pre>
  </section>`
  }</div>`
}

type GroundingEvent = Extract<JobEvent, { type: "grounding" }>
type Citation = GroundingEvent["citations"][number]

const citationText = (c: Citation) => `${c.path}:${c.firstLine}${c.lastLine === c.firstLine ? "" : `-${c.lastLine}`}`

/** Where a citation is written: the output file at its line (a numbered view), or the summary. */
const citationHref = (jobId: string, c: Citation): string | null =>
  c.file === null ? null : `${outputHref(jobId, c.file, false)}&line=${c.at}#L${c.at}`

/**
 * The grounding check (docs/grounding.md): counts, then every ungrounded or unknown citation linked to
 * its place in the output. Absent until the job completes (failed jobs are not checked).
 */
export const groundingSection = (job: JobRow, events: ReadonlyArray<JobEvent>, oob = false): Html => {
  const g = events.find((e): e is GroundingEvent => e.type === "grounding")
  const listed = g === undefined ? [] : g.citations.filter((c) => c.status !== "grounded")
  return html`<section class="card" id="job-grounding" aria-labelledby="grounding-title"${oob ? html` hx-swap-oob="true"` : html``}>
    <h2 id="grounding-title">Grounding</h2>
    ${
      g === undefined
        ? html`<p class="muted">${isFinished(job.status) ? "Not checked: only jobs whose model finished are." : "Checked when the model finishes."}</p>`
        : html`<p id="grounding-counts"><strong>${g.grounded}</strong> grounded · <strong>${g.ungrounded}</strong> ungrounded · <strong>${g.unknown}</strong> unknown path${g.required ? html` <span class="muted">(grounding required)</span>` : html``}</p>
          ${
            listed.length === 0
              ? html`<p class="muted">${g.grounded === 0 ? "The outputs cite no lines." : "Every cited line was shown to the model."}</p>`
              : html`<ul class="grounding" hx-disable>${listed.map((c) => {
                  const href = citationHref(job.id, c)
                  const where =
                    c.file === null
                      ? html`in the summary, line ${c.at}`
                      : html`in <a href="${href ?? ""}" target="_blank" rel="noopener">${c.file} line ${c.at}</a>`
                  return html`<li class="citation-${c.status}"><code>${citationText(c)}</code> ${c.status === "ungrounded" ? "never shown to the model" : "names no readable file"} — ${where}</li>`
                })}</ul>`
          }`
    }
  </section>`
}

/**
 * An output file as numbered lines (`#L<n>` anchors), the target of a grounding citation's link; the
 * cited line is marked. Text only, escaped like every page (the raw View stays text/plain).
 */
export const outputLinesPage = (ctx: PageContext, jobId: string, path: string, text: string, line: number): Html =>
  layout(
    ctx,
    path,
    html`${pageHeader(html`<code>${path}</code>`, {
      crumbs: [
        ["/jobs", "Jobs"],
        [jobHref(jobId), `Job ${jobId.slice(0, 8)}`]
      ]
    })}
    <section class="card"><ol class="output-lines" hx-disable>${text
      .split("\n")
      .map(
        (l, i) => html`<li id="L${i + 1}"${i + 1 === line ? html` class="cited" aria-current="location"` : html``}><code>${l}</code></li>`
      )}</ol></section>`
  )

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
      ${
        job.resumes.length === 0
          ? html``
          : html`<dt>Resumed</dt><dd id="job-resumes">${job.resumes.map(
              (r, i) =>
                html`${i === 0 ? "" : "; "}${time(new Date(r.at))}${r.fromTurn === null ? "" : ` after turn ${String(r.fromTurn)}`} (its worker was lost)`
            )}</dd>`
      }
      ${job.parentJobId === null ? html`` : html`<dt>Continues</dt><dd id="job-parent"><a href="${jobHref(job.parentJobId)}">job <code>${job.parentJobId.slice(0, 8)}</code></a></dd>`}
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

/** What the page shows of continuing the job: whether this user may continue it now, and the jobs that continue it. */
export interface ContinueProps {
  /** A finished job with a transcript, seen by a user allowed to run jobs. */
  readonly canContinue: boolean
  readonly continuations: ReadonlyArray<string>
}

/**
 * The jobs that continue this one, and the form that starts another (a next task, posted; the new job's
 * page follows); an empty placeholder while there is neither, which the live page's end replaces.
 */
export const continueSection = (ctx: PageContext, job: JobRow, props: ContinueProps, oob = false): Html =>
  !props.canContinue && props.continuations.length === 0
    ? html`<div id="job-continue"${oob ? html` hx-swap-oob="true"` : html``}></div>`
    : html`<section class="card" id="job-continue" aria-labelledby="continue-title"${oob ? html` hx-swap-oob="true"` : html``}>
    <h2 id="continue-title">Continue</h2>
    ${
      props.continuations.length === 0
        ? html``
        : html`<p>Continued by ${props.continuations.map((id, i) => html`${i === 0 ? "" : ", "}<a href="${jobHref(id)}">job <code>${id.slice(0, 8)}</code></a>`)}</p>`
    }
    ${
      props.canContinue
        ? html`<form id="continue-form" method="post" action="${jobHref(job.id, "/continue")}">${csrfField(ctx)}
      <p class="muted">A new job of the same agent version, project and workspace that starts from this job's conversation, then the next task.</p>
      <label for="continue-task">Next task</label>
      <textarea id="continue-task" name="task" rows="3" required></textarea>
      <button type="submit">Continue</button>
    </form>`
        : html``
    }
  </section>`

/** Loads the transcript panel once shown (the live page's end swaps in a new one, so the panel shows the whole job). */
export const transcriptLoader = (job: JobRow, oob = false): Html =>
  html`<div id="transcript" hx-get="${jobHref(job.id, "/transcript")}" hx-trigger="load" hx-swap="outerHTML"${oob ? html` hx-swap-oob="true"` : html``}></div>`

/** The live note, removed (emptied) when the job ends. */
export const liveNote = (live: boolean, oob = false): Html =>
  html`<p class="muted" id="job-live"${oob ? html` hx-swap-oob="true"` : html``}>${live ? "Following live…" : ""}</p>`

export const jobPage = (
  ctx: PageContext,
  job: JobRow,
  events: ReadonlyArray<JobEvent>,
  canAbort: boolean,
  continuing: ContinueProps = { canContinue: false, continuations: [] }
): Html => {
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
  ${answerSection(events)}
  ${outputsSection(job, events)}
  ${groundingSection(job, events)}
  ${continueSection(ctx, job, continuing)}
  <section class="card" aria-labelledby="timeline-title"${live ? html` hx-ext="sse" sse-connect="${jobHref(job.id, `/stream?after=${last}`)}" sse-close="job-end"` : html``}>
    <h2 id="timeline-title">Timeline</h2>
    <ol id="job-events" class="job-events" data-last-seq="${last}" data-live="${live ? "true" : "false"}"${live ? html` sse-swap="row,final" hx-swap="beforeend"` : html``}>
      ${rows.map((r) => timelineRow(r, job.startedAt))}
    </ol>
    ${liveNote(live)}
  </section>
  ${transcriptLoader(job)}
  ${traceSection(events)}`
  )
}
