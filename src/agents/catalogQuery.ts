/**
 * The catalog's query: search words, kind, audience and state filters, a page size and an opaque
 * cursor (built-ins come first, then custom agents, each by name). The API reads it strictly (every
 * problem at once, 400); the portal leniently (unknown values fall back to "all").
 */
import { Either } from "effect"
import type { Problem } from "../contract/Problem.ts"

export const KINDS = ["all", "builtin", "custom"] as const
export const AUDIENCE_FILTERS = ["all", "runtime", "member"] as const
export const STATES = ["all", "valid", "problems", "enabled", "disabled"] as const

export const DEFAULT_PAGE_SIZE = 50
export const MAX_PAGE_SIZE = 200
export const MAX_QUERY_LENGTH = 200

/** Where the previous page ended: its last entry. */
export interface CatalogCursor {
  readonly builtin: boolean
  readonly name: string
}

export interface CatalogQuery {
  readonly q: string
  readonly kind: (typeof KINDS)[number]
  readonly audience: (typeof AUDIENCE_FILTERS)[number]
  readonly state: (typeof STATES)[number]
  /** Entries per page; null = every matching entry (`?all=1`). */
  readonly limit: number | null
  readonly cursor: CatalogCursor | null
}

export const ALL_AGENTS: CatalogQuery = { q: "", kind: "all", audience: "all", state: "all", limit: null, cursor: null }

/** The search words, lower-cased: an entry matches when its name or description holds every one. */
export const searchWords = (q: string): Array<string> => q.toLowerCase().split(/\s+/).filter((w) => w !== "")

export const isFiltered = (q: CatalogQuery): boolean => q.q.trim() !== "" || q.kind !== "all" || q.audience !== "all" || q.state !== "all"

export const encodeCursor = (c: CatalogCursor): string => Buffer.from(`${c.builtin ? "b" : "c"}:${c.name}`, "utf8").toString("base64url")

export const decodeCursor = (raw: string): CatalogCursor | undefined => {
  if (raw.length === 0 || raw.length > 200 || !/^[A-Za-z0-9_-]+$/.test(raw)) return undefined
  const text = Buffer.from(raw, "base64url").toString("utf8")
  const m = /^([bc]):([a-z][a-z0-9-]{0,63})$/.exec(text)
  return m?.[1] === undefined || m[2] === undefined ? undefined : { builtin: m[1] === "b", name: m[2] }
}

/** A stable key of the query, for caches and ETags. */
export const queryKey = (q: CatalogQuery): string =>
  JSON.stringify([searchWords(q.q), q.kind, q.audience, q.state, q.limit, q.cursor === null ? null : encodeCursor(q.cursor)])

const oneOf = <T extends string>(values: ReadonlyArray<T>, raw: string | null): T | undefined =>
  raw === null ? values[0] : values.find((v) => v === raw)

/**
 * The API's reading of `?q=&kind=&audience=&state=&limit=&cursor=&all=1`: every problem at once.
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
    if (c === undefined) problems.push({ path: "cursor", message: "is not a cursor this catalog handed out (use nextCursor of the previous page)" })
    else if (all) problems.push({ path: "cursor", message: "cannot be combined with all=1" })
    else cursor = c
  }
  return problems.length > 0 ? Either.left(problems) : Either.right({ q, kind, audience, state, limit, cursor })
}

/** The portal's lenient reading: unknown filter values are "all", a bad cursor is the first page. */
export const parsePortalCatalogQuery = (params: URLSearchParams): CatalogQuery => {
  const cursorRaw = params.get("cursor")
  return {
    q: (params.get("q") ?? "").slice(0, MAX_QUERY_LENGTH),
    kind: oneOf(KINDS, params.get("kind")) ?? "all",
    audience: oneOf(AUDIENCE_FILTERS, params.get("audience")) ?? "all",
    state: oneOf(STATES, params.get("state")) ?? "all",
    limit: DEFAULT_PAGE_SIZE,
    cursor: cursorRaw === null ? null : (decodeCursor(cursorRaw) ?? null)
  }
}
