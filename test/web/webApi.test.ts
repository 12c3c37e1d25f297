/**
 * The web search backend and project web settings over the API: the key sealed and never returned,
 * permissions, every problem at once; budgets counted atomically in the database (20 concurrent calls
 * of parallel jobs against a daily budget of 5: exactly 5 are counted), usage visible in the API.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Either } from "effect"
import { ProjectWeb } from "../../src/web/ProjectWeb.ts"
import { WebSearch } from "../../src/web/WebSearch.ts"
import { useApp } from "../support/appHarness.ts"
import { BRAVE_KEY, startScriptedWeb, type ScriptedWeb } from "../support/webServers.ts"

setDefaultTimeout(30_000)

const h = useApp()
let web: ScriptedWeb
beforeAll(() => {
  web = startScriptedWeb()
})
afterAll(() => web.stop())

const sealedRow = () =>
  h.rt
    .runPromise(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ t: string | null }>`SELECT (SELECT row_to_json(b)::text FROM admin.web_search_backend b) AS t`
      )
    )
    .then((r) => r[0]?.t ?? "")

/** A job row of `project` (the budgets count per job). */
const job = (project: string) =>
  h.rt
    .runPromise(
      Effect.flatMap(
        SqlClient,
        (sql) =>
          sql<{ id: string }>`INSERT INTO runtime.job (project_id, agent_name, task, workspace, limits, created_by)
        VALUES (${project}, 'researcher', 't', '{}'::jsonb, '{}'::jsonb, 'test') RETURNING id`
      )
    )
    .then((r) => r[0]!.id)

describe("the web search backend", () => {
  test("nothing registered: 404 that says where to register it", async () => {
    const r = await h.api("GET", "/api/admin/web-search")
    expect(r.status).toBe(404)
    expect(r.text).toContain("Web search")
  })

  test("every problem at once; Brave needs a key", async () => {
    const r = await h.api("PUT", "/api/admin/web-search", { kind: "bing", url: 7, extra: true })
    expect(r.status).toBe(400)
    const paths = r.json<{ error: { problems: Array<{ path: string }> } }>().error.problems.map((p) => p.path)
    expect(paths).toEqual(expect.arrayContaining(["kind", "url", "extra"]))
    const keyless = await h.api("PUT", "/api/admin/web-search", { kind: "brave", url: web.url })
    expect(keyless.json<{ error: { problems: unknown } }>().error.problems).toEqual([
      { path: "apiKey", message: "is required for Brave Search" }
    ])
    const badUrl = await h.api("PUT", "/api/admin/web-search", { kind: "searxng", url: "file:///etc/passwd" })
    expect(badUrl.status).toBe(400)
  })

  test("Brave: the key is sealed at rest, never returned, and sent only to the backend; the test action searches", async () => {
    const put = await h.api("PUT", "/api/admin/web-search", { kind: "brave", url: web.url, apiKey: BRAVE_KEY })
    expect(put.status).toBe(200)
    expect(put.json<{ backend: unknown }>().backend).toMatchObject({ kind: "brave", url: web.url, hasApiKey: true, updatedBy: "admin" })
    expect(await sealedRow()).toContain("v1:")
    expect(await sealedRow()).not.toContain(BRAVE_KEY)
    expect((await h.api("GET", "/api/admin/web-search")).text).not.toContain(BRAVE_KEY)
    const tested = await h.api("POST", "/api/admin/web-search/test", { query: "effect layers" })
    expect(tested.json<{ test: unknown }>().test).toEqual({ ok: true, results: 3 })
    expect(web.searches().at(-1)).toMatchObject({ query: "effect layers", headers: { "x-subscription-token": BRAVE_KEY } })
    for (const body of h.bodies) expect(body).not.toContain(BRAVE_KEY)
  })

  test("SearXNG: titles, URLs and plain snippets, at most the limit; a failing backend is reported by the test action", async () => {
    expect((await h.api("PUT", "/api/admin/web-search", { kind: "searxng", url: web.url })).status).toBe(200)
    const results = await h.rt.runPromise(Effect.flatMap(WebSearch, (w) => w.search("layers", 2)))
    expect(results).toEqual([
      { title: "Result 1 for layers", url: "https://docs.example.com/1", snippet: "layers & more 1" },
      { title: "Result 2 for layers", url: "https://docs.example.com/2", snippet: "layers & more 2" }
    ])
    expect((await h.api("PUT", "/api/admin/web-search", { kind: "searxng", url: `${web.url}/nowhere` })).status).toBe(200)
    const failed = await h.api("POST", "/api/admin/web-search/test", {})
    expect(failed.json<{ test: unknown }>().test).toEqual({ ok: false, results: 0, problem: "the backend answered HTTP 404" })
  })

  test("only providers.manage registers or tests a backend; a reader sees it without the key", async () => {
    const agentsOnly = await h.user("builder", ["agents.manage"])
    expect((await h.api("PUT", "/api/admin/web-search", { kind: "searxng", url: web.url }, agentsOnly)).status).toBe(403)
    expect((await h.api("POST", "/api/admin/web-search/test", {}, agentsOnly)).status).toBe(403)
    expect((await h.api("DELETE", "/api/admin/web-search", undefined, agentsOnly)).status).toBe(403)
    expect((await h.api("GET", "/api/admin/web-search", undefined, agentsOnly)).status).toBe(200)
  })
})

describe("project web settings", () => {
  test("defaults grant nothing; agents.manage sets them; every problem at once; unknown project 404", async () => {
    expect((await h.api("POST", "/api/projects", { id: "docs", name: "Docs" })).status).toBe(201)
    const r = await h.api("GET", "/api/projects/docs/web")
    expect(r.json<{ web: unknown }>().web).toEqual({
      searchAgents: [],
      fetch: false,
      dailySearches: 100,
      dailyFetches: 200,
      jobSearches: 10,
      jobFetches: 20
    })
    const bad = await h.api("PUT", "/api/projects/docs/web", {
      searchAgents: ["Not An Id"],
      fetch: "yes",
      dailySearches: -1,
      jobFetches: 1.5
    })
    expect(bad.status).toBe(400)
    const paths = bad.json<{ error: { problems: Array<{ path: string }> } }>().error.problems.map((p) => p.path)
    expect(paths).toEqual(expect.arrayContaining(["searchAgents.0", "fetch", "dailySearches", "jobFetches"]))
    const put = await h.api("PUT", "/api/projects/docs/web", { searchAgents: ["researcher", "researcher"], fetch: true })
    expect(put.json<{ web: unknown }>().web).toEqual({
      searchAgents: ["researcher"],
      fetch: true,
      dailySearches: 100,
      dailyFetches: 200,
      jobSearches: 10,
      jobFetches: 20
    })
    // An absent field keeps its value.
    const partial = await h.api("PUT", "/api/projects/docs/web", { dailySearches: 5 })
    expect(partial.json<{ web: { searchAgents: ReadonlyArray<string>; dailySearches: number } }>().web).toMatchObject({
      searchAgents: ["researcher"],
      dailySearches: 5
    })
    expect((await h.api("GET", "/api/projects/nope/web")).status).toBe(404)
    expect((await h.api("PUT", "/api/projects/nope/web", { fetch: true })).status).toBe(404)
  })

  test("only agents.manage changes them", async () => {
    const providersOnly = await h.user("keeper", ["providers.manage"])
    expect((await h.api("PUT", "/api/projects/docs/web", { fetch: false }, providersOnly)).status).toBe(403)
    expect((await h.api("GET", "/api/projects/docs/web", undefined, providersOnly)).status).toBe(200)
  })
})

describe("budgets", () => {
  test("20 concurrent calls from parallel jobs against a daily budget of 5: exactly 5 are counted; usage shows 5", async () => {
    expect((await h.api("POST", "/api/projects", { id: "race", name: "Race" })).status).toBe(201)
    expect((await h.api("PUT", "/api/projects/race/web", { searchAgents: ["researcher"], dailySearches: 5, jobSearches: 10 })).status).toBe(
      200
    )
    const jobs = await Promise.all(Array.from({ length: 4 }, () => job("race")))
    const calls = Array.from({ length: 20 }, (_, i) =>
      h.rt.runPromise(Effect.either(Effect.flatMap(ProjectWeb, (w) => w.take("race", jobs[i % 4]!, "search"))))
    )
    const outcomes = await Promise.all(calls)
    expect(outcomes.filter(Either.isRight).length).toBe(5)
    const refused = outcomes.filter(Either.isLeft).map((o) => o.left.message)
    expect(new Set(refused)).toEqual(new Set(["web search budget for today is used up (the project's 5 per UTC day)"]))
    const usage = await h.api("GET", "/api/projects/race/web")
    expect(usage.json<{ usage: { today: unknown } }>().usage.today).toMatchObject({ searches: 5, fetches: 0, dailySearches: 5 })
    const perJob = await Promise.all(jobs.map((id) => h.rt.runPromise(Effect.flatMap(ProjectWeb, (w) => w.jobUsage(id)))))
    expect(perJob.reduce((n, u) => n + u.searches, 0)).toBe(5)
  })

  test("a job's own budget: the 4th call of a job with jobFetches 3 is refused and counts nowhere", async () => {
    expect((await h.api("PUT", "/api/projects/race/web", { fetch: true, jobFetches: 3, dailyFetches: 100 })).status).toBe(200)
    const id = await job("race")
    const take = () => h.rt.runPromise(Effect.either(Effect.flatMap(ProjectWeb, (w) => w.take("race", id, "fetch"))))
    const outcomes = await Promise.all(Array.from({ length: 6 }, take))
    expect(outcomes.filter(Either.isRight).length).toBe(3)
    expect(outcomes.flatMap((o) => (Either.isLeft(o) ? [o.left.message] : []))[0]).toBe(
      "web fetch budget for this job is used up (3 per job)"
    )
    const today = (await h.api("GET", "/api/projects/race/web")).json<{ usage: { today: { fetches: number } } }>().usage.today
    expect(today.fetches).toBe(3)
  })

  test("a day refusal rolls the job's count back; a budget of 0 counts nothing", async () => {
    expect((await h.api("PUT", "/api/projects/race/web", { dailySearches: 0 })).status).toBe(200)
    const id = await job("race")
    const r = await h.rt.runPromise(Effect.either(Effect.flatMap(ProjectWeb, (w) => w.take("race", id, "search"))))
    expect(Either.isLeft(r)).toBe(true)
    expect(await h.rt.runPromise(Effect.flatMap(ProjectWeb, (w) => w.jobUsage(id)))).toEqual({ searches: 0, fetches: 0 })
  })
})
