/** The catalog's search and filters: read from the query string (unknown values fall back to "all"), applied to the entries. */
import type { CatalogEntry } from "../../src/agents/AgentStore.ts"

export const KINDS = ["all", "builtin", "custom"] as const
export const AUDIENCE_FILTERS = ["all", "runtime", "member"] as const
export const STATES = ["all", "valid", "problems", "enabled", "disabled"] as const

export interface CatalogQuery {
  readonly q: string
  readonly kind: (typeof KINDS)[number]
  readonly audience: (typeof AUDIENCE_FILTERS)[number]
  readonly state: (typeof STATES)[number]
}

const oneOf = <T extends string>(values: ReadonlyArray<T>, raw: string | null): T =>
  values.find((v) => v === raw) ?? (values[0] as T)

export const parseCatalogQuery = (params: URLSearchParams): CatalogQuery => ({
  q: (params.get("q") ?? "").slice(0, 200),
  kind: oneOf(KINDS, params.get("kind")),
  audience: oneOf(AUDIENCE_FILTERS, params.get("audience")),
  state: oneOf(STATES, params.get("state"))
})

export const isFiltered = (q: CatalogQuery): boolean => q.q.trim() !== "" || q.kind !== "all" || q.audience !== "all" || q.state !== "all"

/** Entries matching every filter; the search looks at name and description, case-insensitively, all words. */
export const filterCatalog = (entries: ReadonlyArray<CatalogEntry>, q: CatalogQuery): Array<CatalogEntry> => {
  const words = q.q.toLowerCase().split(/\s+/).filter((w) => w !== "")
  return entries.filter((e) => {
    const text = `${e.name} ${e.description}`.toLowerCase()
    if (!words.every((w) => text.includes(w))) return false
    if (q.kind !== "all" && e.builtin !== (q.kind === "builtin")) return false
    if (q.audience !== "all" && e.audience !== q.audience) return false
    switch (q.state) {
      case "all":
        return true
      case "valid":
        return e.problems.length === 0
      case "problems":
        return e.problems.length > 0
      case "enabled":
        return e.enabled
      case "disabled":
        return !e.enabled
    }
  })
}
