/**
 * The catalog's query: search words, kind, audience and state filters, an order (by default built-ins
 * first, then custom agents, each by name), a page size and an opaque cursor. The API reads it strictly
 * (every problem at once, 400); the portal leniently (unknown values fall back to the defaults).
 */
import { Either } from "effect"
import type { Problem } from "../contract/Problem.ts"

export const KINDS = ["all", "builtin", "custom"] as const
export const AUDIENCE_FILTERS = ["all", "runtime", "member"] as const
export const STATES = ["all", "valid", "problems", "enabled", "disabled"] as const

const DEFAULT_PAGE_SIZE = 50
const MAX_PAGE_SIZE = 200
const MAX_QUERY_LENGTH = 200

/**
 * The orders of the catalog: `kind` (built-ins first, then custom agents), `name`, `updated` (when the
 * current version was saved; built-ins, which have no date, count as the oldest) and `audience`; ties
 * by name. Each has a default direction: newest first for `updated`, else ascending.
 */
const SORTS = ["kind", "name", "updated", "audience"] as const
export type CatalogSort = (typeof SORTS)[number]
const ORDERS = ["asc", "desc"] as const
export type SortOrder = (typeof ORDERS)[number]
export const defaultOrder = (sort: CatalogSort): SortOrder => (sort === "updated" ? "desc" : "asc")

/** Where the previous page ended: its last entry's sort key and name, in the order it was cut in. */
export interface CatalogCursor {
  readonly sort: CatalogSort
  readonly order: SortOrder
  /** The last entry's sort key: 0/1 (kind), its name, an audience, or the update time in ms (null: a built-in). */
  readonly key: string | number | null
  readonly name: string
}

export interface CatalogQuery {
  readonly q: string
  readonly kind: (typeof KINDS)[number]
  readonly audience: (typeof AUDIENCE_FILTERS)[number]
  readonly state: (typeof STATES)[number]
  readonly sort: CatalogSort
  readonly order: SortOrder
  /** Entries per page; null = every matching entry (`?all=1`). */
  readonly limit: number | null
  readonly cursor: CatalogCursor | null
}

export const ALL_AGENTS: CatalogQuery = {
  q: "",
  kind: "all",
  audience: "all",
  state: "all",
  sort: "kind",
  order: "asc",
  limit: null,
  cursor: null
}

/** The search words, lower-cased: an entry matches when its name or description holds every one. */
export const searchWords = (q: string): Array<string> =>
  q
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== "")

export const isFiltered = (q: CatalogQuery): boolean => q.q.trim() !== "" || q.kind !== "all" || q.audience !== "all" || q.state !== "all"

/** What an entry is sorted on, besides its name. */
export interface Sortable {
  readonly name: string
  readonly builtin: boolean
  readonly audience: string
  readonly updatedAt: Date | null
}

export const sortKey = (e: Sortable, sort: CatalogSort): string | number | null =>
  sort === "kind" ? (e.builtin ? 0 : 1) : sort === "name" ? e.name : sort === "audience" ? e.audience : (e.updatedAt?.getTime() ?? null)

const compareKey = (a: string | number | null, b: string | number | null): number =>
  a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1

/** The catalog order in direction `order`: the sort key that way, then the name ascending. */
export const compareEntries =
  (order: SortOrder) =>
  (
    a: { readonly key: string | number | null; readonly name: string },
    b: { readonly key: string | number | null; readonly name: string }
  ): number =>
    (order === "asc" ? 1 : -1) * compareKey(a.key, b.key) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

const NAME = "([a-z][a-z0-9-]{0,63})"
const LEGACY = new RegExp(`^([bc]):${NAME}$`)
const GENERAL = new RegExp(`^(kind|name|updated|audience)\\.(asc|desc):(|[01]|runtime|member|\\d{1,15}):${NAME}$`)

export const encodeCursor = (c: CatalogCursor): string =>
  Buffer.from(
    c.sort === "kind" && c.order === "asc"
      ? `${c.key === 0 ? "b" : "c"}:${c.name}`
      : `${c.sort}.${c.order}:${c.sort === "name" ? "" : (c.key ?? "")}:${c.name}`,
    "utf8"
  ).toString("base64url")

export const decodeCursor = (raw: string): CatalogCursor | undefined => {
  if (raw.length === 0 || raw.length > 200 || !/^[A-Za-z0-9_-]+$/.test(raw)) return undefined
  const text = Buffer.from(raw, "base64url").toString("utf8")
  const legacy = LEGACY.exec(text)
  if (legacy?.[1] !== undefined && legacy[2] !== undefined)
    return { sort: "kind", order: "asc", key: legacy[1] === "b" ? 0 : 1, name: legacy[2] }
  const m = GENERAL.exec(text)
  if (m === null) return undefined
  const sort = SORTS.find((s) => s === m[1])
  const order = ORDERS.find((o) => o === m[2])
  const rawKey = m[3] ?? ""
  const name = m[4]
  if (sort === undefined || order === undefined || name === undefined) return undefined
  const key =
    sort === "kind"
      ? rawKey === "0"
        ? 0
        : rawKey === "1"
          ? 1
          : undefined
      : sort === "name"
        ? rawKey === ""
          ? name
          : undefined
        : sort === "audience"
          ? rawKey === "runtime" || rawKey === "member"
            ? rawKey
            : undefined
          : rawKey === ""
            ? null
            : /^\d+$/.test(rawKey)
              ? Number(rawKey)
              : undefined
  return key === undefined ? undefined : { sort, order, key, name }
}

/** A stable key of the query, for caches and ETags. */
export const queryKey = (q: CatalogQuery): string =>
  JSON.stringify([
    searchWords(q.q),
    q.kind,
    q.audience,
    q.state,
    q.sort,
    q.order,
    q.limit,
    q.cursor === null ? null : encodeCursor(q.cursor)
  ])

const oneOf = <T extends string>(values: ReadonlyArray<T>, raw: string | null): T | undefined =>
  raw === null ? values[0] : values.find((v) => v === raw)

/**
 * The API's reading of `?q=&kind=&audience=&state=&sort=&order=&limit=&cursor=&all=1`: every problem at once.
 * Without `limit` a page holds DEFAULT_PAGE_SIZE entries; `all=1` returns every match (no paging).
 */
export const parseApiCatalogQuery = (params: URLSearchParams): Either.Either<CatalogQuery, Array<Problem>> => {
  const problems: Array<Problem> = []
  const q = params.get("q") ?? ""
  if (q.length > MAX_QUERY_LENGTH) problems.push({ path: "q", message: `must be at most ${MAX_QUERY_LENGTH} characters` })
  const pick = <T extends string>(name: string, values: ReadonlyArray<T>): T => {
    const v = oneOf(values, params.get(name))
    if (v === undefined) problems.push({ path: name, message: `must be one of ${values.join(", ")}` })
    return v ?? (values[0] as T)
  }
  const kind = pick("kind", KINDS)
  const audience = pick("audience", AUDIENCE_FILTERS)
  const state = pick("state", STATES)
  const sort = pick("sort", SORTS)
  const order = params.get("order") === null ? defaultOrder(sort) : pick("order", ORDERS)
  const allRaw = params.get("all")
  if (allRaw !== null && allRaw !== "1" && allRaw !== "true" && allRaw !== "0" && allRaw !== "false") {
    problems.push({ path: "all", message: "must be 1 or true (every matching agent, no paging), or 0 or false" })
  }
  const all = allRaw === "1" || allRaw === "true"
  const limitRaw = params.get("limit")
  let limit: number | null = all ? null : DEFAULT_PAGE_SIZE
  if (limitRaw !== null) {
    const n = Number(limitRaw)
    if (!/^\d+$/.test(limitRaw) || !Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) {
      problems.push({ path: "limit", message: `must be a whole number from 1 to ${MAX_PAGE_SIZE}` })
    } else if (all) problems.push({ path: "limit", message: "cannot be combined with all=1" })
    else limit = n
  }
  const cursorRaw = params.get("cursor")
  let cursor: CatalogCursor | null = null
  if (cursorRaw !== null && cursorRaw !== "") {
    const c = decodeCursor(cursorRaw)
    if (c === undefined)
      problems.push({ path: "cursor", message: "is not a cursor this catalog handed out (use nextCursor of the previous page)" })
    else if (all) problems.push({ path: "cursor", message: "cannot be combined with all=1" })
    else if (c.sort !== sort || c.order !== order)
      problems.push({ path: "cursor", message: "belongs to another order (keep sort and order as they were for the previous page)" })
    else cursor = c
  }
  return problems.length > 0 ? Either.left(problems) : Either.right({ q, kind, audience, state, sort, order, limit, cursor })
}

/** The portal's lenient reading: unknown filter values are "all", an unknown sort the catalog order, a bad cursor the first page. */
export const parsePortalCatalogQuery = (params: URLSearchParams): CatalogQuery => {
  const cursorRaw = params.get("cursor")
  const sort = oneOf(SORTS, params.get("sort")) ?? "kind"
  const order = oneOf(ORDERS, params.get("order") ?? defaultOrder(sort)) ?? defaultOrder(sort)
  const cursor = cursorRaw === null ? undefined : decodeCursor(cursorRaw)
  return {
    q: (params.get("q") ?? "").slice(0, MAX_QUERY_LENGTH),
    kind: oneOf(KINDS, params.get("kind")) ?? "all",
    audience: oneOf(AUDIENCE_FILTERS, params.get("audience")) ?? "all",
    state: oneOf(STATES, params.get("state")) ?? "all",
    sort,
    order,
    limit: DEFAULT_PAGE_SIZE,
    cursor: cursor !== undefined && cursor.sort === sort && cursor.order === order ? cursor : null
  }
}
