/**
 * A scripted model with a context window, for compaction tests and benches: it counts each request's
 * prompt as its body's characters / 4, reports that as usage, answers an overflow error (in the
 * provider's own words) when it passes the window, and tells summary requests (no tools) from job turns.
 */
import type { RecordedRequest, Step, TurnStep } from "./scriptedSteps.ts"
import type { ScriptedApi } from "./jobChild.ts"

/** One request the model answered, with the usage it reported. */
export interface WindowedCall {
  readonly kind: "turn" | "summary" | "overflow"
  readonly request: RecordedRequest
  readonly input: number
  readonly output: number
}

export interface WindowedModelOptions {
  readonly api: ScriptedApi
  readonly window: number
  /** The agent's n-th answered turn (1-based; overflowed requests do not count). */
  readonly turn: (n: number, request: RecordedRequest) => Omit<TurnStep, "kind" | "usage">
  /** The n-th summary's text (1-based). Default: "SUMMARY-n: …". */
  readonly summary?: (n: number, request: RecordedRequest) => string
  /** Output tokens a summary reports. Default: its characters / 4. */
  readonly summaryOutputTokens?: (n: number) => number
  /** Job requests (1-based, every job request counted) answered with an overflow error whatever their size. */
  readonly overflowAt?: (jobRequest: number) => boolean
  /** Characters per token of the model's own count. Default 4; more is a denser tokenizer that reports fewer tokens than the kernel's estimate. */
  readonly charsPerToken?: number
}

export interface WindowedModel {
  /** Steps for the scripted server (enough for any test: each step decides from the request). */
  readonly steps: ReadonlyArray<Step>
  readonly calls: ReadonlyArray<WindowedCall>
}

/** A summary request is the one without tools. */
export const isSummaryRequest = (r: RecordedRequest): boolean => typeof r.body === "object" && r.body !== null && !("tools" in r.body)

const overflowBody = (api: ScriptedApi, tokens: number, window: number): object =>
  api === "anthropic-messages"
    ? { type: "error", error: { type: "invalid_request_error", message: `prompt is too long: ${tokens} tokens > ${window} maximum` } }
    : {
        error: {
          message: `This model's maximum context length is ${window} tokens. However, you requested ${tokens} tokens.`,
          type: "invalid_request_error",
          code: "context_length_exceeded",
          param: "messages"
        }
      }

export const createWindowedModel = (o: WindowedModelOptions, maxRequests = 2000): WindowedModel => {
  const tokensOf = (text: string): number => Math.ceil(text.length / (o.charsPerToken ?? 4))
  const calls: Array<WindowedCall> = []
  let turns = 0
  let jobRequests = 0
  let summaries = 0
  const respond = (request: RecordedRequest): Step => {
    const input = tokensOf(request.rawBody)
    const summary = isSummaryRequest(request)
    if (!summary) jobRequests += 1
    if (input > o.window || (!summary && o.overflowAt?.(jobRequests) === true)) {
      calls.push({ kind: "overflow", request, input: 0, output: 0 })
      return { kind: "http-error", status: 400, body: overflowBody(o.api, input, o.window) }
    }
    if (summary) {
      summaries += 1
      const text = o.summary?.(summaries, request) ?? `SUMMARY-${summaries}: the agent read some files and took notes.`
      const output = o.summaryOutputTokens?.(summaries) ?? tokensOf(text)
      calls.push({ kind: "summary", request, input, output })
      return { kind: "turn", text, usage: { input, output } }
    }
    turns += 1
    const step = o.turn(turns, request)
    const output = tokensOf((step.text ?? "") + JSON.stringify(step.toolCalls ?? []))
    calls.push({ kind: "turn", request, input, output })
    return { kind: "turn", ...step, usage: { input, output } }
  }
  return { steps: Array.from({ length: maxRequests }, () => ({ kind: "fn", respond }) as const), calls }
}
