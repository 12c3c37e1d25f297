/**
 * The one request runner of the API and the portal: (a change: refused cross-site first) authenticate
 * before any body is read, read the form when asked (body.ts: capped, strict), check CSRF and the
 * guard, run the handler on the app's ManagedRuntime, and map the Exit to a response through one
 * error mapping (respond.ts: tag → status) rendered as JSON (API) or HTML (portal). Defects go to
 * `log`, never to the client. JSON bodies are read by the handler (`jsonBody`, `decodeBody`).
 */
import { Cause, Effect, Either, Exit, Option, type ManagedRuntime, type Schema } from "effect"
import type { SqlClient } from "@effect/sql/SqlClient"
import type { Access, Principal } from "../access/Access.ts"
import type { AgentStore } from "../agents/AgentStore.ts"
import type { SkillStore } from "../agents/SkillStore.ts"
import type { Bindings } from "../providers/Bindings.ts"
import type { McpServers } from "../providers/McpServers.ts"
import type { ProviderStore } from "../providers/ProviderStore.ts"
import type { JobBus } from "../worker/JobBus.ts"
import type { JobFeed } from "../worker/JobFeed.ts"
import type { JobRoots } from "../worker/JobRoots.ts"
import type { JobStore } from "../worker/JobStore.ts"
import type { Projects } from "../worker/Projects.ts"
import type { Metrics } from "../telemetry/Metrics.ts"
import type { ProjectWeb } from "../web/ProjectWeb.ts"
import type { WebSearch } from "../web/WebSearch.ts"
import type { MemoryStore } from "../worker/memory/MemoryStore.ts"
import type { ServiceHandlers, ServicesEndpoint } from "../worker/Services.ts"
import type { ServiceTokens } from "../worker/ServiceTokens.ts"
import type { TranscriptStore } from "../worker/transcripts/TranscriptStore.ts"
import { decodeAll } from "../contract/Problem.ts"
import { authenticate, crossSiteProblem, permit, type Guard } from "./auth.ts"
import { emptyForm, formBody, jsonBody, MAX_BODY_BYTES, type PostedForm } from "./body.ts"
import { noteUser, underRequest } from "./observe.ts"
import { badRequest, errorResponse, json, ownFailure, type ApiError } from "./respond.ts"
import type { Evals } from "../worker/evals/Evals.ts"
import type { Workspaces } from "../worker/workspaces/Workspaces.ts"

export type AppServices =
  | Access
  | AgentStore
  | SkillStore
  | ProviderStore
  | Bindings
  | McpServers
  | JobStore
  | JobBus
  | JobFeed
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
  | Evals
  | Workspaces
  | TranscriptStore
export type AppRuntime = ManagedRuntime.ManagedRuntime<AppServices, never>

export { jsonBody } from "./body.ts"

export interface RouteInput {
  readonly request: Request
  readonly params: Readonly<Record<string, string | undefined>>
  readonly url: URL
  readonly principal: Principal
}

export type Handler = (input: RouteInput) => Effect.Effect<Response, ApiError, AppServices>

/** How a runner shows what went wrong: a failure the client can act on, and a defect (no detail). */
export interface Renderer {
  /** `principal` is known once the request was authenticated. */
  readonly failure: (request: Request, error: ApiError, principal: Principal | undefined) => Response | Promise<Response>
  readonly defect: (request: Request, principal: Principal | undefined) => Response | Promise<Response>
}

/** The API's rendering: the stable JSON error body, a generic 500 for a defect. */
const jsonRenderer: Renderer = {
  failure: (_request, e) => errorResponse(e),
  defect: () => json({ error: { code: "internal", message: "internal server error" } }, 500)
}

export interface Guarded {
  readonly guard: Guard
  /** Read a form body (portal changes): refused cross-site before anything, and its `_csrf` field counts. */
  readonly form: boolean
}

export interface Authorized {
  readonly principal: Principal
  /** The posted form (empty unless `form` was asked for). */
  readonly form: PostedForm
}

/**
 * The runner over one runtime: `guarded` for a signed-in request, `open` for one without a principal.
 * Every outcome goes through `render`; a defect is logged as "request failed: …".
 */
export const requestRunner = (rt: AppRuntime, log: (line: string) => void, render: Renderer) => {
  const finish = async (
    request: Request,
    program: Effect.Effect<Response, ApiError, AppServices>,
    who: () => Principal | undefined
  ): Promise<Response> => {
    const exit = await rt.runPromiseExit(underRequest(request)(program))
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure)) {
      // A server-side failure (the database, a malformed row) answers its status; its cause goes to the log.
      if (ownFailure(failure.value)) log(`request failed: ${Cause.pretty(exit.cause)}`)
      return render.failure(request, failure.value, who())
    }
    log(`request failed: ${Cause.pretty(exit.cause)}`)
    return render.defect(request, who())
  }
  return {
    guarded: (
      request: Request,
      options: Guarded,
      handler: (auth: Authorized) => Effect.Effect<Response, ApiError, AppServices>
    ): Promise<Response> => {
      let principal: Principal | undefined
      const program = Effect.gen(function* () {
        if (options.form) {
          // Refused before anything else: a change from another site is 403 whether or not its cookie came along.
          const crossSite = crossSiteProblem(request)
          if (crossSite !== undefined) return yield* Effect.fail(crossSite)
        }
        // Who is asking, before any body is read: an anonymous request never makes the server buffer one.
        const who = yield* authenticate(request)
        noteUser(request, who.username)
        const form = options.form ? yield* formBody(request) : yield* emptyForm()
        const token = form.get("_csrf")
        principal = yield* permit(request, who, options.guard, typeof token === "string" ? token : undefined)
        return yield* handler({ principal, form })
      })
      return finish(request, program, () => principal)
    },
    open: (request: Request, program: Effect.Effect<Response, ApiError, AppServices>): Promise<Response> =>
      finish(request, program, () => undefined)
  }
}

/** Builds API handlers bound to one runtime; `log` gets defects and nothing else. */
export const routes = (rt: AppRuntime, log: (line: string) => void) => {
  const runner = requestRunner(rt, log, jsonRenderer)
  return (guard: Guard, handler: Handler) =>
    (ctx: { readonly request: Request; readonly params: Readonly<Record<string, string | undefined>> }): Promise<Response> =>
      runner.guarded(ctx.request, { guard, form: false }, ({ principal }) =>
        handler({ request: ctx.request, params: ctx.params, url: new URL(ctx.request.url), principal })
      )
}

/** A handler that needs no principal (sign-in, health). */
export const publicRoutes = (rt: AppRuntime, log: (line: string) => void) => {
  const runner = requestRunner(rt, log, jsonRenderer)
  return (handler: (request: Request) => Effect.Effect<Response, ApiError, AppServices>) =>
    (ctx: { readonly request: Request }): Promise<Response> =>
      runner.open(ctx.request, handler(ctx.request))
}

/** The body decoded with `schema` (read by `jsonBody`, capped at `max`), or a 400 listing every problem. */
export const decodeBody = <A, I>(request: Request, schema: Schema.Schema<A, I>, max: number = MAX_BODY_BYTES): Effect.Effect<A, ApiError> =>
  Effect.flatMap(jsonBody(request, max), (body) =>
    Either.match(decodeAll(schema)(body), { onLeft: (p) => Effect.fail(badRequest(p)), onRight: Effect.succeed })
  )

/** A required path parameter (Elysia always sets declared ones). */
export const param = (input: RouteInput, name: string): string => input.params[name] ?? ""
