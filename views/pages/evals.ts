/**
 * The agent's Evaluations tab (docs/evals.md): run a version's evals, and two versions' latest runs side
 * by side — pass/fail, cost, duration and grounding per eval, each failing eval's problems. While a shown
 * run is still going the comparison reloads itself.
 */
import type { AgentView } from "../../src/agents/AgentStore.ts"
import type { EvalResult, EvalRun } from "../../src/agents/evalRepo.ts"
import { agentHref, alert, badge, emptyState, time, usd } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { agentHeader } from "./agentHeader.ts"
import { versionSelect } from "./versions.ts"

export interface EvalSide {
  readonly version: number
  /** The version's latest run, if it has one. */
  readonly run: EvalRun | undefined
}

export interface EvalsProps {
  readonly agent: AgentView
  /** Versions that can be evaluated, newest first, and whether each is current. */
  readonly versions: ReadonlyArray<{ readonly version: number; readonly current: boolean }>
  readonly a: EvalSide
  readonly b: EvalSide
  readonly notice: string | null
}

const runStatus = (run: EvalRun | undefined): Html =>
  run === undefined
    ? badge("muted", "not run")
    : badge(run.status === "passed" ? "ok" : run.status === "failed" || run.status === "error" ? "error" : "info", run.status)

const resultCells = (version: number, r: EvalResult | undefined): Html =>
  r === undefined
    ? html`<td data-label="v${version}" colspan="4" class="muted">—</td>`
    : html`<td data-label="v${version} result">${r.passed ? badge("ok", "pass") : badge("error", "fail")}${
        r.problems.length === 0 ? html`` : html`<ul class="eval-problems">${r.problems.map((p) => html`<li>${p}</li>`)}</ul>`
      }</td>
      <td data-label="v${version} cost">${usd(r.costUsd)}</td>
      <td data-label="v${version} duration">${(r.durationMs / 1000).toFixed(1)} s</td>
      <td data-label="v${version} grounding">${r.grounding === null ? "—" : `${r.grounding.grounded} / ${r.grounding.ungrounded} / ${r.grounding.unknown}`}</td>`

const sideHeader = (s: EvalSide): Html =>
  html`<th scope="colgroup" colspan="4">v${s.version} ${runStatus(s.run)}${
    s.run === undefined ? html`` : html` <span class="muted">${s.run.startedBy}, ${time(s.run.startedAt)}</span>`
  }</th>`

/** The two versions' latest runs side by side; reloads itself while one is waiting or running. */
const evalCompare = (name: string, a: EvalSide, b: EvalSide): Html => {
  const live = [a.run, b.run].some((r) => r !== undefined && (r.status === "running" || r.status === "waiting"))
  const url = agentHref(name, `/evals?a=${a.version}&b=${b.version}`)
  const names = [...new Set([...(a.run?.results ?? []), ...(b.run?.results ?? [])].map((r) => r.eval))].sort()
  const find = (s: EvalSide, n: string) => s.run?.results.find((r) => r.eval === n)
  return html`
  <div id="eval-compare"${live ? html` hx-get="${url}" hx-trigger="every 2s" hx-select="#eval-compare" hx-swap="outerHTML"` : html``}>
    ${
      names.length === 0 && !live
        ? emptyState("No results yet.", "Run the evals of a version to see its results here.")
        : html`<div class="table-scroll" role="region" aria-label="Results of v${a.version} and v${b.version}" tabindex="0"><table class="eval-compare">
      <thead>
        <tr><th scope="col" rowspan="2">Eval</th>${sideHeader(a)}${sideHeader(b)}</tr>
        <tr>${[a, b].map(() => html`<th scope="col">Result</th><th scope="col">Cost</th><th scope="col">Duration</th><th scope="col"><abbr title="grounded / ungrounded / unknown citations">Grounding</abbr></th>`)}</tr>
      </thead>
      <tbody hx-disable>${names.map((n) => html`<tr data-eval="${n}"><th scope="row">${n}</th>${resultCells(a.version, find(a, n))}${resultCells(b.version, find(b, n))}</tr>`)}</tbody>
    </table></div>`
    }
    ${[a, b].map((s) => (s.run === undefined || s.run.message === "" ? html`` : html`<p class="muted">v${s.version}: ${s.run.message}</p>`))}
  </div>`
}

export const evalsPage = (ctx: PageContext, props: EvalsProps): Html => {
  const { agent } = props
  const manage = ctx.viewer?.canManage === true
  const gate = agent.gate
  return layout(
    ctx,
    `${agent.name}: evaluations`,
    html`
  ${agentHeader(ctx, agent, "evals", props.notice)}
  ${
    gate === undefined
      ? html``
      : alert(
          gate.status === "failed" || gate.status === "error" ? "error" : "info",
          html`Version ${gate.version} is saved but not current: ${gate.status === "failed" || gate.status === "error" ? gate.message : "its evals are running."}`,
          "Gated version"
        )
  }
  ${
    manage
      ? html`<section class="card">
    <h2>Run evaluations</h2>
    <p class="muted">Each eval runs as a job of this agent on its model binding, pinned to the version chosen.</p>
    <form class="diff-form" method="post" action="${agentHref(agent.name, "/evals")}">
      ${csrfField(ctx)}
      ${versionSelect("eval-version", "Version", props.versions, props.b.version, "version")}
      <button type="submit" class="primary">Run evals</button>
    </form>
  </section>`
      : html``
  }
  <section class="card">
    <h2>Compare versions</h2>
    <form class="diff-form" method="get" action="${agentHref(agent.name, "/evals")}">
      ${versionSelect("eval-a", "Left", props.versions, props.a.version, "a")}
      ${versionSelect("eval-b", "Right", props.versions, props.b.version, "b")}
      <button type="submit" class="secondary">Compare</button>
    </form>
    ${evalCompare(agent.name, props.a, props.b)}
  </section>`
  )
}
