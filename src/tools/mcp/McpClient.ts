/**
 * One connection to an MCP server over Streamable HTTP (@modelcontextprotocol/sdk): the URL policy
 * at connect with the connection pinned (pinnedFetch), no redirects, capped responses, bounded
 * connect, listing and calls. Header values never appear in an error it returns.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Duration, Effect, Schema, type Scope } from "effect"
import type { McpServer } from "../../contract/JobSpec.ts"
import { pinnedFetch } from "../../net/pinnedFetch.ts"
import type { Resolver } from "../../net/urlPolicy.ts"

/** Connect + initialize + list tools, per server. */
export const DEFAULT_DISCOVERY_MS = 10_000
/** One tool call when the server entry names no `timeoutSec`. */
export const DEFAULT_CALL_TIMEOUT_SEC = 60
/** Largest single HTTP response body accepted from a server (a listing or a result). */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024
/** Pages of `tools/list` followed, and tools kept per server. */
const MAX_LIST_PAGES = 20
const MAX_TOOLS_PER_SERVER = 500
/** Longest error text kept from a server or the SDK. */
const MAX_ERROR_CHARS = 500

/** An MCP failure (connect, listing, call, timeout, URL policy); `message` is safe to show: no header value. */
export class McpFailed extends Schema.TaggedError<McpFailed>()("McpFailed", {
  server: Schema.String,
  message: Schema.String
}) {}

/** A tool as the server lists it. */
export interface McpToolInfo {
  readonly name: string
  readonly description: string
  readonly inputSchema: unknown
  /** The server's `annotations.readOnlyHint` is exactly `true`. */
  readonly readOnly: boolean
}

/** What a tool call returned, as the SDK decoded it. */
export interface McpCallResult {
  readonly content: ReadonlyArray<Record<string, unknown>>
  readonly structuredContent?: unknown
  readonly isError: boolean
}

export interface McpConnection {
  readonly server: string
  /** The tools listed at connect. */
  readonly tools: ReadonlyArray<McpToolInfo>
  /**
   * Calls one tool; ends within `timeoutMs` (the server is told to cancel). A server-side tool error
   * is a result with `isError`, not a failure; transport and protocol failures are `McpFailed`.
   */
  readonly call: (tool: string, args: Record<string, unknown>, timeoutMs: number) => Effect.Effect<McpCallResult, McpFailed>
}

export interface ConnectOptions {
  /** Bound on connect + initialize + listing. Default DEFAULT_DISCOVERY_MS. */
  readonly timeoutMs?: number
  /** DNS seam for tests; the system resolver by default. */
  readonly resolve?: Resolver
}

/** Removes every header value (and its URL/base64 spellings) from `text`. */
export const scrubber = (headers: Readonly<Record<string, string>> | undefined) => {
  const needles = Object.values(headers ?? {})
    .filter((v) => v.length >= 4)
    .flatMap((v) => [v, encodeURIComponent(v), Buffer.from(v).toString("base64").replace(/=+$/, ""), Buffer.from(v).toString("base64url")])
    .sort((a, b) => b.length - a.length)
  return (text: string): string => {
    let out = text
    for (const n of needles) if (out.includes(n)) out = out.split(n).join("[redacted]")
    return out
  }
}

/** Error text from a server or the SDK: header values removed, control characters blanked, capped. */
const errorScrubber = (headers: Readonly<Record<string, string>> | undefined) => {
  const scrub = scrubber(headers)
  return (text: string): string => {
    const out = scrub(text).replace(/[\u0000-\u001f\u007f]/g, " ")
    return out.length > MAX_ERROR_CHARS ? `${out.slice(0, MAX_ERROR_CHARS)}…` : out
  }
}

/** A response whose body fails once it passes `max` bytes (a server cannot grow our memory without bound). */
const capBody = (res: Response, max: number): Response => {
  if (res.body === null || [101, 204, 205, 304].includes(res.status)) return res
  let seen = 0
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength
      if (seen > max) controller.error(new Error(`the server's response passed ${max} bytes`))
      else controller.enqueue(chunk)
    }
  })
  return new Response(res.body.pipeThrough(counter), { status: res.status, statusText: res.statusText, headers: res.headers })
}

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/**
 * Connects to `server`, initializes and lists its tools, all within `timeoutMs`; the connection is
 * closed when the scope closes. Fails with `McpFailed` naming what went wrong (URL refused, no
 * answer in time, HTTP status, protocol error) — never with a header value.
 */
export const connectMcp = (server: McpServer, options: ConnectOptions = {}): Effect.Effect<McpConnection, McpFailed, Scope.Scope> => {
  const scrub = errorScrubber(server.headers)
  const fail = (what: string) => (e: unknown) => new McpFailed({ server: server.name, message: scrub(`${what}: ${errorText(e)}`) })
  const timeoutMs = options.timeoutMs ?? DEFAULT_DISCOVERY_MS
  const allowPrivateNetwork = server.allowPrivateNetwork === true
  const fetchPinned = async (input: string | URL, init?: RequestInit): Promise<Response> =>
    capBody(
      await pinnedFetch(input, init ?? {}, { allowPrivateNetwork, ...(options.resolve === undefined ? {} : { resolve: options.resolve }) }),
      MAX_RESPONSE_BYTES
    )

  const open = Effect.tryPromise({
    try: async (signal) => {
      if (!URL.canParse(server.url)) throw new Error("the URL is not a URL")
      // Loaded on first use: the SDK costs start-up time a job without MCP servers should not pay.
      const { Client, StreamableHTTPClientTransport } = await import("./mcpSdk.ts")
      const transport = new StreamableHTTPClientTransport(new URL(server.url), {
        fetch: fetchPinned,
        // POSTs and DELETEs never follow a redirect; GETs follow one only within the origin, through fetchPinned again.
        requestInit: { headers: { ...server.headers }, redirect: "manual" },
        reconnectionOptions: { initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1, maxRetries: 0 }
      })
      const client = new Client({ name: "kintsugi-runtime", version: "0.1.0" }, { capabilities: {} })
      // Errors of the background stream are not ours to print (they could carry server text); calls report their own.
      client.onerror = () => {}
      // Interrupted while connecting (the job ended): nothing may stay open.
      signal.addEventListener("abort", () => void client.close().catch(() => {}), { once: true })
      return client.connect(transport, { timeout: timeoutMs, signal }).then(
        () => client,
        async (e: unknown) => {
          await client.close().catch(() => {})
          throw e
        }
      )
    },
    catch: fail("cannot connect")
  })

  const close = (client: Client) =>
    Effect.promise(() => client.close().catch(() => {})).pipe(Effect.timeout(Duration.seconds(2)), Effect.ignore)

  const list = (client: Client) =>
    Effect.tryPromise({
      try: async (signal) => {
        const tools: Array<McpToolInfo> = []
        let cursor: string | undefined
        for (let page = 0; page < MAX_LIST_PAGES && tools.length < MAX_TOOLS_PER_SERVER; page++) {
          const res = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs, signal })
          for (const t of res.tools) {
            tools.push({
              name: t.name,
              description: t.description ?? t.title ?? "",
              inputSchema: t.inputSchema,
              readOnly: t.annotations?.readOnlyHint === true
            })
          }
          cursor = res.nextCursor
          if (cursor === undefined) break
        }
        return tools.slice(0, MAX_TOOLS_PER_SERVER)
      },
      catch: fail("cannot list its tools")
    })

  return Effect.gen(function* () {
    // Not acquireRelease: its acquire is uninterruptible, and connecting must stop at the bound.
    const client = yield* open
    yield* Effect.addFinalizer(() => close(client))
    const tools = yield* list(client)
    const call = (tool: string, args: Record<string, unknown>, callMs: number): Effect.Effect<McpCallResult, McpFailed> =>
      Effect.tryPromise({
        try: async (signal) => {
          const res = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: callMs, signal })
          const content = Array.isArray(res.content) ? (res.content as ReadonlyArray<Record<string, unknown>>) : []
          return {
            content,
            ...(res.structuredContent === undefined ? {} : { structuredContent: res.structuredContent }),
            isError: res.isError === true
          }
        },
        catch: fail(`tool "${tool}" failed`)
      }).pipe(
        // The SDK's own timeout normally fires first; this one holds even if a promise never settles.
        Effect.timeoutFail({
          duration: Duration.millis(callMs + 1000),
          onTimeout: () =>
            new McpFailed({ server: server.name, message: `tool "${tool}" gave no answer within ${Math.round(callMs / 1000)} s` })
        })
      )
    return { server: server.name, tools, call }
  }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(timeoutMs + 1000),
      onTimeout: () => new McpFailed({ server: server.name, message: `no answer within ${Math.round(timeoutMs / 1000)} s` })
    })
  )
}
