/**
 * The per-job LLM port: one streamed model call with the retry policy around it (ARCHITECTURE §4),
 * and the compaction summary request. The pi-ai adapter is PiAiLlm.ts; `LlmTest` scripts answers;
 * `recordingTranscript` hands each call, and then its answer, to the job's Transcript.
 */
import {
  isContextOverflow,
  type Api,
  type AssistantMessage,
  type Context as LlmContext,
  type Message,
  type Model,
  type Tool
} from "@earendil-works/pi-ai"
import { Clock, Context, Effect, Layer, Random } from "effect"
import { Transcript, type TranscriptMessage, type TranscriptTurn } from "../job/Transcript.ts"
import { BudgetExceeded, LoopDetected } from "../job/errors.ts"
import { LlmFailed } from "./errors.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import { failureMessage } from "./providerFailure.ts"
import { promptHashes } from "./promptHashes.ts"
import { decideRetry, waitPlanned, type AttemptFailure, type RetryPolicy } from "./retryPolicy.ts"

/** What the loop asks the model: the byte-stable prefix (system prompt, tools) and the messages. */
export interface ModelRequest {
  readonly systemPrompt: string
  readonly messages: LlmContext["messages"]
  readonly tools: ReadonlyArray<Tool>
}

/** The model's answer. A provider error is an answer too (stopReason "error"): the loop decides (compaction, failure). */
export interface ModelAnswer {
  readonly message: AssistantMessage
  /** The `job.failed` text of a failed call, in the provider's words, with why retrying stopped. */
  readonly failure: string | undefined
}

/** One attempt of a model call, as an adapter reports it. */
export interface Attempt {
  readonly message: AssistantMessage
  /** How it failed, for the retry policy (meaningful when stopReason is "error"). */
  readonly failure: AttemptFailure
  /** Set when the streaming guard stopped the attempt (the spec's "stopped: …" sentence). */
  readonly loopMessage?: string | undefined
}

export class Llm extends Context.Tag("kernel/Llm")<
  Llm,
  {
    /** The job's model (window, max tokens, provider and id for events and spans). */
    readonly model: Model<Api>
    /**
     * One model call, streamed (text goes out as `message.delta`), retried as the policy allows with
     * each wait a `kintsugi.retry` span that the idle watchdog ignores and timeoutSec counts. Every
     * attempt's usage is charged (Limits.charge). Fails with LlmFailed when the stream itself broke
     * (the cause named), LoopDetected when the streaming guard stopped it, BudgetExceeded.
     */
    readonly complete: (request: ModelRequest) => Effect.Effect<ModelAnswer, LlmFailed | LoopDetected | BudgetExceeded>
    /**
     * One summary request (compaction): no tools, no deltas, no retries; stream events count as
     * progress. Not charged here: the compactor charges it after counting the compaction.
     */
    readonly summarise: (context: LlmContext, maxTokens: number) => Effect.Effect<AssistantMessage, LlmFailed>
  }
>() {}

/** The retry loop around `attempt`; the answer is the last attempt's, with the failure text if it failed. */
export const withRetries = (
  model: Model<Api>,
  policy: RetryPolicy,
  attempt: (request: ModelRequest) => Effect.Effect<Attempt, LlmFailed>
) =>
  Effect.gen(function* () {
    const events = yield* JobEvents
    const limits = yield* Limits
    return (request: ModelRequest): Effect.Effect<ModelAnswer, LlmFailed | LoopDetected | BudgetExceeded> =>
      Effect.gen(function* () {
        for (let retryIndex = 0; ; retryIndex++) {
          const { message, failure, loopMessage } = yield* attempt(request)
          yield* limits.charge(message.usage)
          if (loopMessage !== undefined) return yield* Effect.fail(new LoopDetected({ message: loopMessage }))
          if (message.stopReason !== "error" || isContextOverflow(message, model.contextWindow)) return { message, failure: undefined }
          const now = yield* Clock.currentTimeMillis
          const decision = decideRetry(policy, failure, retryIndex, yield* limits.remainingMs, now, yield* Random.next)
          if (decision._tag === "GiveUp") return { message, failure: failureMessage(failure, retryIndex + 1, decision.why) }
          const attributes = {
            attempt: retryIndex + 1,
            waitMs: decision.waitMs,
            cause: decision.cause,
            serverRequested: decision.serverRequested,
            provider: model.provider,
            model: model.id,
            ...(failure.status === undefined || failure.status < 300 ? {} : { statusCode: failure.status })
          }
          yield* events.span("kintsugi.retry", attributes, limits.plannedWait(waitPlanned(decision.waitMs)))
        }
      })
  })

/**
 * A scripted model for tests: `answer` gives each attempt's message (its `errorMessage` is the
 * failure; no HTTP status, so only overloaded errors are retried); summaries come from it too.
 */
export const LlmTest = (
  model: Model<Api>,
  answer: (request: ModelRequest) => Effect.Effect<AssistantMessage>,
  policy: RetryPolicy = { baseDelayMs: 1000, maxDelayMs: 30_000, maxRetries: 8 }
): Layer.Layer<Llm, never, JobEvents | Limits> =>
  Layer.effect(
    Llm,
    Effect.map(
      withRetries(model, policy, (request) =>
        Effect.map(answer(request), (message) => ({
          message,
          failure: {
            status: undefined,
            headers: undefined,
            connectionLost: false,
            message: message.errorMessage ?? message.stopReason,
            streamed: false
          }
        }))
      ),
      (complete) => ({
        model,
        complete,
        summarise: (context) => answer({ systemPrompt: context.systemPrompt ?? "", messages: context.messages, tools: [] })
      })
    )
  )

/** A message as JSON-like data: what goes on the wire is its JSON, so that is what the transcript keeps. */
const asRecorded = (message: Message): TranscriptMessage => JSON.parse(JSON.stringify(message)) as TranscriptMessage

/** How many leading messages of `now` are those of `before` (the same object, or the same JSON). */
const commonPrefix = (before: ReadonlyArray<Message>, now: ReadonlyArray<Message>): number => {
  let i = 0
  while (i < before.length && i < now.length && (before[i] === now[i] || JSON.stringify(before[i]) === JSON.stringify(now[i]))) i++
  return i
}

/** Where a resumed job's transcript stands: its last answered turn and the conversation that turn left. */
export interface TranscriptStart {
  readonly turn: number
  readonly conversation: ReadonlyArray<Message>
}

/**
 * `llm` with every model call handed to the job's Transcript as one turn, twice: before the call with
 * what it sends (the messages it added to the conversation since the previous turn — all of them after
 * what compaction kept, with the summaries it wrote), so tool results are kept even when the call never
 * returns; and again with the answer once it comes. Redacted by the job's redactor first. An answer that
 * is a provider error is not a turn: the next call is the same turn again. A resumed job starts `from`
 * where its transcript stands.
 */
export const recordingTranscript = (llm: Llm["Type"], from?: TranscriptStart): Effect.Effect<Llm["Type"], never, Transcript | JobEvents> =>
  Effect.gen(function* () {
    const transcript = yield* Transcript
    const events = yield* JobEvents
    // The conversation as the last answered turn left it (its request's messages, then its answer).
    let conversation: ReadonlyArray<Message> = from?.conversation ?? []
    let turn = from?.turn ?? 0
    let summaries: Array<string> = []
    /** The turn a call sends: what it added to the conversation since the last answered turn. */
    const sentTurn = (request: ModelRequest): TranscriptTurn => {
      const kept = commonPrefix(conversation, request.messages)
      const compacted = kept < conversation.length
      return {
        turn: turn + 1,
        ...promptHashes(request.systemPrompt, request.tools),
        ...(compacted || summaries.length > 0 ? { compaction: { kept, replaced: conversation.length - kept, summaries } } : {}),
        messages: request.messages.slice(kept).map(asRecorded)
      }
    }
    const record = (recorded: TranscriptTurn) => transcript.record(JSON.parse(events.redact(JSON.stringify(recorded))) as TranscriptTurn)
    return {
      model: llm.model,
      complete: (request) =>
        Effect.gen(function* () {
          const sent = sentTurn(request)
          yield* record(sent)
          const result = yield* llm.complete(request)
          const { message } = result
          if (message.stopReason === "error" || message.stopReason === "aborted") return result
          turn += 1
          conversation = [...request.messages, message]
          summaries = []
          yield* record({ ...sent, answer: asRecorded(message) })
          return result
        }),
      summarise: (context, maxTokens) =>
        Effect.tap(llm.summarise(context, maxTokens), (answer) =>
          Effect.sync(() => {
            const text = answer.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")
            if (answer.stopReason !== "error" && text !== "") summaries.push(text)
          })
        )
    }
  })
