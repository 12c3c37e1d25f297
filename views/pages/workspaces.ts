/**
 * Workspaces: the server's job roots and the workspace folders found in them (each `<name>/src` for
 * the sources and `<name>/out` for the output), clones still running or failed, and the form that
 * creates one from an uploaded archive or a git URL.
 */
import type { Problem } from "../../src/contract/Problem.ts"
import { WORKSPACE_NAME_MAX, WORKSPACE_NAME_PATTERN, type WorkspaceFolder } from "../../src/worker/workspaces/workspaceFolder.ts"
import { alert, emptyState, errorSummary, fieldProblems, pageHeader, slotId, time } from "../components.ts"
import { plainMessage } from "../forms/plainProblems.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

/** A clone started from the portal: running, or failed with git's reason (a finished one is a workspace). */
interface CloneRow {
  readonly name: string
  readonly jobRoot: string
  readonly url: string
  readonly startedAt: Date
  /** undefined while it runs. */
  readonly failure: string | undefined
}

export interface WorkspacesProps {
  readonly jobRoots: ReadonlyArray<string>
  readonly workspaces: ReadonlyArray<WorkspaceFolder>
  readonly clones: ReadonlyArray<CloneRow>
  readonly notice: string | null
}

/** The job roots as a list of paths, for Home, the run form and this page. */
export const jobRootList = (roots: ReadonlyArray<string>): Html =>
  html`<ul class="outputs" data-job-roots hx-disable>${roots.map((r) => html`<li><code>${r}</code></li>`)}</ul>`

const cloneList = (clones: ReadonlyArray<CloneRow>): Html =>
  clones.length === 0
    ? html``
    : html`<section class="card" aria-labelledby="clones-title">
    <h2 id="clones-title">Clones</h2>
    <ul class="outputs" hx-disable>${clones.map(
      (c) => html`<li data-clone="${c.name}"><code>${c.name}</code> from <code>${c.url}</code>, started ${time(c.startedAt)}:
        ${c.failure === undefined ? html`<strong>cloning…</strong>` : html`<strong>failed</strong>: ${c.failure}`}</li>`
    )}</ul>
  </section>`

export const workspacesPage = (ctx: PageContext, props: WorkspacesProps): Html => {
  const running = props.clones.some((c) => c.failure === undefined)
  return layout(
    ctx,
    "Workspaces",
    html`
  ${running ? html`<meta http-equiv="refresh" content="3">` : html``}
  ${pageHeader("Workspaces", {
    meta: html`<p class="muted">A job works in a folder inside a job root: its sources read-only, its output folder writable.</p>`,
    actions: ctx.viewer?.canManage === true ? html`<a class="button primary" href="/workspaces/-/new">New workspace</a>` : html``
  })}
  ${props.notice === null ? html`` : alert("ok", props.notice)}
  <section class="card" aria-labelledby="roots-title">
    <h2 id="roots-title">Job roots</h2>
    <p class="muted">Set by <code>KINTSUGI_JOB_ROOTS</code> when the server starts. Every job's folders must lie inside one of them.</p>
    ${jobRootList(props.jobRoots)}
  </section>
  ${cloneList(props.clones)}
  ${
    props.workspaces.length === 0
      ? emptyState("No workspaces yet.", "Create one from a git repository or an uploaded archive; the run form then offers it.")
      : html`<table class="catalog" data-workspaces>
      <thead><tr><th scope="col">Workspace</th><th scope="col">Job root</th><th scope="col">Sources (read-only)</th><th scope="col">Output folder</th></tr></thead>
      <tbody hx-disable>${props.workspaces.map(
        (w) => html`<tr data-workspace="${w.name}">
          <td data-label="Workspace"><strong>${w.name}</strong></td>
          <td data-label="Job root"><code>${w.jobRoot}</code></td>
          <td data-label="Sources"><code>${w.src}</code></td>
          <td data-label="Output"><code>${w.out}</code></td>
        </tr>`
      )}</tbody></table>`
  }`
  )
}

export interface NewWorkspaceValues {
  readonly root: string
  readonly name: string
  readonly source: string
  readonly url: string
}

const LABELS: Readonly<Record<string, string>> = {
  root: "Job root",
  name: "Folder name",
  source: "Sources",
  url: "Git URL",
  archive: "Archive"
}
const SLOTS = ["root", "name", "source", "url", "archive"]
const slotOf = (p: Problem): string => (SLOTS.includes(p.path) ? p.path : "name")

export const newWorkspacePage = (
  ctx: PageContext,
  jobRoots: ReadonlyArray<string>,
  v: NewWorkspaceValues,
  problems: ReadonlyArray<Problem>
): Html => {
  const at = (slot: string) => problems.filter((p) => slotOf(p) === slot)
  const invalid = (slot: string) => (at(slot).length > 0 ? html` aria-invalid="true"` : html``)
  const source = v.source === "git" ? "git" : "archive"
  return layout(
    ctx,
    "New workspace",
    html`
  ${pageHeader("New workspace", { crumbs: [["/workspaces", "Workspaces"]] })}
  <form method="post" action="/workspaces" enctype="multipart/form-data" class="stack card" data-unsaved-guard>
    ${csrfField(ctx)}
    ${errorSummary(problems.map((p) => ({ label: LABELS[slotOf(p)] ?? "Workspace", message: plainMessage(p.message), target: slotId(slotOf(p)) })))}
    <div class="field"><label for="f-root">Job root</label>
      <p class="hint" id="hint-root">The folder is made inside it (<code>KINTSUGI_JOB_ROOTS</code>).</p>
      <select id="f-root" name="root" aria-describedby="hint-root ${slotId("root")}"${invalid("root")}>${jobRoots.map(
        (r) => html`<option value="${r}"${r === v.root ? html` selected` : html``}>${r}</option>`
      )}</select>
      ${fieldProblems("root", at("root"))}</div>
    <div class="field"><label for="f-name">Folder name</label>
      <p class="hint" id="hint-name">Letters, digits, dots, dashes and underscores, starting with a letter or digit (at most ${WORKSPACE_NAME_MAX}).
        It holds <code>src/</code> (the sources, read-only for jobs) and <code>out/</code> (where jobs write); it must not exist yet.</p>
      <input id="f-name" name="name" value="${v.name}" required pattern="${WORKSPACE_NAME_PATTERN}" maxlength="${WORKSPACE_NAME_MAX}" autocomplete="off" spellcheck="false" aria-describedby="hint-name ${slotId("name")}"${invalid("name")}>
      ${fieldProblems("name", at("name"))}</div>
    <fieldset class="stack">
      <legend>Sources</legend>
      <label class="check"><input type="radio" name="source" value="archive"${source === "archive" ? html` checked` : html``}> Upload an archive</label>
      <div class="field"><label for="f-archive">Archive (.zip or .tar.gz)</label>
        <p class="hint" id="hint-archive">At most 16 MiB, 64 MiB unpacked and 5000 files; links, absolute paths and <code>..</code> are refused. One top folder shared by every file is removed.</p>
        <input id="f-archive" type="file" name="archive" accept=".zip,.tar.gz,.tgz,application/zip,application/gzip" aria-describedby="hint-archive ${slotId("archive")}"${invalid("archive")}>
        ${fieldProblems("archive", at("archive"))}</div>
      <label class="check"><input type="radio" name="source" value="git"${source === "git" ? html` checked` : html``}> Clone a git repository</label>
      <div class="field"><label for="f-url">Git URL (https)</label>
        <p class="hint" id="hint-url">A public repository: https only, no user name or password, no private or local address. A shallow clone of the default branch, at most 256 MiB and 2 minutes.</p>
        <input id="f-url" name="url" type="url" inputmode="url" value="${v.url}" placeholder="https://github.com/owner/repo.git" autocomplete="off" spellcheck="false" aria-describedby="hint-url ${slotId("url")}"${invalid("url")}>
        ${fieldProblems("url", at("url"))}</div>
      ${fieldProblems("source", at("source"))}
    </fieldset>
    <div class="save-bar"><button type="submit" class="primary">Create workspace</button></div>
  </form>`
  )
}
