/** Catalog search and filters. */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import type { CatalogEntry } from "../../src/agents/AgentStore.ts"
import { filterCatalog, isFiltered, parseCatalogQuery } from "../../views/forms/catalogQuery.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const entry = (name: string, over: Partial<CatalogEntry> = {}): CatalogEntry => ({
  name,
  builtin: false,
  description: `${name} agent`,
  audience: "runtime",
  version: 1,
  enabled: true,
  problems: [],
  binding: null,
  updatedAt: null,
  ...over
})

const entries = [
  entry("codebase-inventory", { builtin: true, description: "Surveys a codebase" }),
  entry("release-notes", { description: "Writes Release notes" }),
  entry("helper", { audience: "member", enabled: false }),
  entry("broken", { problems: [{ path: "broken.md#tools.0", message: "unknown tool" }] })
]
const names = (q: string) => filterCatalog(entries, parseCatalogQuery(new URLSearchParams(q))).map((e) => e.name)

describe("catalog query", () => {
  test("search matches every word in name or description, ignoring case", () => {
    expect(names("q=NOTES")).toEqual(["release-notes"])
    expect(names("q=surveys+codebase")).toEqual(["codebase-inventory"])
    expect(names("q=surveys+notes")).toEqual([])
    expect(names("")).toEqual(entries.map((e) => e.name))
  })

  test("filters by kind, audience and state; unknown values mean all", () => {
    expect(names("kind=builtin")).toEqual(["codebase-inventory"])
    expect(names("kind=custom&audience=member")).toEqual(["helper"])
    expect(names("state=problems")).toEqual(["broken"])
    expect(names("state=disabled")).toEqual(["helper"])
    expect(names("state=valid&kind=custom")).toEqual(["release-notes", "helper"])
    expect(names("kind=<script>&state=nope")).toEqual(entries.map((e) => e.name))
    expect(isFiltered(parseCatalogQuery(new URLSearchParams("kind=all&q=+")))).toBe(false)
    expect(isFiltered(parseCatalogQuery(new URLSearchParams("state=enabled")))).toBe(true)
  })
})
