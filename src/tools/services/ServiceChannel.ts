/**
 * The job child's client of the worker-bound services channel (design/memory-and-web.md §1): one POST
 * `{url}/{tool}` per call with the tool's input as JSON and the job's bearer token, bounded in time and
 * in answer size. The token is a secret: it is registered in the job's redactor and never in a message.
 */
import { Effect, Schema } from "effect"
import { ToolError } from "../../job/ToolError.ts"

/** The envelope's `services`: the endpoint and this job's token; `transcript`: the job hands over each turn. */
export interface ServiceChannelConfig {
  readonly url: string
  readonly token: string
  readonly transcript?: boolean | undefined
}

/** The channel's endpoint that takes one transcript turn (not a tool: no model ever calls it). */
export const TRANSCRIPT_ENDPOINT = "transcript"
/** Time the worker has to store one turn. */
const TRANSCRIPT_TIMEOUT_MS = 60_000

/** What the service answers for every call (also with 4xx): text for the model and whether it is an error. */
export const ServiceAnswer = Schema.Struct({ text: Schema.String, isError: Schema.Boolean })
export type ServiceAnswer = typeof ServiceAnswer.Type

/** Default time a call may take (connect + answer); a tool definition may ask for more. */
export const SERVICE_CALL_TIMEOUT_MS = 30_000
/** Largest answer read from the service; the service cuts its own results well below this. */
export const MAX_SERVICE_ANSWER_BYTES = 1024 * 1024

const decodeAnswer = Schema.decodeUnknownEither(ServiceAnswer)

export interface ServiceChannel {
  /**
   * One call of `tool` with `input`. Never fails with anything but a `ToolError` the model can read:
   * an error answer, a refused token (the job has ended), an unreachable service or a timeout.
   */
  readonly call: (tool: string, input: unknown, timeoutMs?: number) => Effect.Effect<string, ToolError>
}

const refusal = (status: number): string =>
  status === 401
    ? "the services channel refused this job's token (the job is no longer running)"
    : status === 403
      ? "this tool is not granted to this job"
      : `the service answered HTTP ${status}`

/** Reads at most `max` bytes of a body as UTF-8; undefined when it is larger (the rest is not buffered). */
export const readCapped = async (response: Response, max: number): Promise<string | undefined> => {
  const reader = response.body?.getReader()
  if (reader === undefined) return ""
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > max) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString("utf8")
}

export const makeServiceChannel = (config: ServiceChannelConfig): ServiceChannel => ({
  call: (tool, input, timeoutMs = SERVICE_CALL_TIMEOUT_MS) =>
    Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(`${config.url.replace(/\/+$/, "")}/${encodeURIComponent(tool)}`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${config.token}` },
          body: JSON.stringify(input ?? {}),
          redirect: "manual",
          signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
        })
        const text = await readCapped(response, MAX_SERVICE_ANSWER_BYTES)
        return { status: response.status, text }
      },
      catch: (e) =>
        new ToolError({
          message:
            e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError")
              ? `the ${tool} service did not answer within ${Math.round(timeoutMs / 1000)} s`
              : `the ${tool} service is unreachable`
        })
    }).pipe(
      Effect.flatMap(({ status, text }) => {
        if (text === undefined)
          return Effect.fail(new ToolError({ message: `the ${tool} service answered more than ${MAX_SERVICE_ANSWER_BYTES} bytes` }))
        let parsed: unknown
        try {
          parsed = JSON.parse(text)
        } catch {
          parsed = undefined
        }
        const answer = decodeAnswer(parsed)
        if (answer._tag === "Left") return Effect.fail(new ToolError({ message: `${tool}: ${refusal(status)}` }))
        if (answer.right.isError || status >= 400) return Effect.fail(new ToolError({ message: answer.right.text }))
        return Effect.succeed(answer.right.text)
      })
    )
})

/**
 * Sends one transcript turn (a JSON document) to the worker; fails with the status it answered or why
 * it could not be reached, never with the answer's text (a decoder's message could quote the turn).
 */
export const makeTranscriptSender =
  (config: ServiceChannelConfig) =>
  (turn: unknown): Effect.Effect<void, ToolError> =>
    Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(`${config.url.replace(/\/+$/, "")}/${TRANSCRIPT_ENDPOINT}`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${config.token}` },
          body: JSON.stringify(turn),
          redirect: "manual",
          signal: AbortSignal.any([signal, AbortSignal.timeout(TRANSCRIPT_TIMEOUT_MS)])
        })
        await response.body?.cancel()
        return response.status
      },
      catch: (e) =>
        new ToolError({
          message:
            e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError")
              ? `the worker did not take it within ${Math.round(TRANSCRIPT_TIMEOUT_MS / 1000)} s`
              : "the services channel is unreachable"
        })
    }).pipe(
      Effect.flatMap((status) =>
        status === 200 ? Effect.void : Effect.fail(new ToolError({ message: `the worker answered HTTP ${status}` }))
      )
    )
