/**
 * The serving side of the services channel (design/memory-and-web.md §1): a registry of service
 * handlers (memory, web, the job's transcript: each a name, its input schema, a grant check and the work) and the
 * endpoint job children call, `POST {url}/{tool}` with the job's bearer token. The endpoint listens on
 * 127.0.0.1, apart from the API's port: it answers only job children on this host (whatever HOST says),
 * needs no session or CSRF (the job's token is its only credential), and `kintsugi run` has it too.
 */
import { Context, Effect, Layer, Runtime, Schema, type Scope } from "effect"
import { problemsOf } from "../contract/Problem.ts"
import type { ServiceAnswer } from "../tools/services/ServiceChannel.ts"
import { type ServiceGrant, ServiceTokens } from "./ServiceTokens.ts"

/** Who a grant check is about: a job of this project (never empty) and agent. */
export interface GrantSubject {
  readonly projectId: string
  readonly agentId: string
}

export interface ServiceHandler {
  /** The tool's name (a SERVICE_TOOLS name). */
  readonly name: string
  /** The input schema (the same one the kernel's tool declares). */
  readonly params: Schema.Schema.AnyNoContext
  /**
   * Whether a job of this project and agent gets the tool: asked when the job starts and again on
   * every call (a project that turns memory off mid-job stops its tools). `undefined` = granted, else
   * the reason it is not.
   */
  readonly refusal: (subject: GrantSubject) => Effect.Effect<string | undefined>
  /** Largest request body the handler takes (default: MAX_SERVICE_REQUEST_BYTES). */
  readonly maxBytes?: number
  /** Does the work; failures the model can act on are answers with `isError`. Never fails. */
  readonly handle: (input: unknown, grant: ServiceGrant) => Effect.Effect<ServiceAnswer>
}

/** Every service handler of this installation (wired in the composition root). */
export class ServiceHandlers extends Context.Tag("worker/ServiceHandlers")<ServiceHandlers, ReadonlyArray<ServiceHandler>>() {}

const SERVICES_PATH = "/internal/services"
/** Largest request body a service call may send (a note is 4,000 characters; a scratchpad 32,000). */
const MAX_SERVICE_REQUEST_BYTES = 256 * 1024

export class ServicesEndpoint extends Context.Tag("worker/ServicesEndpoint")<
  ServicesEndpoint,
  {
    /** The channel's base URL (`http://127.0.0.1:<port>/internal/services`); starts the listener on first use. */
    readonly url: Effect.Effect<string>
    /** Answers one request (the listener's handler; tests may call it directly). */
    readonly handle: (request: Request) => Promise<Response>
  }
>() {}

const answer = (status: number, text: string, isError: boolean): Response =>
  new Response(JSON.stringify({ text, isError }), { status, headers: { "content-type": "application/json", "cache-control": "no-store" } })

const readCapped = async (request: Request, max: number): Promise<string | undefined> => {
  const declared = Number(request.headers.get("content-length") ?? "0")
  if (declared > max) return undefined
  const bytes = new Uint8Array(await request.arrayBuffer())
  if (bytes.byteLength > max) return undefined
  return new TextDecoder("utf-8", { fatal: true }).decode(bytes)
}

/** One call: token, tool, grant (again), input, then the handler. */
const serveCall = (request: Request, handlers: ReadonlyArray<ServiceHandler>): Effect.Effect<Response, never, ServiceTokens> =>
  Effect.gen(function* () {
    const url = new URL(request.url)
    // Tool names are plain ASCII: no percent-decoding, so a malformed escape is just an unknown tool.
    const tool = url.pathname.startsWith(`${SERVICES_PATH}/`) ? url.pathname.slice(SERVICES_PATH.length + 1) : undefined
    if (request.method !== "POST" || tool === undefined) return answer(404, "no such service endpoint", true)
    const auth = request.headers.get("authorization") ?? ""
    const token = auth.startsWith("Bearer ") ? auth.slice(7).trim() : ""
    const grant = yield* Effect.either((yield* ServiceTokens).verify(token))
    if (grant._tag === "Left") return answer(401, grant.left.message, true)
    yield* Effect.annotateCurrentSpan({ "kintsugi.job.id": grant.right.jobId, "kintsugi.service.tool": tool })
    const handler = handlers.find((h) => h.name === tool)
    if (handler === undefined) return answer(404, `no service tool "${tool}"`, true)
    if (!grant.right.tools.includes(tool)) return answer(403, `${tool} is not granted to this job`, true)
    const refusal = yield* handler.refusal({ projectId: grant.right.projectId, agentId: grant.right.agentId })
    if (refusal !== undefined) return answer(403, `${tool} is no longer granted: ${refusal}`, true)
    const max = handler.maxBytes ?? MAX_SERVICE_REQUEST_BYTES
    const text = yield* Effect.promise(() => readCapped(request, max).catch(() => null))
    if (text === undefined) return answer(413, `the input is larger than ${max} bytes`, true)
    let body: unknown
    try {
      body = text === null ? undefined : JSON.parse(text === "" ? "{}" : text)
    } catch {
      body = undefined
    }
    if (body === undefined) return answer(400, "the input is not one JSON document", true)
    const decoded = Schema.decodeUnknownEither(handler.params, { errors: "all", onExcessProperty: "error" })(body)
    if (decoded._tag === "Left") {
      const problems = problemsOf(decoded.left).map((p) => `  - ${p.path === "(root)" ? "(input)" : p.path}: ${p.message}`)
      return answer(400, `Invalid input for ${tool}:\n${problems.join("\n")}`, true)
    }
    const result = yield* handler.handle(decoded.right, grant.right)
    return answer(200, result.text, result.isError)
  }).pipe(
    Effect.withSpan("Services.call", { kind: "server", captureStackTrace: false }),
    Effect.catchAllDefect((defect) => Effect.as(Effect.logError("service call failed", defect), answer(500, "the service failed", true)))
  )

const makeServicesEndpoint: Effect.Effect<ServicesEndpoint["Type"], never, ServiceTokens | ServiceHandlers | Scope.Scope> = Effect.gen(
  function* () {
    const handlers = yield* ServiceHandlers
    const runtime = yield* Effect.runtime<ServiceTokens>()
    const handle = (request: Request) => Runtime.runPromise(runtime)(serveCall(request, handlers))
    const maxRequestBodySize = Math.max(MAX_SERVICE_REQUEST_BYTES, ...handlers.map((h) => h.maxBytes ?? 0))
    let server: ReturnType<typeof Bun.serve> | undefined
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        await server?.stop(true)
        server = undefined
      })
    )
    return {
      handle,
      url: Effect.sync(() => {
        server ??= Bun.serve({ hostname: "127.0.0.1", port: 0, maxRequestBodySize, fetch: handle })
        return `http://127.0.0.1:${server.port}${SERVICES_PATH}`
      })
    }
  }
)

export const ServicesEndpointLive: Layer.Layer<ServicesEndpoint, never, ServiceTokens | ServiceHandlers> = Layer.scoped(
  ServicesEndpoint,
  makeServicesEndpoint
)
