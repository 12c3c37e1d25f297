/**
 * The script language shared by the scripted OpenAI and Anthropic test servers: step types, the
 * recorded-request shape and the pure helpers both wire dialects use to turn a turn into chunks.
 */

/** A tool call the scripted model makes; `arguments` as a string is sent verbatim (may be invalid JSON). */
export type ScriptedToolCall = {
  readonly id?: string
  readonly name: string
  readonly arguments: Readonly<Record<string, unknown>> | string
}

/** Token usage reported for a turn; `input` is the uncached prompt, as pi-ai reports it. */
export type ScriptedUsage = {
  readonly input: number
  readonly output: number
  readonly cacheRead?: number
  readonly cacheWrite?: number
}

/** How the scripted turn ends, in OpenAI terms (Anthropic maps to end_turn / tool_use / max_tokens). */
export type ScriptedFinish = "stop" | "tool_calls" | "length"

/** A successful streamed assistant turn: thinking, then text, then tool calls. */
export type TurnStep = {
  readonly kind: "turn"
  readonly text?: string
  readonly thinking?: string
  readonly toolCalls?: ReadonlyArray<ScriptedToolCall>
  readonly usage?: ScriptedUsage
  /** Default: "tool_calls" when `toolCalls` is non-empty, else "stop". */
  readonly finish?: ScriptedFinish
  /** Characters per streamed delta for text, thinking and tool arguments. Default 16. */
  readonly chunkSize?: number
  /** Pause between streamed frames, in milliseconds. Default 0. */
  readonly delayMs?: number
}

/** A non-streamed HTTP error response; an object body is sent as JSON. */
export type HttpErrorStep = {
  readonly kind: "http-error"
  readonly status: number
  readonly body: string | object
  readonly headers?: Readonly<Record<string, string>>
}

/** 200 + SSE headers (and optionally some text), then silence until the client leaves or the server stops. */
export type StallStep = { readonly kind: "stall"; readonly afterText?: string }

/** Decides the response from the recorded request (may itself return another `fn`). */
export type FnStep = {
  readonly kind: "fn"
  readonly respond: (request: RecordedRequest) => Step | Promise<Step>
}

/** One scripted response; steps are consumed in order, one per model request. */
export type Step = TurnStep | HttpErrorStep | StallStep | FnStep

/**
 * What the server saw: header names are lowercase; `body` is the parsed JSON (undefined if unparsable).
 * Credential headers (`CREDENTIAL_HEADERS`) are readable by name (`headers["authorization"]`) but are not
 * own properties, so printing, diffing or JSON-serialising a request never shows the key.
 */
export type RecordedRequest = {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
  readonly rawBody: string
}

/** The pi-ai API a scripted server speaks (the `api` of the provider config that points at it). */
export type ScriptedApi = "openai-completions" | "anthropic-messages"

/** A running scripted server. */
export type ScriptedServer = {
  /** The wire dialect, as a provider config's `api` (always set by the starters; optional for hand-made fakes). */
  readonly api?: ScriptedApi
  /** The model `baseUrl`: ends in `/v1` for OpenAI, the bare origin for Anthropic. */
  readonly baseUrl: string
  /** Every request received, in arrival order (including unexpected paths and exhausted-script requests). */
  readonly requests: ReadonlyArray<RecordedRequest>
  /** Appends steps to the end of the script. */
  readonly append: (...steps: ReadonlyArray<Step>) => void
  /** How many scripted steps have not been consumed yet. */
  readonly remaining: () => number
  /** Closes every connection (stalled ones included) and the listener; idempotent. */
  readonly stop: () => Promise<void>
}

/** Per-request facts a dialect needs to encode a response. */
export type TurnContext = {
  /** 1-based number of the scripted request this response answers. */
  readonly requestNumber: number
  /** The `model` field of the request body, echoed so pi-ai does not see a fallback model. */
  readonly model: string
}

const DEFAULT_CHUNK_SIZE = 16

/** Splits text into pieces of at most `size` code points; empty text gives no pieces. */
export const splitChunks = (text: string, size: number | undefined): ReadonlyArray<string> => {
  const points = Array.from(text)
  const step = Math.max(1, Math.floor(size ?? DEFAULT_CHUNK_SIZE))
  const pieces: Array<string> = []
  for (let i = 0; i < points.length; i += step) pieces.push(points.slice(i, i + step).join(""))
  return pieces
}

/** The raw JSON text of a tool call's arguments, exactly as it goes on the wire. */
export const argumentsText = (call: ScriptedToolCall): string =>
  typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments)

/** The finish reason of a turn, applying the tool_calls/stop default. */
export const finishOf = (step: TurnStep): ScriptedFinish => step.finish ?? ((step.toolCalls?.length ?? 0) > 0 ? "tool_calls" : "stop")

/** One server-sent event frame; `event` is omitted for data-only streams (OpenAI). */
export const sseFrame = (data: string, event?: string): string => `${event === undefined ? "" : `event: ${event}\n`}data: ${data}\n\n`

/** Parses a request body as JSON, or undefined when it is not JSON. */
export const parseJsonBody = (raw: string): unknown => {
  if (raw.length === 0) return undefined
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return undefined
  }
}

/** The `model` string of a parsed request body, or a placeholder. */
export const requestModel = (body: unknown): string =>
  typeof body === "object" && body !== null && "model" in body && typeof body.model === "string" ? body.model : "scripted-model"
