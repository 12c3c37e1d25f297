/**
 * Public web search (design/memory-and-web.md §4): the installation's search backend (key write-only)
 * and each project's web settings with its usage. Reading needs a session; the backend needs
 * providers.manage, project settings agents.manage.
 */
import { Effect, Schema } from "effect"
import { Elysia } from "elysia"
import type { Guard } from "../auth.ts"
import { ProjectWeb } from "../../web/ProjectWeb.ts"
import { WebSearch } from "../../web/WebSearch.ts"
import { json, NotFound, type ApiError } from "../respond.ts"
import { decodeBody, jsonBody, param, type Handler } from "../route.ts"

type Route = (
  guard: Guard,
  handler: Handler
) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>

const TestBody = Schema.Struct({
  query: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500)), { exact: true })
})

const notFound = (e: { readonly message: string }): Effect.Effect<never, ApiError> => Effect.fail(new NotFound({ message: e.message }))

/** `?days=` (1..90, default 7) for the usage history. */
const daysOf = (url: URL): number => {
  const n = Number(url.searchParams.get("days") ?? "7")
  return Number.isInteger(n) && n >= 1 && n <= 90 ? n : 7
}

/** Settings, today's counts beside the budgets, and the last days' counts. */
const projectWebBody = (projectId: string, days: number) =>
  Effect.gen(function* () {
    const web = yield* ProjectWeb
    const settings = yield* web.get(projectId)
    const usage = yield* web.usage(projectId, days)
    const today = usage[0] ?? { day: "", searches: 0, fetches: 0 }
    return {
      web: settings,
      usage: { today: { ...today, dailySearches: settings.dailySearches, dailyFetches: settings.dailyFetches }, days: usage }
    }
  })

export const webRoutes = (route: Route) =>
  new Elysia({ name: "web-api" })
    .get(
      "/api/admin/web-search",
      route("read", () =>
        Effect.map(
          Effect.flatMap(WebSearch, (w) => w.get),
          (backend) => json({ backend })
        )
      )
    )
    .put(
      "/api/admin/web-search",
      route("providers.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          return json({ backend: yield* (yield* WebSearch).put(body, i.principal.username) })
        })
      )
    )
    .delete(
      "/api/admin/web-search",
      route("providers.manage", () =>
        Effect.map(
          Effect.flatMap(WebSearch, (w) => w.remove),
          () => new Response(null, { status: 204 })
        )
      )
    )
    .post(
      "/api/admin/web-search/test",
      // Sends a query with the stored key: an admin's action.
      route("providers.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* decodeBody(i.request, TestBody)
          return json({ test: yield* (yield* WebSearch).test(body.query ?? "kintsugi runtime") })
        })
      )
    )
    .get(
      "/api/projects/:id/web",
      route("read", (i) =>
        Effect.map(projectWebBody(param(i, "id"), daysOf(i.url)), json).pipe(Effect.catchTag("ProjectNotFound", notFound))
      )
    )
    .put(
      "/api/projects/:id/web",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          yield* (yield* ProjectWeb).put(param(i, "id"), body, i.principal.username)
          return json(yield* projectWebBody(param(i, "id"), daysOf(i.url)))
        }).pipe(Effect.catchTag("ProjectNotFound", notFound))
      )
    )
