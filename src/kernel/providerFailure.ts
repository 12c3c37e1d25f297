/**
 * What a failed model call was, in the provider's words: a fetch that notes the HTTP status and
 * headers of each answer (pi-ai keeps only a message), and the `job.failed` text built from them.
 */
import type { AssistantMessage, FetchFunction } from "@earendil-works/pi-ai"
import { EgressRefused } from "./PiAiModels.ts"
import type { AttemptFailure, GiveUpReason } from "./retryPolicy.ts"

/** What the HTTP layer saw on the last request of a model call. */
export interface Observation {
  readonly status?: number
  readonly headers?: Headers
  /** fetch itself failed: no HTTP answer (refused, reset, DNS). Not set for egress refusals or aborts. */
  readonly connectionFailed?: boolean
}

export interface ObservingFetch {
  readonly fetch: FetchFunction
  /** The observation of the last request since the previous `take`, then forgets it. */
  readonly take: () => Observation
}

/** Wraps `inner` so the status and headers of each answer can be read after pi-ai has consumed it. */
export const observingFetch = (inner: FetchFunction): ObservingFetch => {
  let last: Observation = {}
  const observed = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    inner(input, init).then(
      (response) => {
        last = { status: response.status, headers: response.headers }
        return response
      },
      (error: unknown) => {
        last = { connectionFailed: !(error instanceof EgressRefused) && init?.signal?.aborted !== true }
        throw error
      }
    )
  return {
    fetch: Object.assign(observed, { preconnect: inner.preconnect }) as FetchFunction,
    take: () => {
      const o = last
      last = {}
      return o
    }
  }
}

/** Bun's and the SDKs' wording when a stream broke off after its headers. */
const STREAM_BROKEN = /ECONNRESET|socket connection was closed|socket hang up|terminated|connection (error|reset|closed)/i

/** The retry policy's view of a failed call. */
export const attemptFailure = (msg: AssistantMessage, seen: Observation, streamed: boolean): AttemptFailure => {
  const message = msg.errorMessage ?? msg.stopReason
  const answered = seen.status !== undefined && seen.status < 300
  return {
    status: seen.status,
    headers: seen.headers,
    connectionLost: seen.connectionFailed === true || (answered && STREAM_BROKEN.test(message)),
    message,
    streamed
  }
}

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? (value as Record<string, unknown>)[key] : undefined

/** `{error: {message, type}}`, `{message, type}` or `{type: "error", error: {…}}` → "message (type)". */
const fromJson = (text: string): string | undefined => {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return undefined
  }
  const inner = typeof field(body, "error") === "object" ? field(body, "error") : body
  const message = field(inner, "message")
  if (typeof message !== "string") return undefined
  const type = field(inner, "type") ?? field(inner, "code")
  return typeof type === "string" && type !== "" ? `${message} (${type})` : message
}

/** The provider's own words: pi-ai's "429: {json}" / "429 text" without the status, JSON bodies unwrapped. */
export const providerText = (errorMessage: string, status: number | undefined): string => {
  const rest = status === undefined ? errorMessage : errorMessage.replace(new RegExp(`^${status}:?\\s*`), "")
  return fromJson(rest.trim()) ?? rest.trim()
}

const GIVE_UP: Readonly<Record<Exclude<GiveUpReason, "final">, string>> = {
  streamed: "not retried: part of the answer had already been streamed",
  attempts: "retries used up",
  deadline: "the next retry wait would pass timeoutSec"
}

/**
 * The `job.failed` message of a provider failure: status, the provider's message, and why retrying
 * stopped. Not redacted or cut here: the kernel does both to every failure message.
 */
export const failureMessage = (failure: AttemptFailure, attempts: number, why: GiveUpReason | undefined): string => {
  const text = providerText(failure.message, failure.status)
  const what = failure.connectionLost
    ? `connection to the provider failed: ${text}`
    : failure.status !== undefined && failure.status >= 300
      ? `the provider answered HTTP ${failure.status}: ${text}`
      : text
  const notes: Array<string> = []
  if (attempts > 1) notes.push(`after ${attempts} attempts`)
  if (why !== undefined && why !== "final") notes.push(GIVE_UP[why])
  const after = notes.length === 0 ? "" : ` (${notes.join("; ")})`
  return `model call failed: ${what}${after}`
}
