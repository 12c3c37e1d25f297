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
      sort: "kind",
      order: "asc",
      limit: 50,
      cursor: null
    })
    expect(parse("kind=<script>&state=nope&audience=")).toMatchObject({ kind: "all", state: "all", audience: "all" })
    expect(parse(`q=${"x".repeat(500)}`).q.length).toBe(200)
    expect(isFiltered(parse("kind=all&q=+"))).toBe(false)
    expect(isFiltered(parse("state=enabled"))).toBe(true)
  })

  test("a cursor round-trips; a forged or broken one is the first page", () => {
    const cursor = encodeCursor({ sort: "kind", order: "asc", key: 1, name: "release-notes" })
    expect(decodeCursor(cursor)).toEqual({ sort: "kind", order: "asc", key: 1, name: "release-notes" })
    expect(parse(`cursor=${cursor}`).cursor).toEqual({ sort: "kind", order: "asc", key: 1, name: "release-notes" })
    // The first cursors handed out (built-in or custom, then the name) still read as the catalog order.
    expect(decodeCursor(Buffer.from("b:reviewer").toString("base64url"))).toEqual({ sort: "kind", order: "asc", key: 0, name: "reviewer" })
    for (const c of [
      { sort: "updated", order: "desc", key: 1_767_225_600_000, name: "a-b" },
      { sort: "updated", order: "asc", key: null, name: "reviewer" },
      { sort: "audience", order: "asc", key: "member", name: "x" },
      { sort: "name", order: "desc", key: "z9", name: "z9" }
    ] as const)
      expect(decodeCursor(encodeCursor(c))).toEqual(c)
    // A cursor of another order is the first page of this one.
    expect(parse(`sort=name&cursor=${cursor}`).cursor).toBeNull()
    expect(parse(`sort=updated&cursor=${encodeCursor({ sort: "updated", order: "desc", key: null, name: "x" })}`).cursor).toEqual({
      sort: "updated",
      order: "desc",
      key: null,
      name: "x"
    })
    expect(decodeCursor(Buffer.from("audience.asc:robots:x").toString("base64url"))).toBeUndefined()
    expect(parse("cursor=%3Cscript%3E").cursor).toBeNull()
    expect(parse(`cursor=${Buffer.from("c:Bad Name").toString("base64url")}`).cursor).toBeNull()
    expect(parse(`cursor=${Buffer.from("x:ok").toString("base64url")}`).cursor).toBeNull()
  })

  test("the sort and its direction are read; unknown ones are the catalog order and the sort's own direction", () => {
    expect(parse("sort=updated")).toMatchObject({ sort: "updated", order: "desc" })
    expect(parse("sort=name&order=desc")).toMatchObject({ sort: "name", order: "desc" })
    expect(parse("sort=audience&order=sideways")).toMatchObject({ sort: "audience", order: "asc" })
    expect(parse("sort=<script>")).toMatchObject({ sort: "kind", order: "asc" })
  })

  test("page links keep the filters and drop defaults", () => {
    expect(catalogHref(parse(""), null)).toBe("/agents")
    expect(catalogHref(parse("q=a b&kind=custom&state=all"), "Yzp4")).toBe("/agents?q=a+b&kind=custom&cursor=Yzp4")
  })
})
