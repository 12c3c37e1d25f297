/**
 * The HTTP side of the scripted model servers: a Bun.serve listener on 127.0.0.1 that records every
 * request, consumes one step per model request and streams the frames a wire dialect encodes for it.
 */
import {
  type ScriptedApi,
  parseJsonBody,
  requestModel,
  type RecordedRequest,
  type ScriptedServer,
  type Step,
  type TurnContext,
  type TurnStep
} from "./scriptedSteps.ts"

/** How one provider's wire format renders steps; the harness does the HTTP and timing. */
export type Dialect = {
  /** Name used in loud failure messages, e.g. "openai". */
  readonly name: string
  /** The provider `api` this dialect serves. */
  readonly api: ScriptedApi
  /** The only path that consumes steps, e.g. "/v1/chat/completions". */
  readonly path: string
  /** SSE frames of a complete turn, in order. */
  readonly turn: (step: TurnStep, ctx: TurnContext) => ReadonlyArray<string>
  /** SSE frames sent before a stall goes silent (at least one, so headers are flushed). */
  readonly stall: (afterText: string | undefined, ctx: TurnContext) => ReadonlyArray<string>
  /** The provider-shaped JSON error body carrying `message`. */
  readonly errorBody: (message: string) => object
  /** The provider's models list (GET), answered when the server was started with `models`. */
  readonly modelsList?: { readonly path: string; readonly body: (ids: ReadonlyArray<string>) => object }
}

export interface ScriptedServerOptions {
  /** Model ids the server lists at its dialect's models path (provider "test connection"); none = 404. */
  readonly models?: ReadonlyArray<string>
  /** The key the models list requires (`Authorization: Bearer` or `x-api-key`); absent = any. */
  readonly apiKey?: string
  /** The port on 127.0.0.1 to listen on; absent = a free one. A port in use rejects the start. */
  readonly port?: number
}

/** Bun's fetch sends even loopback requests through HTTP(S)_PROXY unless NO_PROXY lists it (written to process.env: the test process's own fetch reads it there). */
export const bypassProxyForLoopback = (): void => {
  for (const name of ["NO_PROXY", "no_proxy"] as const) {
    const current = (process.env[name] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0)
    for (const host of ["127.0.0.1", "localhost"]) if (!current.includes(host)) current.push(host)
    process.env[name] = current.join(",")
  }
}

/** Headers that carry a key; recorded out of sight of printing (see `RecordedRequest`). */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  "authorization",
  "proxy-authorization",
  "x-api-key",
  "api-key",
  "x-goog-api-key",
  "cookie"
])

/**
 * The request's headers with lowercase names. Credential values live as getters on a private prototype:
 * `headers[name]` and `name in headers` work, while Bun.inspect shows `[Getter]` and JSON.stringify,
 * `Object.keys`, spreading and expect's diffs leave them out.
 */
const recordHeaders = (source: Headers): Readonly<Record<string, string>> => {
  const hidden: PropertyDescriptorMap = {}
  const shown: Record<string, string> = {}
  source.forEach((value, key) => {
    const name = key.toLowerCase()
    if (CREDENTIAL_HEADERS.has(name)) hidden[name] = { get: () => value, enumerable: false }
    else shown[name] = value
  })
  return Object.assign(Object.create(Object.create(null, hidden)) as Record<string, string>, shown)
}

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" }
const MAX_FN_DEPTH = 16
const encoder = new TextEncoder()

const jsonResponse = (status: number, body: object, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } })

const errorResponse = (step: Extract<Step, { kind: "http-error" }>): Response => {
  const text = typeof step.body === "string" ? step.body : JSON.stringify(step.body)
  const isJson = typeof step.body !== "string" || parseJsonBody(step.body) !== undefined
  const contentType = isJson ? "application/json" : "text/plain"
  return new Response(text, { status: step.status, headers: { "content-type": contentType, ...step.headers } })
}

/**
 * Streams `frames` one per pull, `delayMs` apart. With `holdOpen` the body then stays open until the
 * client cancels or `stopped` settles; the server's forced stop closes the socket itself.
 */
const frameStream = (
  frames: ReadonlyArray<string>,
  delayMs: number,
  holdOpen: boolean,
  stopped: Promise<void>
): ReadableStream<Uint8Array> => {
  let next = 0
  let cancel: () => void = () => {}
  const cancelled = new Promise<void>((resolve) => (cancel = resolve))
  const ended = Promise.race([cancelled, stopped])
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const frame = frames[next]
        if (frame !== undefined) {
          if (next > 0 && delayMs > 0) await Promise.race([Bun.sleep(delayMs), ended])
          next += 1
          controller.enqueue(encoder.encode(frame))
          return
        }
        if (holdOpen) await ended
        controller.close()
      } catch {
        // The client went away or the server stopped mid-pull: nothing left to deliver.
      }
    },
    cancel() {
      cancel()
    }
  })
}

/** Starts a scripted server speaking `dialect`; `prefix` is appended to the origin to form `baseUrl`. */
export const startScriptedServer = async (
  dialect: Dialect,
  steps: ReadonlyArray<Step>,
  prefix: string,
  options: ScriptedServerOptions = {}
): Promise<ScriptedServer> => {
  bypassProxyForLoopback()
  const queue: Array<Step> = [...steps]
  const requests: Array<RecordedRequest> = []
  let scripted = 0
  let markStopped: () => void = () => {}
  const stopped = new Promise<void>((resolve) => (markStopped = resolve))

  const resolveStep = async (step: Step, request: RecordedRequest): Promise<Exclude<Step, { kind: "fn" }>> => {
    let current = step
    for (let depth = 0; current.kind === "fn"; depth += 1) {
      if (depth >= MAX_FN_DEPTH) throw new Error(`scripted ${dialect.name} server: fn steps nested too deeply`)
      current = await current.respond(request)
    }
    return current
  }

  const respond = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname
    const rawBody = await req.text()
    const headers = recordHeaders(req.headers)
    const recorded: RecordedRequest = { method: req.method, path, headers, body: parseJsonBody(rawBody), rawBody }
    requests.push(recorded)
    const list = dialect.modelsList
    if (req.method === "GET" && list !== undefined && options.models !== undefined && path === list.path) {
      const key = headers["x-api-key"] ?? (headers["authorization"] ?? "").replace(/^Bearer /, "")
      if (options.apiKey !== undefined && key !== options.apiKey) return jsonResponse(401, dialect.errorBody("invalid api key"))
      return jsonResponse(200, list.body(options.models))
    }
    if (req.method !== "POST" || path !== dialect.path) {
      const message = `scripted ${dialect.name} server: unexpected ${req.method} ${path} (expected POST ${dialect.path})`
      return jsonResponse(404, dialect.errorBody(message))
    }
    scripted += 1
    const next = queue.shift()
    if (next === undefined) {
      const message = `scripted ${dialect.name} server: script exhausted (request #${scripted} has no step)`
      // Retrying cannot help a finished script: clients that honour x-should-retry fail at once.
      return jsonResponse(500, dialect.errorBody(message), { "x-should-retry": "false" })
    }
    const ctx: TurnContext = { requestNumber: scripted, model: requestModel(recorded.body) }
    const step = await resolveStep(next, recorded)
    switch (step.kind) {
      case "http-error":
        return errorResponse(step)
      case "stall":
        return new Response(frameStream(dialect.stall(step.afterText, ctx), 0, true, stopped), { headers: SSE_HEADERS })
      case "turn":
        return new Response(frameStream(dialect.turn(step, ctx), step.delayMs ?? 0, false, stopped), {
          headers: SSE_HEADERS
        })
    }
  }

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: options.port ?? 0,
    // A stall must stay silent for as long as the test wants, so Bun's 10 s idle cut-off is disabled.
    idleTimeout: 0,
    fetch: async (req) => {
      try {
        return await respond(req)
      } catch (error) {
        const message = `scripted ${dialect.name} server: ${error instanceof Error ? error.message : String(error)}`
        return jsonResponse(500, dialect.errorBody(message))
      }
    }
  })

  let stopping: Promise<void> | undefined
  return {
    api: dialect.api,
    baseUrl: `http://127.0.0.1:${server.port}${prefix}`,
    requests,
    append: (...more) => {
      queue.push(...more)
    },
    remaining: () => queue.length,
    stop: () => {
      stopping ??= (async () => {
        markStopped()
        await server.stop(true)
      })()
      return stopping
    }
  }
}
