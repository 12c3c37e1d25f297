/**
 * How an Elysia handler runs an Effect: authorize, run on the app's ManagedRuntime, map the Exit to a
 * response. Request bodies are read by body.ts (capped, strict) and decoded with Effect Schema, every
 * problem listed.
 */
import { Effect, Either, type ManagedRuntime, type Schema } from "effect"
import type { SqlClient } from "@effect/sql/SqlClient"
import type { Access, Principal } from "../access/Access.ts"
import type { AgentStore } from "../agents/AgentStore.ts"
import type { SkillStore } from "../agents/SkillStore.ts"
import type { Bindings } from "../providers/Bindings.ts"
import type { McpServers } from "../providers/McpServers.ts"
import type { ProviderStore } from "../providers/ProviderStore.ts"
import type { JobBus } from "../worker/JobBus.ts"
import type { JobRoots } from "../worker/JobRoots.ts"
import type { JobStore } from "../worker/JobStore.ts"
import type { Projects } from "../worker/Projects.ts"
import type { Metrics } from "../telemetry/Metrics.ts"
import type { ProjectWeb } from "../web/ProjectWeb.ts"
import type { WebSearch } from "../web/WebSearch.ts"
import type { MemoryStore } from "../worker/memory/MemoryStore.ts"
import type { ServiceHandlers, ServicesEndpoint } from "../worker/Services.ts"
import type { ServiceTokens } from "../worker/ServiceTokens.ts"
import { decodeAll } from "../contract/Problem.ts"
import { authorize, type Guard } from "./auth.ts"
import { jsonBody, MAX_BODY_BYTES } from "./body.ts"
import { noteUser, underRequest } from "./observe.ts"
import { badRequest, fromExit, type ApiError } from "./respond.ts"

export type AppServices =
  | Access
  | AgentStore
  | SkillStore
  | ProviderStore
  | Bindings
  | McpServers
  | JobStore
  | JobBus
  | JobRoots
  | Projects
  | SqlClient
  | Metrics
  | ServiceTokens
  | ServiceHandlers
  | ServicesEndpoint
  | WebSearch
  | ProjectWeb
  | MemoryStore
export type AppRuntime = ManagedRuntime.ManagedRuntime<AppServices, never>

export { jsonBody, MAX_BODY_BYTES } from "./body.ts"

export interface RouteInput {
  readonly request: Request
  readonly params: Readonly<Record<string, string | undefined>>
  readonly url: URL
  readonly principal: Principal
}

export type Handler = (input: RouteInput) => Effect.Effect<Response, ApiError, AppServices>

/** Builds handlers bound to one runtime; `log` gets defects and nothing else. */
export const routes = (rt: AppRuntime, log: (line: string) => void) =>
  (guard: Guard, handler: Handler) =>
    async (ctx: { readonly request: Request; readonly params: Readonly<Record<string, string | undefined>> }): Promise<Response> => {
      const program = Effect.flatMap(authorize(ctx.request, guard), (principal) => {
        noteUser(ctx.request, principal.username)
        return handler({ request: ctx.request, params: ctx.params, url: new URL(ctx.request.url), principal })
      })
      return fromExit(await rt.runPromiseExit(underRequest(ctx.request)(program)), log)
    }

/** A handler that needs no principal (sign-in, health). */
export const publicRoutes = (rt: AppRuntime, log: (line: string) => void) =>
  (handler: (request: Request) => Effect.Effect<Response, ApiError, AppServices>) =>
    async (ctx: { readonly request: Request }): Promise<Response> => fromExit(await rt.runPromiseExit(underRequest(ctx.request)(handler(ctx.request))), log)

/** The body decoded with `schema` (read by `jsonBody`, capped at `max`), or a 400 listing every problem. */
export const decodeBody = <A, I>(request: Request, schema: Schema.Schema<A, I>, max: number = MAX_BODY_BYTES): Effect.Effect<A, ApiError> =>
  Effect.flatMap(jsonBody(request, max), (body) =>
    Either.match(decodeAll(schema)(body), { onLeft: (p) => Effect.fail(badRequest(p)), onRight: Effect.succeed })
  )

/** A required path parameter (Elysia always sets declared ones). */
export const param = (input: RouteInput, name: string): string => input.params[name] ?? ""
