/**
 * The `Llm` service over pi-ai: one streamed call per attempt through the job's pinned fetch, text
 * deltas out as events, the streaming guard per call, failures described for the retry policy.
 * pi-ai reports failures inside the stream; only here do they become kernel errors.
 */
import type { Api, Model } from "@earendil-works/pi-ai"
import { Effect } from "effect"
import type { ThinkingLevel } from "../contract/AgentDefinition.ts"
import { LlmFailed } from "./errors.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import { Llm, withRetries, type Attempt, type ModelRequest } from "./Llm.ts"
import type { JobModels } from "./PiAiModels.ts"
import { attemptFailure, observingFetch } from "./providerFailure.ts"
import type { RetryPolicy } from "./retryPolicy.ts"

/** What the adapter needs of a job. */
export interface PiAiJob {
  readonly jobId: string
  readonly jobModels: JobModels
  readonly model: Model<Api>
  /** The effective thinking level ("off" sends none). */
  readonly thinking: ThinkingLevel
  readonly retry: RetryPolicy
}

const causeText = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

export const makePiAiLlm = (job: PiAiJob) =>
  Effect.gen(function* () {
    const events = yield* JobEvents
    const limits = yield* Limits
    const { model, jobModels } = job
    const http = observingFetch(jobModels.pinnedFetch(model))
    const reasoning = job.thinking === "off" ? undefined : job.thinking

    /** One streamed attempt; aborted on interruption and when the streaming guard trips. */
    const attempt = (request: ModelRequest): Effect.Effect<Attempt, LlmFailed> =>
      Effect.tryPromise({
        try: async (signal) => {
          const controller = new AbortController()
          const abort = () => controller.abort()
          signal.addEventListener("abort", abort, { once: true })
          const guard = limits.streamGuard()
          http.take()
          let loopMessage: string | undefined
          // Some of the answer already went out as events: the call must not be retried.
          let streamed = false
          const stream = jobModels.models.streamSimple(
            model,
            { systemPrompt: request.systemPrompt, messages: [...request.messages], tools: [...request.tools] },
            {
              signal: controller.signal,
              fetch: http.fetch,
              cacheRetention: "short",
              sessionId: job.jobId,
              maxRetries: 0,
              ...(reasoning === undefined ? {} : { reasoning })
            }
          )
          try {
            for await (const ev of stream) {
              limits.progress()
              switch (ev.type) {
                case "text_delta":
                  events.emitNow({ type: "message.delta", text: ev.delta })
                  streamed = true
                  loopMessage ??= guard.add("text", ev.delta.length)
                  break
                case "thinking_delta":
                  loopMessage ??= guard.add("thinking", ev.delta.length)
                  break
                case "toolcall_delta":
                  loopMessage ??= guard.add("toolArgs", ev.delta.length)
                  break
                case "toolcall_end":
                  guard.toolCallCompleted()
                  break
              }
              if (loopMessage !== undefined) {
                controller.abort()
                break
              }
            }
          } finally {
            signal.removeEventListener("abort", abort)
            events.flushText()
          }
          const message = await stream.result()
          return { message, loopMessage, failure: attemptFailure(message, http.take(), streamed) }
        },
        catch: (cause) => new LlmFailed({ message: `the model stream failed: ${causeText(cause)}`, cause })
      })

    const complete = yield* withRetries(model, job.retry, attempt)
    return Llm.of({
      model,
      complete,
      summarise: (context, maxTokens) =>
        Effect.tryPromise({
          try: async (signal) => {
            const stream = jobModels.models.streamSimple(model, context, {
              signal,
              fetch: http.fetch,
              maxRetries: 0,
              maxTokens,
              cacheRetention: "none"
            })
            for await (const _ of stream) limits.progress()
            return await stream.result()
          },
          catch: (cause) => new LlmFailed({ message: `the compaction summary request failed: ${causeText(cause)}`, cause })
        })
    })
  })
