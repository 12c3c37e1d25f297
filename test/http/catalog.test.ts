/**
 * The catalog at scale: GET /api/admin/agents pages by cursor, filters by q, kind,
 * audience and state in the database, sorts by name, audience or last update (either way), answers
 * 304 to a matching If-None-Match until a write changes the catalog, and `?all=1` still returns everything. Entries are precomputed per version; versions
 * written before migration 047 (or by SQL) get theirs on the first read.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Deferred, Effect, Fiber } from "effect"
import { Access } from "../../src/access/Access.ts"
import { type Api, createAgent, createSkill, useApi } from "../support/api.ts"
import { usingServer } from "../support/db.ts"
import { within } from "../support/waitFor.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(60_000)

const api = useApi()
const BUILTINS = 5

const get = (path: string, headers: Record<string, string> = {}, a: Api = api) => a.request("GET", path, { token: a.reader.token, headers })
const names = (body: { agents: Array<{ name: string }> }) => body.agents.map((a) => a.name)
interface Page {
  agents: Array<{
    name: string
    builtin: boolean
    audience: string
    updatedAt: string | null
    problems: Array<unknown>
    enabled: boolean
    binding: unknown
  }>
  total: number
  matched: number
  nextCursor: string | null
}
const page = async (query: string): Promise<Page> => {
  const r = await get(`/api/admin/agents${query}`)
  expect(r.status).toBe(200)
  return r.json<Page>()
}
const sql = <A>(f: (sql: SqlClient) => Effect.Effect<A, unknown>) => api.runtime.runPromise(Effect.orDie(Effect.flatMap(SqlClient, f)))

/** 120 custom agents written straight into SQL (no entries: as if saved before migration 047). */
const seed = () =>
  sql((s) =>
    s.withTransaction(
      Effect.all([
        s`INSERT INTO admin.agent_version (name, version, package, saved_by, note)
          SELECT 'seeded-' || lpad(i::text, 3, '0'), 1, jsonb_build_object(
            'name', 'seeded-' || lpad(i::text, 3, '0'), 'version', 1,
            'description', CASE WHEN i % 10 = 0 THEN 'Tenth seeded helper number ' || i ELSE 'Seeded agent ' || i END,
            'tools', jsonb_build_array('read'), 'audience', CASE WHEN i % 3 = 0 THEN 'member' ELSE 'runtime' END,
            'instructions', 'Seeded ' || i, 'localSkills', jsonb_build_array(), 'files', jsonb_build_array()), 'test', 'seeded'
          FROM generate_series(1, 120) AS i`,
        s`INSERT INTO admin.agent (name, audience, current_version)
          SELECT 'seeded-' || lpad(i::text, 3, '0'), CASE WHEN i % 3 = 0 THEN 'member' ELSE 'runtime' END, 1 FROM generate_series(1, 120) AS i`,
        s`INSERT INTO admin.agent_version_counter (name, last_version) SELECT 'seeded-' || lpad(i::text, 3, '0'), 1 FROM generate_series(1, 120) AS i`
      ])
    )
  )

describe("GET /api/admin/agents: pages, filters, ETag", () => {
  test("agents saved before the entries existed get theirs on first read; the default is a page of 50", async () => {
    await seed()
    expect(
      await sql((s) =>
        Effect.map(s<{ n: number }>`SELECT count(*)::int AS n FROM admin.agent_catalog_entry WHERE name LIKE 'seeded-%'`, (r) => r[0]!.n)
      )
    ).toBe(0)
    const first = await page("")
    expect(first.total).toBe(BUILTINS + 120)
    expect(first.matched).toBe(BUILTINS + 120)
    expect(first.agents.length).toBe(50)
    expect(first.agents.slice(0, BUILTINS).every((a) => a.builtin)).toBe(true)
    expect(first.nextCursor).not.toBeNull()
    expect(
      await sql((s) =>
        Effect.map(s<{ n: number }>`SELECT count(*)::int AS n FROM admin.agent_catalog_entry WHERE name LIKE 'seeded-%'`, (r) => r[0]!.n)
      )
    ).toBe(120)
  })

  test("following nextCursor visits every agent once, in order, built-ins first; the last page has no cursor", async () => {
    const all = await page("?all=1")
    expect(all.agents.length).toBe(BUILTINS + 120)
    expect(all.nextCursor).toBeNull()
    const seen: Array<string> = []
    let cursor: string | null = ""
    let pages = 0
    while (cursor !== null) {
      const p: Page = await page(`?limit=7${cursor === "" ? "" : `&cursor=${cursor}`}`)
      expect(p.agents.length).toBeLessThanOrEqual(7)
      seen.push(...names(p))
      cursor = p.nextCursor
      pages++
    }
    expect(pages).toBe(Math.ceil((BUILTINS + 120) / 7))
    expect(seen).toEqual(names(all))
    // A page boundary exactly after the built-ins still leads on to the custom agents.
    const five = await page("?limit=5")
    expect(five.agents.every((a) => a.builtin)).toBe(true)
    expect(names(await page(`?limit=2&cursor=${five.nextCursor}`))).toEqual(["seeded-001", "seeded-002"])
  })

  test("sort and order: following nextCursor visits every agent once in that order; a cursor of another order is 400", async () => {
    const all = (await page("?all=1")).agents
    const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
    const time = (a: { updatedAt: string | null }) => (a.updatedAt === null ? -1 : Date.parse(a.updatedAt))
    const expected: Record<string, Array<string>> = {
      "sort=name&order=desc": [...all].sort((a, b) => byName(b, a)).map((a) => a.name),
      "sort=audience": [...all]
        .sort((a, b) => (a.audience === b.audience ? byName(a, b) : a.audience < b.audience ? -1 : 1))
        .map((a) => a.name),
      // Newest first; built-ins (no date) last; ties by name.
      "sort=updated": [...all].sort((a, b) => time(b) - time(a) || byName(a, b)).map((a) => a.name),
      "sort=updated&order=asc": [...all].sort((a, b) => time(a) - time(b) || byName(a, b)).map((a) => a.name)
    }
    for (const [query, order] of Object.entries(expected)) {
      const seen: Array<string> = []
      let cursor: string | null = ""
      while (cursor !== null) {
        const p: Page = await page(`?${query}&limit=9${cursor === "" ? "" : `&cursor=${cursor}`}`)
        seen.push(...names(p))
        cursor = p.nextCursor
      }
      expect({ query, seen }).toEqual({ query, seen: order })
    }
    expect(expected["sort=updated"]?.slice(-BUILTINS).every((n) => all.find((a) => a.name === n)?.builtin === true)).toBe(true)
    const byNameDesc = await page("?sort=name&order=desc&limit=3")
    const other = await get(`/api/admin/agents?sort=updated&cursor=${byNameDesc.nextCursor}`)
    expect(other.status).toBe(400)
    expect(other.json<{ error: { problems: Array<{ path: string }> } }>().error.problems.map((p) => p.path)).toEqual(["cursor"])
    const bad = await get("/api/admin/agents?sort=size&order=up")
    expect(
      bad
        .json<{ error: { problems: Array<{ path: string }> } }>()
        .error.problems.map((p) => p.path)
        .sort()
    ).toEqual(["order", "sort"])
  })

  test("q matches every word of name or description in the database; kind, audience and state filter", async () => {
    const tenth = await page("?q=TENTH+helper&limit=200")
    expect(names(tenth)).toEqual(Array.from({ length: 12 }, (_, i) => `seeded-${String((i + 1) * 10).padStart(3, "0")}`))
    expect(tenth.matched).toBe(12)
    expect(tenth.total).toBe(BUILTINS + 120)
    // Characters that are special in LIKE patterns are plain text here.
    expect((await page("?q=%25")).matched).toBe(0)
    expect((await page("?q=_")).matched).toBe(0)
    expect(names(await page("?kind=builtin")).length).toBe(BUILTINS)
    const custom = await page("?kind=custom&audience=member&limit=200")
    expect(custom.matched).toBe(40)
    expect(custom.agents.every((a) => !a.builtin)).toBe(true)
    const paged = await page("?kind=custom&audience=member&limit=30")
    expect(paged.agents.length).toBe(30)
    expect(names(await page(`?kind=custom&audience=member&limit=30&cursor=${paged.nextCursor}`)).length).toBe(10)
    expect((await page("?state=disabled")).matched).toBe(0)
    expect((await page("?state=problems")).matched).toBe(0)
  })

  test("validity is the installation's now: an agent listing a missing skill has problems until the skill exists", async () => {
    await createSkill(api, "arrives-later")
    await createAgent(api, "needs-skill", { skills: ["arrives-later"] })
    expect((await page("?q=needs-skill")).agents[0]!.problems).toEqual([])
    await sql((s) => s`DELETE FROM admin.agent_skill WHERE name = 'arrives-later'`)
    const broken = await page("?q=needs-skill&state=problems")
    expect(names(broken)).toEqual(["needs-skill"])
    expect(JSON.stringify(broken.agents[0]!.problems)).toContain('shared skill \\"arrives-later\\" does not exist')
    expect(names(await page("?q=needs-skill&state=valid"))).toEqual([])
  })

  test("ETag: 304 to If-None-Match until a write changes the catalog; other queries have other tags", async () => {
    const r1 = await get("/api/admin/agents?limit=10")
    const etag = r1.headers.get("etag")
    expect(etag).toMatch(/^"c-/)
    expect(r1.headers.get("cache-control")).toBe("private, no-cache")
    const r2 = await get("/api/admin/agents?limit=10", { "if-none-match": etag! })
    expect(r2.status).toBe(304)
    expect(r2.text).toBe("")
    expect((await get("/api/admin/agents?limit=10", { "if-none-match": `"other", W/${etag}` })).status).toBe(304)
    const other = await get("/api/admin/agents?limit=11")
    expect(other.headers.get("etag")).not.toBe(etag)
    // Any write that could change an answer: an agent saved, disabled, deleted; a skill; a binding.
    await createAgent(api, "etag-changer")
    const r3 = await get("/api/admin/agents?limit=10", { "if-none-match": etag! })
    expect(r3.status).toBe(200)
    const etag2 = r3.headers.get("etag")!
    expect(etag2).not.toBe(etag)
    await api.request("PATCH", "/api/admin/agents/etag-changer", { token: api.manager.token, json: { enabled: false } })
    const r4 = await get("/api/admin/agents?limit=10", { "if-none-match": etag2 })
    expect(r4.status).toBe(200)
    expect((await page("?q=etag-changer")).agents[0]!.enabled).toBe(false)
    await createSkill(api, "etag-skill")
    expect((await get("/api/admin/agents?limit=10", { "if-none-match": r4.headers.get("etag")! })).status).toBe(200)
  })

  test.skipIf(usingServer())(
    "embedded: an unchanged catalog answers while the one database connection is held; the next write is seen at once",
    async () => {
      const etag = (await get("/api/admin/agents?limit=10")).headers.get("etag")!
      await page("?q=seeded-00")
      // A transaction holds the embedded database's only connection until `release`.
      const release = await api.runtime.runPromise(Deferred.make<void>())
      const holding = await api.runtime.runPromise(Deferred.make<void>())
      const holder = api.runtime.runFork(
        Effect.orDie(
          Effect.flatMap(SqlClient, (s) =>
            s.withTransaction(Effect.zipRight(Effect.zipRight(s`SELECT 1`, Deferred.succeed(holding, undefined)), Deferred.await(release)))
          )
        )
      )
      await api.runtime.runPromise(Deferred.await(holding))
      try {
        const answered = await within(
          Promise.all([
            get("/api/admin/agents?limit=10", { "if-none-match": etag }),
            get("/api/admin/agents?limit=10"),
            get("/api/admin/agents?q=seeded-01&limit=3")
          ]),
          { what: "the catalog's answers while a transaction holds the database (queued behind it?)", timeoutMs: 20_000 }
        )
        expect(answered.map((r) => r.status)).toEqual([304, 200, 200])
        expect(names(answered[2].json<Page>())).toEqual(["seeded-010", "seeded-011", "seeded-012"])
      } finally {
        await api.runtime.runPromise(Deferred.succeed(release, undefined))
        await api.runtime.runPromise(Fiber.join(holder))
      }
      // Written behind the catalog's back (raw SQL): the next request sees it, and the ETag moves.
      await sql((s) => s`UPDATE admin.agent SET enabled = false WHERE name = 'seeded-011'`)
      expect((await get("/api/admin/agents?limit=10", { "if-none-match": etag })).status).toBe(200)
      expect((await page("?q=seeded-011")).agents[0]!.enabled).toBe(false)
    }
  )

  test("a token revoked, a user disabled or a permission withdrawn counts on the very next request", async () => {
    const user = await api.runtime.runPromise(
      Effect.gen(function* () {
        const access = yield* Access
        yield* access.addUser("cached-reader", "cached reader password", ["agents.manage"])
        return { a: yield* access.issueToken("cached-reader", "one"), b: yield* access.issueToken("cached-reader", "two") }
      })
    )
    const as = (token: string) => api.request("GET", "/api/admin/agents?limit=1", { token })
    expect((await as(user.a)).status).toBe(200)
    expect((await as(user.a)).status).toBe(200)
    const tokens = await api.runtime.runPromise(Effect.flatMap(Access, (a) => a.tokens("cached-reader")))
    await api.runtime.runPromise(Effect.flatMap(Access, (a) => a.revokeToken("cached-reader", tokens.find((t) => t.name === "one")!.id)))
    expect((await as(user.a)).status).toBe(401)
    // A permission withdrawn: the principal's permissions are read again.
    const create = () => api.request("POST", "/api/admin/agents", { token: user.b, json: { name: "x-never", files: [] } })
    expect((await create()).status).not.toBe(403)
    await api.runtime.runPromise(Effect.flatMap(Access, (a) => a.revoke("cached-reader", "agents.manage")))
    expect((await create()).status).toBe(403)
    expect((await as(user.b)).status).toBe(200)
    await api.runtime.runPromise(Effect.flatMap(Access, (a) => a.setDisabled("cached-reader", true, "manager")))
    expect((await as(user.b)).status).toBe(401)
  })

  test("bad query parameters: 400 naming every one at once", async () => {
    const r = await get("/api/admin/agents?limit=0&kind=robots&state=odd&audience=x&cursor=not*a*cursor")
    expect(r.status).toBe(400)
    const problems = r
      .json<{ error: { problems: Array<{ path: string }> } }>()
      .error.problems.map((p) => p.path)
      .sort()
    expect(problems).toEqual(["audience", "cursor", "kind", "limit", "state"])
    expect((await get("/api/admin/agents?limit=201")).status).toBe(400)
    expect((await get("/api/admin/agents?limit=2.5")).status).toBe(400)
    expect((await get("/api/admin/agents?all=1&limit=5")).status).toBe(400)
    expect((await get(`/api/admin/agents?q=${"x".repeat(201)}`)).status).toBe(400)
    // A well-formed cursor of a name that is gone still works: the next names after it.
    const cursor = Buffer.from("c:seeded-0505", "utf8").toString("base64url")
    expect((await get(`/api/admin/agents?cursor=${cursor}`)).status).toBe(200)
  })
})
