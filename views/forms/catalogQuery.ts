/**
 * The catalog's search, filters and page: read leniently from the query string (unknown values fall
 * back to "all", a bad cursor to the first page). Filtering and paging happen in the store, server-side.
 */
import { type CatalogQuery, type CatalogSort, defaultOrder, parsePortalCatalogQuery } from "../../src/agents/catalogQuery.ts"

export {
  AUDIENCE_FILTERS,
  defaultOrder,
  isFiltered,
  KINDS,
  STATES,
  type CatalogQuery,
  type CatalogSort
} from "../../src/agents/catalogQuery.ts"

export const parseCatalogQuery = parsePortalCatalogQuery

/** The /agents URL of `q`'s filters and order, at `cursor` (an encoded nextCursor) or the first page. */
export const catalogHref = (q: CatalogQuery, cursor: string | null): string => {
  const params = new URLSearchParams()
  if (q.q.trim() !== "") params.set("q", q.q)
  if (q.kind !== "all") params.set("kind", q.kind)
  if (q.audience !== "all") params.set("audience", q.audience)
  if (q.state !== "all") params.set("state", q.state)
  if (q.sort !== "kind") params.set("sort", q.sort)
  if (q.order !== defaultOrder(q.sort)) params.set("order", q.order)
  if (cursor !== null) params.set("cursor", cursor)
  const s = params.toString()
  return s === "" ? "/agents" : `/agents?${s}`
}

/** Whether the page shown is not the first one. */
export const isLaterPage = (q: CatalogQuery): boolean => q.cursor !== null

/**
 * The first page of `q`'s filters sorted by `sort`: in the sort's own direction, or the other way when
 * the catalog is sorted by it already (a column header's link).
 */
export const sortHref = (q: CatalogQuery, sort: CatalogSort): string =>
  catalogHref({ ...q, sort, order: q.sort === sort ? (q.order === "asc" ? "desc" : "asc") : defaultOrder(sort) }, null)
