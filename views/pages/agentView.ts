/**
 * An agent read-only: built-ins, viewers without agents.manage, and saved versions. The same content
 * as the editor, as text; every piece of user text escaped and inside hx-disable.
 */
import type { AgentPackage } from "../../src/agents/AgentPackage.ts"
import type { AgentView } from "../../src/agents/AgentStore.ts"
import { alert, problemList, skillHref } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"
import { agentHeader, type CopyRefusal } from "./agentHeader.ts"

const list = (items: ReadonlyArray<string> | undefined, none: string, item: (s: string) => Html = (s) => html`<code>${s}</code>`): Html =>
  items === undefined || items.length === 0
    ? html`<span class="muted">${none}</span>`
    : html`<ul class="inline-list">${items.map((s) => html`<li>${item(s)}</li>`)}</ul>`

const fileBlock = (title: string, content: string): Html => html`
  <details class="file-block">
    <summary><code>${title}</code></summary>
    <pre class="code" hx-disable>${content}</pre>
  </details>`

/** The package as a definition list and text blocks. */
export const packageDetails = (pkg: AgentPackage): Html => html`
  <section class="card" hx-disable>
    <h2>Manifest</h2>
    <dl class="facts">
      <dt>Description</dt><dd>${pkg.description}</dd>
      <dt>Audience</dt><dd>${pkg.audience}</dd>
      <dt>Tools</dt><dd>${pkg.tools === undefined ? html`every kernel tool (no <code>tools</code> key)` : list(pkg.tools, "none")}</dd>
      <dt>Shared skills</dt><dd>${list(pkg.skills, "none", (s) => html`<a href="${skillHref(s)}"><code>${s}</code></a>`)}</dd>
      <dt>Thinking</dt><dd>${pkg.thinking ?? html`<span class="muted">not set</span>`}</dd>
      <dt>Deny-command patterns</dt><dd>${list(pkg.denyCommandPatterns, "none")}</dd>
    </dl>
  </section>
  <section class="card">
    <h2>Instructions</h2>
    <pre class="code instructions" hx-disable>${pkg.instructions}</pre>
  </section>
  <section class="card">
    <h2>Local skills</h2>
    ${pkg.localSkills.length === 0 ? html`<p class="muted">None.</p>` : pkg.localSkills.map((s) => fileBlock(`skills/${s.name}/SKILL.md`, s.content))}
  </section>
  <section class="card">
    <h2>Package files</h2>
    ${pkg.files.length === 0 ? html`<p class="muted">None.</p>` : pkg.files.map((f) => fileBlock(f.path, f.content))}
  </section>`

export const agentReadOnlyPage = (ctx: PageContext, agent: AgentView, notice: string | null, copy: CopyRefusal | null = null): Html =>
  layout(
    ctx,
    agent.name,
    html`
  ${agentHeader(ctx, agent, "agent", notice, copy)}
  ${agent.problems.length === 0 ? html`` : alert("error", problemList(agent.problems), "This agent cannot run here:")}
  ${packageDetails(agent.package)}`
  )
