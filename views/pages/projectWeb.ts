/**
 * A project's web settings (Projects → a project → Web): which agent ids get `web_search`, the
 * separate `web_fetch` opt-in, the budgets, and the usage counted against them (today and the last
 * days, UTC).
 */
import type { Problem } from "../../src/contract/Problem.ts"
import type { WebSettings, WebUsageDay } from "../../src/web/ProjectWeb.ts"
import { alert, fieldProblems, problemList } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { projectHeader } from "./projects.ts"

export interface ProjectWebForm {
  readonly searchAgents: string
  readonly fetch: boolean
  readonly dailySearches: string
  readonly dailyFetches: string
  readonly jobSearches: string
  readonly jobFetches: string
}

export const projectWebFormOf = (s: WebSettings): ProjectWebForm => ({
  searchAgents: s.searchAgents.join("\n"),
  fetch: s.fetch,
  dailySearches: String(s.dailySearches),
  dailyFetches: String(s.dailyFetches),
  jobSearches: String(s.jobSearches),
  jobFetches: String(s.jobFetches)
})

const BUDGETS = [
  ["dailySearches", "Searches per day (project)"],
  ["dailyFetches", "Page fetches per day (project)"],
  ["jobSearches", "Searches per job"],
  ["jobFetches", "Page fetches per job"]
] as const

const meter = (used: number, budget: number): Html => html`<span data-used="${used}" data-budget="${budget}">${used} of ${budget}</span>`

export const projectWebPage = (
  ctx: PageContext,
  project: { readonly id: string; readonly name: string },
  settings: WebSettings,
  form: ProjectWebForm,
  usage: ReadonlyArray<WebUsageDay>,
  problems: ReadonlyArray<Problem>,
  notice: string | null
): Html => {
  const manage = ctx.viewer?.canManage === true
  const dis = manage ? html`` : html` disabled`
  const byPath = (path: string) => problems.filter((p) => p.path === path || p.path.startsWith(`${path}.`))
  const general = problems.filter((p) => !["searchAgents", "fetch", ...BUDGETS.map(([k]) => k)].includes(p.path.split(".")[0] ?? ""))
  const today = usage[0] ?? { day: "", searches: 0, fetches: 0 }
  const base = `/projects/${encodeURIComponent(project.id)}/web`
  return layout(
    ctx,
    `${project.name}: web`,
    html`
  ${projectHeader(project, "web", notice)}
  <p class="muted">Agents listed here get the optional <code>web_search</code> tool when they ask for it; <code>web_fetch</code> needs the separate opt-in below. Nothing is searched or loaded unless an agent calls a tool.</p>
  ${manage ? html`` : alert("info", "Changing a project's web settings needs the agents.manage permission.")}
  <section class="card stack" aria-labelledby="web-usage">
    <h2 id="web-usage">Usage (UTC)</h2>
    <p>Today (${today.day}): searches ${meter(today.searches, settings.dailySearches)}, page fetches ${meter(today.fetches, settings.dailyFetches)}.</p>
    <table class="catalog" id="web-usage-days">
      <thead><tr><th scope="col">Day</th><th scope="col">Searches</th><th scope="col">Page fetches</th></tr></thead>
      <tbody>${usage.map((d) => html`<tr><td data-label="Day">${d.day}</td><td data-label="Searches">${d.searches}</td><td data-label="Page fetches">${d.fetches}</td></tr>`)}</tbody>
    </table>
  </section>
  <form method="post" action="${base}" class="stack card" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    <h2>Grants and budgets</h2>
    ${general.length === 0 ? html`` : alert("error", problemList(general))}
    <div class="field"><label for="f-searchAgents">Agents granted web search</label>
      <p class="hint" id="hint-searchAgents">Agent ids, one per line. An agent also has to name <code>web_search</code> (or <code>web</code>) in its tools.</p>
      <div hx-disable><textarea id="f-searchAgents" name="searchAgents" rows="4" spellcheck="false" aria-describedby="hint-searchAgents problems-searchAgents"${dis}>${form.searchAgents}</textarea></div>
      ${fieldProblems("searchAgents", byPath("searchAgents"))}</div>
    <div class="field">
      <label class="check"><input type="checkbox" name="fetch" value="1"${form.fetch ? html` checked` : html``}${dis}> Also allow <code>web_fetch</code> (loading public pages) for these agents</label>
      ${alert("warn", "Pages are untrusted text in the agent's context. Private, local and cloud-metadata addresses are always refused.")}
      ${fieldProblems("fetch", byPath("fetch"))}
    </div>
    <div class="grid-2">${BUDGETS.map(
      ([key, label]) => html`<div class="field"><label for="f-${key}">${label}</label>
        <input id="f-${key}" name="${key}" inputmode="numeric" value="${form[key]}" aria-describedby="problems-${key}"${dis}>
        ${fieldProblems(key, byPath(key))}</div>`
    )}</div>
    ${manage ? html`<div class="save-bar"><button type="submit" class="primary">Save web settings</button></div>` : html``}
  </form>`
  )
}
