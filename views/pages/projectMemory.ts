/**
 * Projects → a project → Memory: the review queue first (learned notes: approve, reject, edit before
 * approving, with the diff of the last revision), then all notes with filters, the daily log, the
 * settings, and reset behind a typed confirmation. Note text is agent-written: escaped, under hx-disable.
 */
import type { LogEntry, MemorySettings, Note, Revision } from "../../src/worker/memory/memoryModel.ts"
import { alert, badge, emptyState, pageHeader, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { hunks, lineDiff, splitLines, type Hunk } from "../forms/lineDiff.ts"

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
  <div class="note-head"><strong>${n.title}</strong> ${badge("muted", n.kind)} ${badge(trustTone(n.trust), n.trust)}</div>
  <pre class="note-body">${n.body}</pre>
  <p class="muted">by ${n.updatedBy.agent} · ${time(n.updatedAt)}${n.paths.length > 0 ? ` · ${n.paths.join(", ")}` : ""}</p>`

const reviewForms = (ctx: PageContext, projectId: string, q: QueuedNote): Html => html`
  <div class="review-actions">
    <form method="post" action="${memoryHref(projectId, `/notes/${q.note.id}/review`)}">${csrfField(ctx)}
      <input type="hidden" name="decision" value="reviewed"><button class="button primary" type="submit">Approve</button></form>
    <form method="post" action="${memoryHref(projectId, `/notes/${q.note.id}/review`)}">${csrfField(ctx)}
      <input type="hidden" name="decision" value="rejected"><button class="button" type="submit">Reject</button></form>
  </div>
  <details><summary>Edit before approving</summary>
    <form method="post" action="${memoryHref(projectId, `/notes/${q.note.id}/review`)}">${csrfField(ctx)}
      <input type="hidden" name="decision" value="reviewed">
      <label>Title <input name="title" value="${q.note.title}" maxlength="200" required></label>
      <label>Body <textarea name="body" rows="6" maxlength="4000" required>${q.note.body}</textarea></label>
      <label>Review note <input name="note" maxlength="1000"></label>
      <button class="button primary" type="submit">Save and approve</button>
    </form>
  </details>`

const option = (value: string, selected: string, label = value === "" ? "any" : value) => html`<option value="${value}" ${value === selected ? "selected" : ""}>${label}</option>`

export const projectMemoryPage = (ctx: PageContext, p: MemoryPageProps): Html => {
  const manage = ctx.viewer?.canManage === true
  const r = p.settings.retention
  return layout(
    ctx,
    `Memory · ${p.projectName}`,
    html`
  ${pageHeader(`Memory of ${p.projectName}`, {
    crumbs: [["Projects", "/projects"], [p.projectName, `/projects/${encodeURIComponent(p.projectId)}`]],
    meta: html`<p class="muted">Notes agents of this project saved. Agents' notes are <em>learned</em> until a person reviews them; independent reviewers see only reviewed notes.</p>`
  })}
  ${p.notice === null ? html`` : alert("ok", p.notice)}
  ${p.settings.enabled ? html`` : alert("info", "Project memory is off: jobs of this project get no memory tools.")}
  ${manage ? html`` : alert("info", "Reviewing, settings and reset need the agents.manage permission.")}

  <section id="review-queue"><h2>Review queue</h2>
  ${
    p.queue.length === 0
      ? emptyState("Nothing to review.", "Notes agents save appear here as learned.")
      : html`<ul class="note-list" hx-disable>${p.queue.map(
          (q) => html`<li class="note" data-note="${q.note.id}">${noteCard(q.note)}${q.previous === null ? html`` : revisionDiff(q.previous, q.note)}${manage ? reviewForms(ctx, p.projectId, q) : html``}</li>`
        )}</ul>`
  }</section>

  <section id="all-notes"><h2>All notes</h2>
  <form method="get" action="${memoryHref(p.projectId)}" class="filters">
    <label>Trust <select name="trust">${["", "learned", "reviewed", "rejected", "forgotten"].map((t) => option(t, p.filter.trust))}</select></label>
    <label>Kind <select name="kind">${["", "fact", "lesson", "decision", "navigation"].map((k) => option(k, p.filter.kind))}</select></label>
    <label>Search <input name="q" value="${p.filter.q}" maxlength="500"></label>
    <button class="button" type="submit">Filter</button>
  </form>
  ${p.notes.length === 0 ? emptyState("No notes.", "No note matches these filters.") : html`<ul class="note-list" hx-disable>${p.notes.map((n) => html`<li class="note" data-note="${n.id}">${noteCard(n)}</li>`)}</ul>`}
  </section>

  <section id="daily-log"><h2>Daily log</h2>
  <form method="get" action="${memoryHref(p.projectId)}"><label>Day (UTC) <input type="date" name="date" value="${p.date}"></label> <button class="button" type="submit">Show</button></form>
  ${
    p.log.length === 0
      ? emptyState(`Nothing logged on ${p.date}.`, "Jobs starting and finishing and notes changing are logged here.")
      : html`<table class="catalog" hx-disable><thead><tr><th scope="col">Time</th><th scope="col">What</th><th scope="col">Summary</th></tr></thead><tbody>${p.log.map(
          (e) => html`<tr><td>${e.at.toISOString().slice(11, 19)}</td><td>${e.kind}</td><td>${e.summary}</td></tr>`
        )}</tbody></table>`
  }</section>

  <section id="settings"><h2>Settings</h2>
  ${
    manage
      ? html`<form method="post" action="${memoryHref(p.projectId, "/settings")}">${csrfField(ctx)}
      <label><input type="checkbox" name="enabled" value="on" ${p.settings.enabled ? "checked" : ""}> Memory enabled for this project's agents</label>
      <label>Learned notes not reviewed become forgotten after (days) <input type="number" name="learnedDays" min="1" max="3650" value="${r.learnedDays}"></label>
      <label>Forgotten and rejected notes are deleted after (days) <input type="number" name="forgottenDays" min="1" max="3650" value="${r.forgottenDays}"></label>
      <label>Scratchpads are deleted after the run (days) <input type="number" name="scratchpadDays" min="1" max="3650" value="${r.scratchpadDays}"></label>
      <label>Daily logs are kept (days) <input type="number" name="logDays" min="1" max="3650" value="${r.logDays}"></label>
      <button class="button primary" type="submit">Save settings</button></form>`
      : html`<p>${p.settings.enabled ? "Enabled" : "Disabled"}; learned notes ${r.learnedDays} days, forgotten ${r.forgottenDays}, scratchpads ${r.scratchpadDays}, logs ${r.logDays}.</p>`
  }</section>

  ${
    manage
      ? html`<section id="reset"><h2>Reset memory</h2>
    <p>Deletes every note, revision, log line and scratchpad of this project. This cannot be undone.</p>
    <form method="post" action="${memoryHref(p.projectId, "/reset")}">${csrfField(ctx)}
      <label>Type the project id <code>${p.projectId}</code> to confirm <input name="confirm" autocomplete="off" required></label>
      <button class="button danger" type="submit">Reset memory</button></form></section>`
      : html``
  }`
  )
}
