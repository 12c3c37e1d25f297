/**
 * Projects → a project → Memory: the review queue first (learned notes: approve, reject, edit before
 * approving, with the diff of the last revision), then all notes with filters, the daily log, the
 * settings, and reset behind a typed confirmation. Note text is agent-written: escaped, under hx-disable.
 */
import type { LogEntry, MemorySettings, Note, Revision } from "../../src/worker/memory/memoryModel.ts"
import { alert, badge, emptyState, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { hunks, lineDiff, splitLines, type Hunk } from "../forms/lineDiff.ts"
import { projectHeader } from "./projects.ts"

export interface QueuedNote {
  readonly note: Note
  /** The previous and current text when the note has more than one revision. */
  readonly previous: Revision | null
}

export interface MemoryPageProps {
  readonly projectId: string
  readonly projectName: string
  readonly settings: MemorySettings
  readonly queue: ReadonlyArray<QueuedNote>
  readonly notes: ReadonlyArray<Note>
  readonly filter: { readonly trust: string; readonly kind: string; readonly q: string }
  readonly date: string
  readonly log: ReadonlyArray<LogEntry>
  readonly notice: string | null
}

export const memoryHref = (projectId: string, rest = ""): string => `/projects/${encodeURIComponent(projectId)}/memory${rest}`

const trustTone = (t: Note["trust"]) => (t === "reviewed" ? "ok" : t === "rejected" ? "error" : t === "forgotten" ? "muted" : "info")

const sign = { same: " ", add: "+", del: "-" } as const
const hunkRows = (h: Hunk): Html => html`
  ${h.lines.map((l) => html`<tr class="${l.op}"><td class="sign">${sign[l.op]}</td><td class="text"><code>${l.text}</code></td></tr>`)}`

const revisionDiff = (previous: Revision, note: Note): Html => html`
  <details class="note-diff"><summary>Changes since revision ${previous.revision}</summary>
    <table class="diff"><tbody>${hunks(lineDiff(splitLines(`${previous.title}\n\n${previous.body}`), splitLines(`${note.title}\n\n${note.body}`))).map(hunkRows)}</tbody></table>
  </details>`

const noteCard = (n: Note): Html => html`
  <div class="note-head"><h3>${n.title}</h3> ${badge("muted", n.kind)} ${badge(trustTone(n.trust), n.trust)}</div>
  <pre class="note-body">${n.body}</pre>
  <p class="muted note-meta">by ${n.updatedBy.agent} · ${time(n.updatedAt)}${n.paths.length > 0 ? ` · ${n.paths.join(", ")}` : ""}</p>`

const reviewForms = (ctx: PageContext, projectId: string, q: QueuedNote): Html => {
  const action = memoryHref(projectId, `/notes/${q.note.id}/review`)
  const id = (field: string) => `note-${q.note.id}-${field}`
  return html`
  <div class="review-actions">
    <form method="post" action="${action}">${csrfField(ctx)}
      <input type="hidden" name="decision" value="reviewed"><button class="primary" type="submit">Approve</button></form>
    <form method="post" action="${action}">${csrfField(ctx)}
      <input type="hidden" name="decision" value="rejected"><button class="secondary" type="submit">Reject</button></form>
  </div>
  <details class="note-edit"><summary>Edit before approving</summary>
    <form method="post" action="${action}" class="stack">${csrfField(ctx)}
      <input type="hidden" name="decision" value="reviewed">
      <div class="field"><label for="${id("title")}">Title</label><input id="${id("title")}" name="title" value="${q.note.title}" maxlength="200" required></div>
      <div class="field"><label for="${id("body")}">Body</label><textarea id="${id("body")}" name="body" rows="6" maxlength="4000" required>${q.note.body}</textarea></div>
      <div class="field"><label for="${id("note")}">Review note</label><input id="${id("note")}" name="note" maxlength="1000"></div>
      <div><button class="primary" type="submit">Save and approve</button></div>
    </form>
  </details>`
}

const option = (value: string, selected: string, label = value === "" ? "any" : value) =>
  html`<option value="${value}"${value === selected ? html` selected` : html``}>${label}</option>`

/** A number of days, one field of the settings form. */
const daysField = (name: string, label: string, value: number): Html => html`
  <div class="field"><label for="memory-${name}">${label}</label>
    <input id="memory-${name}" type="number" name="${name}" min="1" max="3650" inputmode="numeric" value="${String(value)}"></div>`

export const projectMemoryPage = (ctx: PageContext, p: MemoryPageProps): Html => {
  const manage = ctx.viewer?.canManage === true
  const r = p.settings.retention
  return layout(
    ctx,
    `Memory · ${p.projectName}`,
    html`
  ${projectHeader({ id: p.projectId, name: p.projectName }, "memory", p.notice)}
  <p class="muted">Notes agents of this project saved. Agents' notes are <em>learned</em> until a person reviews them; independent reviewers see only reviewed notes.</p>
  ${p.settings.enabled ? html`` : alert("info", "Project memory is off: jobs of this project get no memory tools.")}
  ${manage ? html`` : alert("info", "Reviewing, settings and reset need the agents.manage permission.")}

  <section id="review-queue"><h2>Review queue</h2>
  ${
    p.queue.length === 0
      ? emptyState("Nothing to review.", "Notes agents save appear here as learned.")
      : html`<ul class="note-list" hx-disable>${p.queue.map(
          (q) =>
            html`<li class="note" data-note="${q.note.id}">${noteCard(q.note)}${q.previous === null ? html`` : revisionDiff(q.previous, q.note)}${manage ? reviewForms(ctx, p.projectId, q) : html``}</li>`
        )}</ul>`
  }</section>

  <section id="all-notes"><h2>All notes</h2>
  <form method="get" action="${memoryHref(p.projectId)}" class="filters" role="search">
    <div class="field"><label for="memory-trust">Trust</label><select id="memory-trust" name="trust">${["", "learned", "reviewed", "rejected", "forgotten"].map((t) => option(t, p.filter.trust))}</select></div>
    <div class="field"><label for="memory-kind">Kind</label><select id="memory-kind" name="kind">${["", "fact", "lesson", "decision", "navigation"].map((k) => option(k, p.filter.kind))}</select></div>
    <div class="field grow"><label for="memory-q">Search</label><input id="memory-q" type="search" name="q" value="${p.filter.q}" maxlength="500"></div>
    <div class="field"><button class="secondary" type="submit">Filter</button></div>
  </form>
  ${p.notes.length === 0 ? emptyState("No notes.", "No note matches these filters.") : html`<ul class="note-list" hx-disable>${p.notes.map((n) => html`<li class="note" data-note="${n.id}">${noteCard(n)}</li>`)}</ul>`}
  </section>

  <section id="daily-log"><h2>Daily log</h2>
  <form method="get" action="${memoryHref(p.projectId)}" class="filters">
    <div class="field"><label for="memory-date">Day (UTC)</label><input id="memory-date" type="date" name="date" value="${p.date}"></div>
    <div class="field"><button class="secondary" type="submit">Show</button></div>
  </form>
  ${
    p.log.length === 0
      ? emptyState(`Nothing logged on ${p.date}.`, "Jobs starting and finishing and notes changing are logged here.")
      : html`<table class="catalog" hx-disable><thead><tr><th scope="col">Time</th><th scope="col">What</th><th scope="col">Summary</th></tr></thead><tbody>${p.log.map(
          (e) =>
            html`<tr><td data-label="Time">${e.at.toISOString().slice(11, 19)}</td><td data-label="What">${e.kind}</td><td data-label="Summary">${e.summary}</td></tr>`
        )}</tbody></table>`
  }</section>

  <section id="settings"><h2>Settings</h2>
  ${
    manage
      ? html`<form method="post" action="${memoryHref(p.projectId, "/settings")}" class="card stack">${csrfField(ctx)}
      <div class="field"><label class="check"><input type="checkbox" id="memory-enabled" name="enabled" value="on"${p.settings.enabled ? html` checked` : html``}> Memory enabled for this project's agents</label></div>
      <div class="grid-2">
        ${daysField("learnedDays", "Learned notes not reviewed become forgotten after (days)", r.learnedDays)}
        ${daysField("forgottenDays", "Forgotten and rejected notes are deleted after (days)", r.forgottenDays)}
        ${daysField("scratchpadDays", "Scratchpads are deleted after the run (days)", r.scratchpadDays)}
        ${daysField("logDays", "Daily logs are kept (days)", r.logDays)}
      </div>
      <div><button class="primary" type="submit">Save settings</button></div></form>`
      : html`<p>${p.settings.enabled ? "Enabled" : "Disabled"}; learned notes ${r.learnedDays} days, forgotten ${r.forgottenDays}, scratchpads ${r.scratchpadDays}, logs ${r.logDays}.</p>`
  }</section>

  ${
    manage
      ? html`<section id="reset" class="card"><h2>Reset memory</h2>
    <p>Deletes every note, revision, log line and scratchpad of this project. This cannot be undone.</p>
    <form method="post" action="${memoryHref(p.projectId, "/reset")}" class="stack">${csrfField(ctx)}
      <div class="field"><label for="memory-confirm">Type the project id <code>${p.projectId}</code> to confirm</label>
        <input id="memory-confirm" name="confirm" autocomplete="off" spellcheck="false" required></div>
      <div><button class="danger" type="submit">Reset memory</button></div></form></section>`
      : html``
  }`
  )
}
