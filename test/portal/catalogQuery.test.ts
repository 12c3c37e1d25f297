/** The portal's reading of the catalog query string (the filtering itself is the store's: test/http/catalog.test.ts). */
import { describe, expect, test } from "bun:test"
import { decodeCursor, encodeCursor } from "../../src/agents/catalogQuery.ts"
import { catalogHref, isFiltered, parseCatalogQuery } from "../../views/forms/catalogQuery.ts"

const parse = (q: string) => parseCatalogQuery(new URLSearchParams(q))

describe("catalog query", () => {
  test("filters are read; unknown values mean all; the page size is fixed", () => {
    expect(parse("q=notes&kind=custom&audience=member&state=problems")).toEqual({
      q: "notes",
      kind: "custom",
      audience: "member",
      state: "problems",
      limit: 50,
      cursor: null
    })
    expect(parse("kind=<script>&state=nope&audience=")).toMatchObject({ kind: "all", state: "all", audience: "all" })
    expect(parse(`q=${"x".repeat(500)}`).q.length).toBe(200)
    expect(isFiltered(parse("kind=all&q=+"))).toBe(false)
    expect(isFiltered(parse("state=enabled"))).toBe(true)
  })

  test("a cursor round-trips; a forged or broken one is the first page", () => {
    const cursor = encodeCursor({ builtin: false, name: "release-notes" })
    expect(decodeCursor(cursor)).toEqual({ builtin: false, name: "release-notes" })
    expect(parse(`cursor=${cursor}`).cursor).toEqual({ builtin: false, name: "release-notes" })
    expect(parse("cursor=%3Cscript%3E").cursor).toBeNull()
    expect(parse(`cursor=${Buffer.from("c:Bad Name").toString("base64url")}`).cursor).toBeNull()
    expect(parse(`cursor=${Buffer.from("x:ok").toString("base64url")}`).cursor).toBeNull()
  })

  test("page links keep the filters and drop defaults", () => {
    expect(catalogHref(parse(""), null)).toBe("/agents")
    expect(catalogHref(parse("q=a b&kind=custom&state=all"), "Yzp4")).toBe("/agents?q=a+b&kind=custom&cursor=Yzp4")
  })
})
