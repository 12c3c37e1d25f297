/**
 * The catalog (/agents): built-in and custom agents with audience, version, validity, enabled state,
 * model binding and last update; search, filters and the column headers' sort links re-render only the
 * results fragment through htmx.
 */
import type { CatalogEntry, CatalogPage } from "../../src/agents/AgentStore.ts"
import {
  AUDIENCE_FILTERS,
  catalogHref,
  defaultOrder,
  isLaterPage,
  KINDS,
  sortHref,
  STATES,
  type CatalogQuery,
  type CatalogSort
} from "../forms/catalogQuery.ts"
import { agentHref, alert, badge, emptyState, pageHeader, problemList, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"

export interface CatalogProps {
  /** The page of entries, with the totals and the next page's cursor (filtered and paged server-side). */
  readonly page: CatalogPage
  readonly query: CatalogQuery
  readonly filtered: boolean
  readonly notice: string | null
}

const LABELS: Readonly<Record<string, string>> = {
  all: "All",
  builtin: "Built-in",
  custom: "Custom",
  runtime: "Runtime",
  member: "Member",
  valid: "Valid",
  problems: "With problems",
  enabled: "Enabled",
  disabled: "Disabled"
}

const select = (name: string, label: string, values: ReadonlyArray<string>, chosen: string): Html => html`
  <div class="field">
    <label for="filter-${name}">${label}</label>
    <select id="filter-${name}" name="${name}">${values.map(
      (v) => html`<option value="${v}"${v === chosen ? html` selected` : html``}>${LABELS[v] ?? v}</option>`
    )}</select>
  </div>`

const binding = (e: CatalogEntry): Html =>
  e.binding === null
    ? html`<span class="muted">not bound</span>`
    : html`<span hx-disable>${e.binding.providerId} / ${e.binding.modelId}${e.binding.thinking === null ? "" : ` (${e.binding.thinking})`}</span>`

const validity = (e: CatalogEntry): Html =>
  e.problems.length === 0
    ? badge("ok", "valid")
    : html`<details class="problem-details"><summary>${badge("error", `${e.problems.length} problem${e.problems.length === 1 ? "" : "s"}`)}</summary>${problemList(e.problems)}</details>`

const row = (e: CatalogEntry): Html => html`
  <tr>
    <td data-label="Agent"><div>
      <a class="agent-name" href="${agentHref(e.name)}">${e.name}</a>
      <div class="description" hx-disable>${e.description}</div>
    </div></td>
    <td data-label="Kind">${e.builtin ? badge("muted", "built-in") : badge("info", "custom")}</td>
    <td data-label="Audience">${e.audience}</td>
    <td data-label="Version">v${e.version}</td>
    <td data-label="Validity">${validity(e)}</td>
    <td data-label="State">${e.enabled ? badge("ok", "enabled") : badge("warn", "disabled")}</td>
    <td data-label="Model">${binding(e)}</td>
    <td data-label="Updated">${e.updatedAt === null ? html`<span class="muted">with the release</span>` : time(e.updatedAt)}</td>
  </tr>`

const pageLink = (query: CatalogQuery, cursor: string | null, label: string, rel: string): Html => {
  const href = catalogHref(query, cursor)
  return html`<a class="button secondary" rel="${rel}" href="${href}" hx-get="${href}" hx-target="#agent-results" hx-push-url="true">${label}</a>`
}

/** First / next page links; the catalog pages by cursor, so there is no page count to jump into. */
const pager = (props: CatalogProps): Html =>
  props.page.nextCursor === null && !isLaterPage(props.query)
    ? html``
    : html`<nav class="pager" aria-label="Catalog pages">
        ${isLaterPage(props.query) ? pageLink(props.query, null, "First page", "first") : html``}
        ${props.page.nextCursor === null ? html`` : pageLink(props.query, props.page.nextCursor, "Next page", "next")}
      </nav>`

/**
 * A column header; a sortable one links to the first page sorted by it (the other way when it is the
 * sort already) and says how the table is sorted (`aria-sort`).
 */
const columnHeader = (query: CatalogQuery, label: string, sort?: CatalogSort): Html => {
  if (sort === undefined) return html`<th scope="col">${label}</th>`
  const current = query.sort === sort
  const href = sortHref(query, sort)
  const next = current ? (query.order === "asc" ? "descending" : "ascending") : defaultOrder(sort) === "asc" ? "ascending" : "descending"
  return html`<th scope="col"${current ? html` aria-sort="${query.order === "asc" ? "ascending" : "descending"}"` : html``}>
    <a class="sort-link" href="${href}" hx-get="${href}" hx-target="#agent-results" hx-push-url="true" title="Sort by ${label.toLowerCase()}, ${next}">${label}<span class="sort-mark" aria-hidden="true">${current ? (query.order === "asc" ? " ↑" : " ↓") : ""}</span></a></th>`
}

/** The order in force, as hidden fields of the search form, so a search keeps it. With `oob`, the htmx swap that updates them. */
const sortFields = (query: CatalogQuery, oob = false): Html => html`
  <div id="catalog-order"${oob ? html` hx-swap-oob="true"` : html``}>${
    query.sort === "kind" ? html`` : html`<input type="hidden" name="sort" value="${query.sort}">`
  }${query.order === defaultOrder(query.sort) ? html`` : html`<input type="hidden" name="order" value="${query.order}">`}</div>`

/** The results as an htmx request gets them (search, filters, a sort link, a page link): the order fields updated out of band. */
export const catalogFragment = (props: CatalogProps): Html => html`${catalogResults(props)}${sortFields(props.query, true)}`

/**
 * The rendered results of a page, by the query and filter flag they were rendered for. A page object is
 * one generation's answer to one query (the store's page cache hands the same object out until the
 * catalog changes), and the results are a function of page, query and flag alone.
 */
const renderedResults = new WeakMap<CatalogPage, Map<string, Html>>()
const MAX_RENDERINGS_PER_PAGE = 16

/** The results: a count, the table (one page) and the pager, or an empty state. Swapped into #agent-results on search. */
const catalogResults = (props: CatalogProps): Html => {
  const key = JSON.stringify([props.query, props.filtered])
  let renderings = renderedResults.get(props.page)
  const hit = renderings?.get(key)
  if (hit !== undefined) return hit
  const rendered = renderResults(props)
  if (renderings === undefined) renderedResults.set(props.page, (renderings = new Map()))
  if (renderings.size >= MAX_RENDERINGS_PER_PAGE) renderings.clear()
  renderings.set(key, rendered)
  return rendered
}

const renderResults = (props: CatalogProps): Html => {
  const { entries, total, matched } = props.page
  const shown = entries.length < matched ? ` (showing ${entries.length} on this page)` : ""
  return html`
  <p class="muted count" role="status">${
    props.filtered ? `${matched} of ${total} agents match${shown}` : `${total} agent${total === 1 ? "" : "s"}${shown}`
  }</p>
  ${
    entries.length === 0
      ? emptyState(
          props.filtered ? "No agent matches these filters." : "No agents yet.",
          props.filtered ? "Try other words, or clear the filters." : "Create one, or import a package.",
          props.filtered ? html`<a class="button secondary" href="/agents">Clear filters</a>` : undefined
        )
      : html`<table class="catalog sortable">
          <thead><tr>${columnHeader(props.query, "Agent", "name")}${columnHeader(props.query, "Kind", "kind")}${columnHeader(props.query, "Audience", "audience")}${columnHeader(props.query, "Version")}${columnHeader(props.query, "Validity")}${columnHeader(props.query, "State")}${columnHeader(props.query, "Model binding")}${columnHeader(props.query, "Updated", "updated")}</tr></thead>
          <tbody>${entries.map(row)}</tbody>
        </table>
        ${pager(props)}`
  }`
}

export const catalogPage = (ctx: PageContext, props: CatalogProps): Html =>
  layout(
    ctx,
    "Agents",
    html`
  ${pageHeader("Agents", {
    meta: html`<p class="muted">Built-in agents ship with the release and are read-only; copy one to change it.</p>`,
    actions:
      ctx.viewer?.canManage === true
        ? html`<a class="button primary" href="/agents/-/new">New agent</a> <a class="button secondary" href="/agents/-/import">Import</a>`
        : html``
  })}
  ${props.notice === null ? html`` : alert("ok", props.notice)}
  <form class="filters" role="search" action="/agents" method="get"
        hx-get="/agents" hx-trigger="input delay:250ms, submit"
        hx-target="#agent-results" hx-push-url="true" hx-sync="this:replace">
    <div class="field grow">
      <label for="filter-q">Search</label>
      <input id="filter-q" type="search" name="q" value="${props.query.q}" placeholder="Name or description" autocomplete="off">
    </div>
    ${select("kind", "Kind", KINDS, props.query.kind)}
    ${select("audience", "Audience", AUDIENCE_FILTERS, props.query.audience)}
    ${select("state", "State", STATES, props.query.state)}
    ${sortFields(props.query)}
    <noscript><button type="submit" class="secondary">Filter</button></noscript>
  </form>
  <div id="agent-results">${catalogResults(props)}</div>`
  )
