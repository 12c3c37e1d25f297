/**
 * Web search in the portal: the installation's backend (Settings → Web search, providers.manage, with
 * a "test" action) and a project's web settings with its usage (/projects/:id/web, agents.manage).
 * Both go through the same services as the API (WebSearch, ProjectWeb), so the checks are the same.
 */
import { Effect, Option } from "effect"
import { Elysia } from "elysia"
import type { Problem } from "../../contract/Problem.ts"
import { ProjectWeb } from "../../web/ProjectWeb.ts"
import { WebSearch } from "../../web/WebSearch.ts"
import { Projects } from "../../worker/Projects.ts"
import { projectWebFormOf, projectWebPage, type ProjectWebForm } from "../../../views/pages/projectWeb.ts"
import { webSearchPage, webSearchTestFragment, type WebSearchForm } from "../../../views/pages/webSearch.ts"
import { NotFound, type ApiError } from "../respond.ts"
import { htmlResponse, isHtmx, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const field = (input: PortalInput, name: string): string => {
  const v = input.form.get(name)
  return typeof v === "string" ? v : ""
}

const backendPage = (input: PortalInput, form: WebSearchForm | undefined, problems: ReadonlyArray<Problem>, status = 200) =>
  Effect.gen(function* () {
    const backend = Option.getOrNull(yield* Effect.option((yield* WebSearch).get))
    const shown = form ?? { kind: backend?.kind ?? "searxng", url: backend?.url ?? "" }
    return htmlResponse(webSearchPage(input.page, backend, shown, problems, noticeOf(input.url, "the web search backend")), status)
  })

const saveBackend = (input: PortalInput) =>
  Effect.gen(function* () {
    const form = { kind: field(input, "kind"), url: field(input, "url").trim() }
    const apiKey = field(input, "apiKey")
    return yield* (yield* WebSearch).put({ ...form, ...(apiKey === "" ? {} : { apiKey }) }, input.principal.username).pipe(
      Effect.map(() => redirect(input.request, "/web-search?updated=the%20web%20search%20backend")),
      Effect.catchTag("WebSearchInvalid", (e) => backendPage(input, form, e.problems, 400))
    )
  })

const testBackend = (input: PortalInput) =>
  Effect.gen(function* () {
    const result = yield* (yield* WebSearch).test("kintsugi runtime")
    if (isHtmx(input.request)) return htmlResponse(webSearchTestFragment(result))
    const backend = yield* (yield* WebSearch).get
    return htmlResponse(webSearchPage(input.page, backend, { kind: backend.kind, url: backend.url }, [], null, result))
  })

const notFound = (e: { readonly message: string }): Effect.Effect<never, ApiError> => Effect.fail(new NotFound({ message: e.message }))
const projectId = (input: PortalInput) => input.params["id"] ?? ""

const projectPage = (input: PortalInput, form: ProjectWebForm | undefined, problems: ReadonlyArray<Problem>, status = 200) =>
  Effect.gen(function* () {
    const project = yield* (yield* Projects).get(projectId(input))
    const web = yield* ProjectWeb
    const settings = yield* web.get(project.id)
    const usage = yield* web.usage(project.id, 7)
    return htmlResponse(
      projectWebPage(
        input.page,
        project,
        settings,
        form ?? projectWebFormOf(settings),
        usage,
        problems,
        noticeOf(input.url, "the web settings")
      ),
      status
    )
  }).pipe(Effect.catchTag("ProjectNotFound", notFound))

/** Budgets as numbers when they look like numbers (else the text, so the schema names the field). */
const budget = (text: string): number | string => (/^\s*\d+\s*$/.test(text) ? Number(text) : text)

const saveProject = (input: PortalInput) =>
  Effect.gen(function* () {
    const form: ProjectWebForm = {
      searchAgents: field(input, "searchAgents"),
      fetch: field(input, "fetch") === "1",
      dailySearches: field(input, "dailySearches"),
      dailyFetches: field(input, "dailyFetches"),
      jobSearches: field(input, "jobSearches"),
      jobFetches: field(input, "jobFetches")
    }
    const body = {
      searchAgents: form.searchAgents
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter((l) => l !== ""),
      fetch: form.fetch,
      dailySearches: budget(form.dailySearches),
      dailyFetches: budget(form.dailyFetches),
      jobSearches: budget(form.jobSearches),
      jobFetches: budget(form.jobFetches)
    }
    return yield* (yield* ProjectWeb).put(projectId(input), body, input.principal.username).pipe(
      Effect.map(() => redirect(input.request, `/projects/${encodeURIComponent(projectId(input))}/web?updated=the%20web%20settings`)),
      Effect.catchTag("WebSettingsInvalid", (e) => projectPage(input, form, e.problems, 400))
    )
  }).pipe(Effect.catchTag("ProjectNotFound", notFound))

export const webPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/web-search",
      portal.page("read", (input) => backendPage(input, undefined, []))
    )
    .post("/web-search", portal.action("providers.manage", saveBackend))
    .post("/web-search/test", portal.action("providers.manage", testBackend))
    .post(
      "/web-search/delete",
      portal.action("providers.manage", (input) =>
        Effect.map(
          Effect.flatMap(WebSearch, (w) => w.remove),
          () => redirect(input.request, "/web-search?removed=the%20web%20search%20backend")
        )
      )
    )
    .get(
      "/projects/:id/web",
      portal.page("read", (input) => projectPage(input, undefined, []))
    )
    .post("/projects/:id/web", portal.action("agents.manage", saveProject))
