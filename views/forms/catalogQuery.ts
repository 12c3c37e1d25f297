/**
 * The catalog's search, filters and page: read leniently from the query string (unknown values fall
 * back to "all", a bad cursor to the first page). Filtering and paging happen in the store, server-side.
 */
import { type CatalogQuery, parsePortalCatalogQuery } from "../../src/agents/catalogQuery.ts"

export { AUDIENCE_FILTERS, isFiltered, KINDS, STATES, type CatalogQuery } from "../../src/agents/catalogQuery.ts"

export const parseCatalogQuery = parsePortalCatalogQuery

/** The /agents URL of `q`'s filters, at `cursor` (an encoded nextCursor) or the first page. */
export const catalogHref = (q: CatalogQuery, cursor: string | null): string => {
  const params = new URLSearchParams()
  if (q.q.trim() !== "") params.set("q", q.q)
  if (q.kind !== "all") params.set("kind", q.kind)
  if (q.audience !== "all") params.set("audience", q.audience)
  if (q.state !== "all") params.set("state", q.state)
  if (cursor !== null) params.set("cursor", cursor)
  const s = params.toString()
  return s === "" ? "/agents" : `/agents?${s}`
}

/** Whether the page shown is not the first one. */
export const isLaterPage = (q: CatalogQuery): boolean => q.cursor !== null
