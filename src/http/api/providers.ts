/** LLM providers (keys write-only), the built-in catalog, agent model bindings, MCP servers and projects. */
import { Effect, Schema } from "effect"
import { Elysia } from "elysia"
import { Bindings } from "../../providers/Bindings.ts"
import { McpServers } from "../../providers/McpServers.ts"
import { ProviderStore } from "../../providers/ProviderStore.ts"
import type { Guard } from "../auth.ts"
import { ProjectInput, Projects, ProjectSettings } from "../../worker/Projects.ts"
import { badRequest, json, notFound } from "../respond.ts"
import { decodeBody, jsonBody, param, type Handler } from "../route.ts"

type Route = (
  guard: Guard,
  handler: Handler
) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>

/** Allow (or stop allowing) one MCP tool by name. */
const AllowToolBody = Schema.Struct({ tool: Schema.String, allowed: Schema.Boolean })

export const providerRoutes = (route: Route) =>
  new Elysia({ name: "providers-api" })
    .get(
      "/api/admin/providers",
      route("read", () =>
        Effect.map(
          Effect.flatMap(ProviderStore, (p) => p.list),
          (providers) => json({ providers })
        )
      )
    )
    .get(
      "/api/admin/providers/catalog",
      route("read", () =>
        Effect.map(
          Effect.flatMap(ProviderStore, (p) => p.catalog),
          (providers) => json({ providers })
        )
      )
    )
    .post(
      "/api/admin/providers",
      route("providers.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          return json({ provider: yield* (yield* ProviderStore).create(body, i.principal.username) }, 201)
        })
      )
    )
    .get(
      "/api/admin/providers/:id",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(ProviderStore, (p) => p.get(param(i, "id"))),
          (provider) => json({ provider })
        )
      )
    )
    .put(
      "/api/admin/providers/:id",
      route("providers.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          return json({ provider: yield* (yield* ProviderStore).update(param(i, "id"), body, i.principal.username) })
        })
      )
    )
    .delete(
      "/api/admin/providers/:id",
      route("providers.manage", (i) =>
        Effect.map(
          Effect.flatMap(ProviderStore, (p) => p.remove(param(i, "id"))),
          () => new Response(null, { status: 204 })
        )
      )
    )
    .get(
      "/api/admin/agents/:name/bindings",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(Bindings, (b) => b.list(param(i, "name"))),
          (bindings) => json({ bindings })
        )
      )
    )
    .put(
      "/api/admin/agents/:name/bindings",
      route("providers.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          return json({ binding: yield* (yield* Bindings).set(param(i, "name"), "", body, i.principal.username) })
        })
      )
    )
    .delete(
      "/api/admin/agents/:name/bindings",
      route("providers.manage", (i) =>
        Effect.map(
          Effect.flatMap(Bindings, (b) => b.remove(param(i, "name"), "")),
          () => new Response(null, { status: 204 })
        )
      )
    )
    .put(
      "/api/admin/agents/:name/bindings/:project",
      route("providers.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          return json({ binding: yield* (yield* Bindings).set(param(i, "name"), param(i, "project"), body, i.principal.username) })
        })
      )
    )
    .delete(
      "/api/admin/agents/:name/bindings/:project",
      route("providers.manage", (i) =>
        Effect.map(
          Effect.flatMap(Bindings, (b) => b.remove(param(i, "name"), param(i, "project"))),
          () => new Response(null, { status: 204 })
        )
      )
    )
    .get(
      "/api/admin/mcp-servers",
      route("read", () =>
        Effect.map(
          Effect.flatMap(McpServers, (m) => m.list),
          (servers) => json({ servers })
        )
      )
    )
    .get(
      "/api/admin/mcp-servers/:name",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(McpServers, (m) => m.get(param(i, "name"))),
          (server) => json({ server })
        )
      )
    )
    .put(
      "/api/admin/mcp-servers/:name",
      route("providers.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          return json({ server: yield* (yield* McpServers).put(param(i, "name"), body, i.principal.username) })
        })
      )
    )
    .get(
      "/api/admin/mcp-servers/:name/tools",
      // Connects to the server with its stored headers: an admin's action, not a reader's.
      route("providers.manage", (i) =>
        Effect.map(
          Effect.flatMap(McpServers, (m) => m.listTools(param(i, "name"))),
          (tools) => json({ tools })
        )
      )
    )
    .post(
      "/api/admin/mcp-servers/:name/allowed-tools",
      route("providers.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* decodeBody(i.request, AllowToolBody)
          return json({ server: yield* (yield* McpServers).allowTool(param(i, "name"), body.tool, body.allowed, i.principal.username) })
        })
      )
    )
    .delete(
      "/api/admin/mcp-servers/:name",
      route("providers.manage", (i) =>
        Effect.map(
          Effect.flatMap(McpServers, (m) => m.remove(param(i, "name"))),
          () => new Response(null, { status: 204 })
        )
      )
    )
    .get(
      "/api/projects",
      route("read", () =>
        Effect.map(
          Effect.flatMap(Projects, (p) => p.list),
          (projects) => json({ projects })
        )
      )
    )
    .post(
      "/api/projects",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const input = yield* decodeBody(i.request, ProjectInput)
          const project = yield* (yield* Projects)
            .create(input)
            .pipe(Effect.catchTag("ProjectRootInvalid", (e) => Effect.fail(badRequest(e.problems))))
          return json({ project }, 201)
        })
      )
    )
    .put(
      "/api/projects/:id",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const settings = yield* decodeBody(i.request, ProjectSettings)
          const project = yield* (yield* Projects).update(param(i, "id"), settings).pipe(
            Effect.catchTags({
              ProjectRootInvalid: (e) => Effect.fail(badRequest(e.problems)),
              ProjectNotFound: (e) => Effect.fail(notFound(e.message))
            })
          )
          return json({ project })
        })
      )
    )
