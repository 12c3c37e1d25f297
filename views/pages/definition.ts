/**
 * The job definition a job would get for this agent now (resolveAgentDefinition): the kernel's view
 * of it, or the reason it cannot run. User text escaped and inside hx-disable.
 */
import type { AgentView } from "../../src/agents/AgentStore.ts"
import type { AgentDefinition } from "../../src/contract/AgentDefinition.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import { alert, problemList } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"
import { agentHeader } from "./agentHeader.ts"

export type DefinitionResult =
  | { readonly ok: true; readonly definition: AgentDefinition }
  | { readonly ok: false; readonly message: string; readonly problems: ReadonlyArray<Problem> }

const codeList = (items: ReadonlyArray<string> | undefined, none: string): Html =>
  items === undefined ? html`<span class="muted">${none}</span>` : items.length === 0 ? html`<span class="muted">none</span>` : html`<ul class="inline-list">${items.map((t) => html`<li><code>${t}</code></li>`)}</ul>`

const definitionView = (d: AgentDefinition): Html => html`
  <section class="card" hx-disable>
    <h2>What the kernel receives</h2>
    <dl class="facts">
      <dt>id</dt><dd><code>${d.id}</code></dd>
      <dt>version</dt><dd>${String(d.version)}</dd>
      <dt>tools</dt><dd>${codeList(d.tools, "every kernel tool")}</dd>
      <dt>thinking</dt><dd>${d.thinking ?? html`<span class="muted">not set</span>`}</dd>
      <dt>denyCommandPatterns</dt><dd>${codeList(d.denyCommandPatterns, "none")}</dd>
      <dt>skills</dt><dd>${(d.skills ?? []).length === 0 ? html`<span class="muted">none</span>` : html`${(d.skills ?? []).length}, in prompt order`}</dd>
    </dl>
    ${(d.skills ?? []).map(
      (s) => html`<details class="file-block"><summary><code>${s.name}</code></summary><pre class="code">${s.content}</pre></details>`
    )}
    <h3>instructions</h3>
    <pre class="code instructions">${d.instructions}</pre>
    <details class="file-block"><summary>As JSON</summary><pre class="code">${JSON.stringify(d, null, 2)}</pre></details>
  </section>`

export const definitionPage = (ctx: PageContext, agent: AgentView, result: DefinitionResult): Html =>
  layout(
    ctx,
    `${agent.name}: job definition`,
    html`
  ${agentHeader(ctx, agent, "definition", null)}
  <p class="muted">A job that names this agent gets this definition now: the current version, with shared skills as they are today.</p>
  ${result.ok ? definitionView(result.definition) : alert("error", html`<span hx-disable>${result.message}</span>${problemList(result.problems)}`, "No job can run this agent now.")}`
  )
