/**
 * The run form of an agent: the model and thinking level a job gets from each of the agent's bindings
 * above it, every problem of the request next to its field, and a hidden Idempotency-Key so that a
 * double click starts one job.
 */
import type { Problem } from "../../src/contract/Problem.ts"
import type { JobRow } from "../../src/worker/JobStore.ts"
import type { WorkspaceFolder } from "../../src/worker/workspaces/workspaceFolder.ts"
import { agentHref, alert, fieldProblems, generalProblems, pageHeader, placedSummary } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { jobRootList } from "./workspaces.ts"

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

export const blankRun = (): RunValues => ({
  task: "",
  root: "",
  readOnly: "",
  outDir: "",
  timeoutSec: "600",
  maxCostUsd: "",
  project: "",
  idempotencyKey: crypto.randomUUID()
})

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

/** The form filled for a workspace folder: its folder as the root, `src` read-only, `out` the output folder. */
export const runValuesOfWorkspace = (v: RunValues, w: WorkspaceFolder): RunValues => ({
  ...v,
  root: w.path,
  readOnly: w.src,
  outDir: w.out
})

/** Where this server lets jobs work: its job roots, the workspaces found in them, the one chosen (its path, or ""). */
export interface RunPlaces {
  readonly jobRoots: ReadonlyArray<string>
  readonly workspaces: ReadonlyArray<WorkspaceFolder>
  readonly chosen: string
}

/** Problems of a job request by field: agent (unknown, disabled, not bound), task, project, workspace.* and limits.*. */
export const runSlot = (p: Problem): string => {
  const path = p.path.replace(/\[(\d+)\]/g, ".$1")
  if (path.startsWith("workspace.readOnly")) return "readOnly"
  if (path.startsWith("workspace.root")) return "root"
  if (path.startsWith("workspace.outDir")) return "outDir"
  if (path.startsWith("limits.maxCostUsd")) return "maxCostUsd"
  if (path.startsWith("limits")) return "timeoutSec"
  return ["agent", "task", "project"].includes(path) ? path : "general"
}

const RUN_LABELS: Readonly<Record<string, string>> = {
  agent: "Agent",
  task: "Task",
  root: "Workspace root",
  readOnly: "Read-only source folders",
  outDir: "Output folder",
  timeoutSec: "Time limit",
  maxCostUsd: "Cost limit",
  project: "Project",
  general: "Job"
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

const modelFacts = (agent: string, models: ReadonlyArray<RunModel>): Html => {
  const fallback = models.find((m) => m.project === "")
  return html`<section class="card run-model" id="run-model" aria-label="Model" hx-disable>
    ${
      fallback === undefined
        ? alert(
            "warn",
            html`A job without a project binding cannot start. <a href="${agentHref(agent, "/binding")}">Bind it to a provider in Bindings</a> first.`,
            "This agent has no model binding."
          )
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

/** The job roots and, when there are workspaces, a GET form that fills the folders below from one. */
const placesSection = (agent: string, places: RunPlaces): Html => html`<section class="card" aria-labelledby="places-title" id="run-places">
    <h2 id="places-title">Where the job works</h2>
    <p>Jobs on this server work inside its job roots:</p>
    ${jobRootList(places.jobRoots)}
    ${
      places.workspaces.length === 0
        ? html`<p class="muted">No workspace in them yet: <a href="/workspaces/-/new">create one</a> from a git URL or an archive, or type the folders below.</p>`
        : html`<form method="get" action="${agentHref(agent, "/run")}" class="stack">
        <div class="field"><label for="f-workspace">Workspace</label>
          <p class="hint" id="hint-workspace">Fills in the folders below: its folder as the root, <code>src</code> read-only, <code>out</code> for the output.</p>
          <select id="f-workspace" name="workspace" aria-describedby="hint-workspace">${places.workspaces.map(
            (w) =>
              html`<option value="${w.path}"${w.path === places.chosen ? html` selected` : html``}>${w.name}${places.jobRoots.length > 1 ? ` (${w.jobRoot})` : ""}</option>`
          )}</select></div>
        <div><button type="submit">Use this workspace</button></div>
      </form>`
    }
  </section>`

export const runPage = (
  ctx: PageContext,
  agent: string,
  v: RunValues,
  problems: ReadonlyArray<Problem>,
  models: ReadonlyArray<RunModel>,
  places: RunPlaces
): Html => {
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
  ${pageHeader(html`Run <code>${agent}</code>`, {
    crumbs: [
      ["/agents", "Agents"],
      [agentHref(agent), agent]
    ]
  })}
  ${modelFacts(agent, models)}
  ${placesSection(agent, places)}
  <form method="post" action="${agentHref(agent, "/run")}" hx-post="${agentHref(agent, "/run")}" hx-target="body" hx-disabled-elt="find button[type=submit]" class="stack card" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    <input type="hidden" name="idempotencyKey" value="${v.idempotencyKey}">
    ${placedSummary(
      problems.map((p) => [runSlot(p), p] as const),
      RUN_LABELS,
      "run-general",
      "This job was not started."
    )}
    ${generalProblems("run-general", at("general"))}
    <div class="field"><label for="f-agent">Agent</label>
      <input id="f-agent" type="text" value="${agent}" readonly aria-describedby="problems-agent"${at("agent").length > 0 ? html` aria-invalid="true"` : html``}>
      ${fieldProblems("agent", at("agent"))}</div>
    ${field("task", "Task", "What the agent should do.", html`<div hx-disable><textarea id="f-task" name="task" rows="4" aria-describedby="hint-task problems-task">${v.task}</textarea></div>`)}
    ${field("root", "Workspace root", "An absolute directory inside a job root; the others lie inside it.", input("root", true))}
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
