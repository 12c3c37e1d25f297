/**
 * The job definition a job would get for this agent now (resolveAgentDefinition) and the model and
 * thinking level it would really run at (the binding, the kernel's clamp), or the reason it cannot run.
 * User text escaped and inside hx-disable.
 */
import type { AgentView } from "../../src/agents/AgentStore.ts"
import type { AgentDefinition } from "../../src/contract/AgentDefinition.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import type { JobModel } from "../../src/providers/jobModelFor.ts"
import { agentHref, alert, problemList } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"
import { agentHeader } from "./agentHeader.ts"

export type DefinitionResult =
  | { readonly ok: true; readonly definition: AgentDefinition; readonly model: JobModel }
  | { readonly ok: false; readonly message: string; readonly problems: ReadonlyArray<Problem> }

const codeList = (items: ReadonlyArray<string> | undefined, none: string): Html =>
  items === undefined
    ? html`<span class="muted">${none}</span>`
    : items.length === 0
      ? html`<span class="muted">none</span>`
      : html`<ul class="inline-list">${items.map((t) => html`<li><code>${t}</code></li>`)}</ul>`

const definitionView = (d: AgentDefinition): Html => html`
  <section class="card" hx-disable>
    <h2>What the kernel receives</h2>
    <dl class="facts">
      <dt>id</dt><dd><code>${d.id}</code></dd>
      <dt>version</dt><dd>${String(d.version)}</dd>
      <dt>tools</dt><dd>${codeList(d.tools, "every kernel tool")}</dd>
      <dt>thinking (the agent's default)</dt><dd>${d.thinking ?? html`<span class="muted">not set</span>`}</dd>
      <dt>denyCommandPatterns</dt><dd>${codeList(d.denyCommandPatterns, "none")}</dd>
      <dt>skills</dt><dd>${(d.skills ?? []).length === 0 ? html`<span class="muted">none</span>` : html`${(d.skills ?? []).length}, in prompt order`}</dd>
      <dt>answer</dt><dd id="definition-answer">${
        d.answer === undefined
          ? html`<span class="muted">free text (no typed answer)</span>`
          : html`JSON valid against <code>${d.answer.schema}</code>`
      }</dd>
    </dl>
    ${
      d.answer === undefined
        ? html``
        : html`<details class="file-block"><summary>answer schema <code>${d.answer.schema}</code></summary><pre class="code">${d.answer.schemaText}</pre></details>`
    }
    ${(d.skills ?? []).map(
      (s) => html`<details class="file-block"><summary><code>${s.name}</code></summary><pre class="code">${s.content}</pre></details>`
    )}
    <h3>instructions</h3>
    <pre class="code instructions">${d.instructions}</pre>
    <details class="file-block"><summary>As JSON</summary><pre class="code">${JSON.stringify(d, null, 2)}</pre></details>
  </section>`

export interface DefinitionProject {
  readonly id: string
  readonly name: string
}

const FROM: Record<NonNullable<JobModel["thinking"]>["requestedFrom"], string> = {
  binding: "the binding's level, which overrides the agent's",
  agent: "the agent's default; the binding sets none",
  default: "neither the binding nor the agent sets one: off"
}

const THINKING_RULE =
  "A level the model lacks is clamped to the nearest one it has on off < minimal < low < medium < high < xhigh < max (off counts as a level; a tie goes to the lower)."

const projectForm = (agent: string, projects: ReadonlyArray<DefinitionProject>, current: string): Html =>
  projects.length === 0
    ? html``
    : html`<form class="diff-form" method="get" action="${agentHref(agent, "/definition")}">
        <div class="field"><label for="f-project">For a job in</label>
          <select id="f-project" name="project">
            <option value="">no project (installation default)</option>
            ${projects.map((p) => html`<option value="${p.id}"${p.id === current ? html` selected` : html``}>project ${p.name} (${p.id})</option>`)}
          </select></div>
        <button type="submit" class="secondary">Show</button>
      </form>`

/** The binding a job would use and the thinking level it would really get on that model. */
const modelView = (agent: string, m: JobModel, projects: ReadonlyArray<DefinitionProject>): Html => html`
  <section class="card" id="job-model" hx-disable>
    <h2>The model a job runs on</h2>
    ${projectForm(agent, projects, m.projectId)}
    ${
      m.binding === null
        ? alert(
            "warn",
            html`${m.problem ?? "no binding"}. Set one under <a href="${agentHref(agent, "/binding")}">Model</a>.`,
            "Not bound."
          )
        : html`<dl class="facts">
      <dt>model</dt><dd><code>${m.binding.providerId} / ${m.binding.modelId}</code>
        <span class="muted">(${m.binding.projectId === "" ? "the installation default binding" : `project ${m.binding.projectId}'s binding`})</span></dd>
      ${m.modelLevels === null ? html`` : html`<dt>the model's thinking levels</dt><dd>${m.modelLevels.join(", ")}</dd>`}
      ${
        m.thinking === null
          ? html``
          : html`<dt>thinking requested</dt><dd>${m.thinking.requested} <span class="muted">(${FROM[m.thinking.requestedFrom]})</span></dd>
      <dt>thinking the job gets</dt><dd><strong>${m.thinking.effective}</strong>${
        m.thinking.clamped === "none"
          ? html``
          : html` <span class="muted">(the model has no ${m.thinking.requested}: moved ${m.thinking.clamped} to the nearest level it has)</span>`
      }</dd>`
      }
    </dl>
    ${m.thinking === null ? html`` : html`<p class="muted">${THINKING_RULE}</p>`}
    ${m.problem === null ? html`` : alert("error", m.problem, "No job can run on this binding now.")}`
    }
  </section>`

export const definitionPage = (
  ctx: PageContext,
  agent: AgentView,
  result: DefinitionResult,
  projects: ReadonlyArray<DefinitionProject> = []
): Html =>
  layout(
    ctx,
    `${agent.name}: job definition`,
    html`
  ${agentHeader(ctx, agent, "definition", null)}
  <p class="muted">A job that names this agent gets this definition now: the current version, with shared skills as they are today, on the model its binding names.</p>
  ${
    result.ok
      ? html`${modelView(agent.name, result.model, projects)}${definitionView(result.definition)}`
      : alert("error", html`<span hx-disable>${result.message}</span>${problemList(result.problems)}`, "No job can run this agent now.")
  }`
  )
