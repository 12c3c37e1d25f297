/**
 * Compaction (ARCHITECTURE §4): before a turn whose prompt nears the model's window, and once after a
 * provider overflow, old tool results are dropped and, when that is not enough, old turns are
 * summarised by the job's own model. Only the messages change: system prompt and tools never do.
 */
import { isContextOverflow, type Api, type AssistantMessage, type Message, type Model, type UserMessage } from "@earendil-works/pi-ai"
import { Clock, Effect } from "effect"
import { ContextOverflow, LlmFailed, type KernelError } from "./errors.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import { Llm } from "./Llm.ts"
import { renderTranscript, SUMMARISER_INSTRUCTION } from "./compactionTranscript.ts"

/** The policy, as shares of the model's context window (docs/kernel.md, "Compaction"). */
const COMPACTION = {
  /** Compact before a turn whose estimated prompt passes this share of the window. */
  threshold: 0.8,
  /** The newest turns kept whole fit this share of min(window, prompt); the newest turn always stays. */
  keepRecent: 0.25,
  /** Dropping old tool results is enough when the prompt falls to this share of min(window, prompt). */
  target: 0.5,
  /** The summary's output limit (never above the model's maxTokens, never below 256 tokens). */
  summary: 0.15
} as const

const CHARS_PER_TOKEN = 4
const IMAGE_TOKENS = 1200
const DROPPED = "[tool result dropped to save context:"
/** Results this short stay: their placeholder would not be much shorter. */
const DROP_MIN_CHARS = 200
const SUMMARY_HEAD = "Summary of my work on this task so far (earlier turns were compacted to fit the context window):"
const CONTINUE = "Continue the task from where the summary leaves off."

const textChars = (content: string | ReadonlyArray<{ readonly type: string }>): number =>
  typeof content === "string"
    ? content.length
    : content.reduce(
        (n, b) => n + ("text" in b && typeof b.text === "string" ? b.text.length : b.type === "image" ? IMAGE_TOKENS * CHARS_PER_TOKEN : 0),
        0
      )

const messageChars = (m: Message): number => {
  if (m.role !== "assistant") return textChars(m.content)
  let n = 0
  for (const b of m.content) {
    if (b.type === "text") n += b.text.length
    else if (b.type === "thinking") n += b.thinking.length
    else n += b.name.length + JSON.stringify(b.arguments).length
  }
  return n
}

/** Estimated tokens of some text: characters / 4 (a provider-reported count is preferred where there is one). */
export const estimateTextTokens = (text: string): number => Math.ceil(text.length / CHARS_PER_TOKEN)

/** Estimated tokens of messages: their text, thinking and tool-call characters / 4, images 1200 each. */
export const estimateTokens = (messages: ReadonlyArray<Message>): number =>
  Math.ceil(messages.reduce((n, m) => n + messageChars(m), 0) / CHARS_PER_TOKEN)

/** The whole context a provider reported for one answer: its prompt (cached parts included) and its output. */
const reportedTokens = (m: AssistantMessage): number => m.usage.input + m.usage.cacheRead + m.usage.cacheWrite + m.usage.output

/** What one compaction would do to `messages`; `undefined` from `planCompaction` means nothing is old enough. */
export interface CompactionPlan {
  /** Index of the first message of the oldest turn that is not kept (the first turn after the head). */
  readonly oldFrom: number
  /** Index of the first message kept whole (an assistant message). */
  readonly keepFrom: number
  /** Turns in [oldFrom, keepFrom). */
  readonly oldTurns: number
  /** Old tool results that still carry their text (more than 200 characters of it). */
  readonly drops: ReadonlyArray<number>
}

/**
 * Plans a compaction: the newest turns within `keepRecent` of min(window, prompt) stay whole (the newest
 * always), everything between the head (task, earlier summary) and them is old. A turn is an assistant
 * message and the tool results after it.
 */
export const planCompaction = (
  messages: ReadonlyArray<Message>,
  headLength: number,
  promptTokens: number,
  window: number
): CompactionPlan | undefined => {
  const starts: Array<number> = []
  messages.forEach((m, i) => i >= headLength && m.role === "assistant" && starts.push(i))
  if (starts.length < 2) return undefined
  const budget = COMPACTION.keepRecent * Math.min(window, promptTokens)
  let t = starts.length - 1
  let kept = estimateTokens(messages.slice(starts[t]))
  while (t > 0) {
    const size = estimateTokens(messages.slice(starts[t - 1], starts[t]))
    if (kept + size > budget) break
    kept += size
    t -= 1
  }
  if (t === 0) return undefined
  const oldFrom = starts[0]!
  const keepFrom = starts[t]!
  const drops: Array<number> = []
  for (let i = oldFrom; i < keepFrom; i++) {
    const m = messages[i]!
    if (m.role === "toolResult" && !isDropped(m) && messageChars(m) > DROP_MIN_CHARS) drops.push(i)
  }
  return { oldFrom, keepFrom, oldTurns: t, drops }
}

const isDropped = (m: Message): boolean =>
  m.role === "toolResult" && m.content.length === 1 && m.content[0]?.type === "text" && m.content[0].text.startsWith(DROPPED)

/** `messages` with the planned tool results replaced by a content-free placeholder (line and byte counts). */
export const dropToolResults = (messages: ReadonlyArray<Message>, plan: CompactionPlan): Array<Message> => {
  const drops = new Set(plan.drops)
  return messages.map((m, i) => {
    if (!drops.has(i) || m.role !== "toolResult") return m
    const text = m.content.map((b) => (b.type === "text" ? b.text : "")).join("")
    const lines = text === "" ? 0 : text.split("\n").length
    return { ...m, content: [{ type: "text", text: `${DROPPED} ${lines} lines, ${Buffer.byteLength(text)} bytes]` }] }
  })
}

/** The pair that stands for the summarised turns, after the task: the model's own summary, then "continue". */
const summaryPair = (summary: string, model: Model<Api>, timestamp: number): [AssistantMessage, UserMessage] => [
  {
    role: "assistant",
    content: [{ type: "text", text: `${SUMMARY_HEAD}\n\n${summary}` }],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
    },
    stopReason: "stop",
    timestamp
  },
  { role: "user", content: CONTINUE, timestamp }
]

/**
 * A job's compaction state. `estimate` trusts the newest provider-reported usage of the current
 * message list and adds characters / 4 for what was appended since; `beforeTurn` compacts in place.
 */
export class Compactor {
  /** The task, plus the summary pair once there is one. */
  private headLength = 1
  /** Estimated tokens of the prompt up to `trustedFrom` (usage before it predates the last compaction). */
  private baseline: number
  private trustedFrom = 0
  private overflowPending = false
  private recovering = false

  constructor(
    private readonly model: Model<Api>,
    private readonly prefixTokens: number
  ) {
    this.baseline = prefixTokens
  }

  /** Estimated tokens of the next prompt (system prompt and tools included). */
  estimate(messages: ReadonlyArray<Message>): number {
    for (let i = messages.length - 1; i >= this.trustedFrom; i--) {
      const m = messages[i]!
      if (m.role === "assistant" && reportedTokens(m) > 0) return reportedTokens(m) + estimateTokens(messages.slice(i + 1))
    }
    return this.baseline + estimateTokens(messages.slice(this.trustedFrom))
  }

  /**
   * True when `answer` is a context overflow that compaction may still recover: the next `beforeTurn`
   * compacts whatever the estimate says. A second overflow right after that is not recoverable.
   */
  overflowed(answer: AssistantMessage): boolean {
    if (!isContextOverflow(answer, this.model.contextWindow)) {
      this.recovering = false
      return false
    }
    if (this.recovering) return false
    this.recovering = true
    this.overflowPending = true
    return true
  }

  /**
   * Compacts `messages` in place when the prompt would pass the threshold (or the provider overflowed),
   * counting each compaction and charging each summary request (Limits). Fails with ContextOverflow
   * when an overflow cannot be recovered (nothing old left, or no progress), with the summary
   * request's failure, or with BudgetExceeded.
   */
  beforeTurn(messages: Array<Message>): Effect.Effect<void, KernelError, Llm | Limits | JobEvents> {
    const window = this.model.contextWindow
    const force = this.overflowPending
    this.overflowPending = false
    const before = this.estimate(messages)
    if (!force && before <= COMPACTION.threshold * window) return Effect.void
    const plan = planCompaction(messages, this.headLength, before, window)
    if (plan === undefined) {
      return force
        ? Effect.fail(
            new ContextOverflow({
              message: `the conversation no longer fits the model's context window (${window} tokens) and no earlier turns are left to compact`
            })
          )
        : Effect.void
    }
    const attributes = {
      trigger: force ? "overflow" : "threshold",
      turnsSummarised: 0,
      toolResultsDropped: 0,
      tokensBefore: before,
      tokensAfter: before
    }
    const self = this
    return Effect.flatMap(JobEvents, (events) =>
      events.span(
        "kintsugi.compaction",
        attributes,
        Effect.gen(function* () {
          const limits = yield* Limits
          const dropped = dropToolResults(messages, plan)
          // Enough when the trusted count less the estimated saving meets the target; the span reports the estimate of what is left.
          const saving =
            estimateTokens(messages.slice(plan.oldFrom, plan.keepFrom)) - estimateTokens(dropped.slice(plan.oldFrom, plan.keepFrom))
          const afterDrop = self.prefixTokens + estimateTokens(dropped)
          if (plan.drops.length > 0 && before - saving <= COMPACTION.target * Math.min(window, before)) {
            attributes.toolResultsDropped = plan.drops.length
            attributes.tokensAfter = afterDrop
            limits.compacted(false)
            return self.replace(messages, dropped, afterDrop)
          }
          const maxTokens = Math.max(256, Math.min(self.model.maxTokens, Math.floor(COMPACTION.summary * window)))
          const transcript = renderTranscript(messages, self.headLength, plan, window - maxTokens)
          const now = yield* Clock.currentTimeMillis
          const answer = yield* (yield* Llm).summarise(
            { systemPrompt: SUMMARISER_INSTRUCTION, messages: [{ role: "user", content: transcript, timestamp: now }] },
            maxTokens
          )
          limits.compacted(true)
          // Summary requests count in usage, cost and the budget like any other model call.
          yield* limits.charge(answer.usage)
          const summary = yield* summaryText(answer, window)
          const next = [messages[0]!, ...summaryPair(summary, self.model, now), ...messages.slice(plan.keepFrom)]
          // Both sides are estimates: a provider's count of the old prompt is in other units than characters / 4.
          const after = self.prefixTokens + estimateTokens(next)
          attributes.turnsSummarised = plan.oldTurns
          attributes.tokensAfter = after
          if (force && after >= self.prefixTokens + estimateTokens(messages)) {
            return yield* Effect.fail(
              new ContextOverflow({
                message: "the conversation no longer fits the model's context window and compacting it did not make it smaller"
              })
            )
          }
          self.headLength = 3
          self.replace(messages, next, after)
        })
      )
    )
  }

  private replace(messages: Array<Message>, next: ReadonlyArray<Message>, tokens: number): void {
    messages.splice(0, messages.length, ...next)
    this.baseline = tokens
    this.trustedFrom = messages.length
  }
}

/** The summary's text, or the reason there is none. A summary cut by the output limit is still used. */
const summaryText = (answer: AssistantMessage, window: number): Effect.Effect<string, KernelError> => {
  if (answer.stopReason === "error" || answer.stopReason === "aborted") {
    return Effect.fail(
      isContextOverflow(answer, window)
        ? new ContextOverflow({ message: "the earlier turns are too large for the model to summarise within its context window" })
        : new LlmFailed({ message: `the compaction summary failed: ${answer.errorMessage ?? answer.stopReason}` })
    )
  }
  const text = answer.content
    .flatMap((b) => (b.type === "text" ? [b.text] : []))
    .join("")
    .trim()
  return text === "" ? Effect.fail(new LlmFailed({ message: "the model returned an empty compaction summary" })) : Effect.succeed(text)
}
