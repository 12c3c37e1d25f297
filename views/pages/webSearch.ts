/**
 * Web search (Settings → Web search): the installation's one search backend, SearXNG or Brave Search.
 * The API key is write-only: the page says only whether one is stored. A "test" action sends one query
 * with the stored settings and shows how many results came back, or why none did.
 */
import type { WebSearchTest, WebSearchView } from "../../src/web/WebSearch.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import { alert, canManageProviders, fieldProblems, pageHeader, problemList, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export interface WebSearchForm {
  readonly kind: string
  readonly url: string
}

const byPath = (problems: ReadonlyArray<Problem>, path: string) => problems.filter((p) => p.path === path)

/** The outcome of the test action (an htmx fragment, or part of the page after a plain POST). */
export const webSearchTestFragment = (result: WebSearchTest): Html =>
  html`<div id="web-search-test">${
    result.ok
      ? alert("ok", `The backend answered: ${result.results} result${result.results === 1 ? "" : "s"} for the test query.`)
      : alert("error", `The backend did not answer usefully: ${result.problem ?? "unknown problem"}`)
  }</div>`

export const webSearchPage = (
  ctx: PageContext,
  backend: WebSearchView | null,
  form: WebSearchForm,
  problems: ReadonlyArray<Problem>,
  notice: string | null,
  test: WebSearchTest | null = null
): Html => {
  const manage = canManageProviders(ctx.viewer)
  const dis = manage ? html`` : html` disabled`
  const general = problems.filter((p) => !["kind", "url", "apiKey"].includes(p.path))
  return layout(
    ctx,
    "Web search",
    html`
  ${pageHeader("Web search", {
    meta: html`<p class="muted">The backend behind the optional <code>web_search</code> tool. Projects decide which agents get it (a project's Web settings); nothing is searched unless an agent calls the tool.</p>`
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  ${manage ? html`` : alert("info", "Changing the web search backend needs the providers.manage permission.")}
  <section class="card stack" aria-labelledby="current-backend">
    <h2 id="current-backend">Current backend</h2>
    ${
      backend === null
        ? html`<p class="muted" data-backend="none">No backend registered: agents granted web search get no <code>web_search</code> tool.</p>`
        : html`<dl class="facts" data-backend="${backend.kind}">
          <dt>Kind</dt><dd>${backend.kind === "brave" ? "Brave Search" : "SearXNG"}</dd>
          <dt>URL</dt><dd><code>${backend.url}</code></dd>
          <dt>API key</dt><dd>${backend.hasApiKey ? "stored (never shown)" : "none"}</dd>
          <dt>Updated</dt><dd>${time(backend.updatedAt)} by ${backend.updatedBy}</dd>
        </dl>`
    }
    ${
      backend !== null && manage
        ? html`<form method="post" action="/web-search/test" hx-post="/web-search/test" hx-target="#web-search-test" hx-swap="outerHTML" class="inline">
            ${csrfField(ctx)}<button type="submit" class="secondary">Test</button></form>
          ${test === null ? html`<div id="web-search-test"></div>` : webSearchTestFragment(test)}
          <form method="post" action="/web-search/delete" class="inline">${csrfField(ctx)}<button type="submit" class="danger small">Remove backend</button></form>`
        : html``
    }
  </section>
  <form method="post" action="/web-search" class="stack card" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    <h2>${backend === null ? "Register a backend" : "Change the backend"}</h2>
    ${general.length === 0 ? html`` : alert("error", problemList(general))}
    <div class="field"><label for="f-kind">Kind</label>
      <select id="f-kind" name="kind" aria-describedby="problems-kind"${dis}>
        <option value="searxng"${form.kind === "searxng" ? html` selected` : html``}>SearXNG (JSON API)</option>
        <option value="brave"${form.kind === "brave" ? html` selected` : html``}>Brave Search API</option>
      </select>
      ${fieldProblems("kind", byPath(problems, "kind"))}</div>
    <div class="field"><label for="f-url">URL</label>
      <p class="hint" id="hint-url">SearXNG: the instance's base URL (its <code>/search?format=json</code> must be enabled). Brave: <code>https://api.search.brave.com</code>. A private address is allowed here: it is your choice; pages fetched for agents never may.</p>
      <input id="f-url" name="url" type="url" value="${form.url}" autocomplete="off" spellcheck="false" aria-describedby="hint-url problems-url"${dis}>
      ${fieldProblems("url", byPath(problems, "url"))}</div>
    <div class="field"><label for="f-apiKey">API key (write-only)</label>
      <p class="hint" id="hint-apiKey">Required for Brave; stored encrypted and never shown. Leave empty to keep the stored key.</p>
      <input id="f-apiKey" name="apiKey" type="password" value="" autocomplete="new-password" placeholder="${backend?.hasApiKey === true ? "stored; type to replace" : ""}" aria-describedby="hint-apiKey problems-apiKey"${dis}>
      ${fieldProblems("apiKey", byPath(problems, "apiKey"))}</div>
    ${manage ? html`<div class="save-bar"><button type="submit" class="primary">Save backend</button></div>` : html``}
  </form>`
  )
}
