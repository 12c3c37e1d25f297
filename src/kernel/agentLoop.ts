/**
 * The agent loop: model turn → tool calls → model turn …, until the model answers without a tool
 * call. Streams `message.delta`, `tool.call`, `tool.result`, `usage` and spans through the sink;
 * checks maxTurns, maxCostUsd and the loop guard; compacts the conversation when it nears the window
 * (compaction.ts); retries a model call the retry policy allows (each wait a `kintsugi.retry` span);
 * every LLM failure becomes a typed kernel error naming its cause.
 * Timeouts and abort wrap this loop from the outside (Kernel.ts).
 */
import {
  isContextOverflow,
  type AssistantMessage,
  type Message,
  type Tool,
  type ToolCall,
  type ToolResultMessage
} from "@earendil-works/pi-ai"
import { Clock, Effect } from "effect"
import type { ThinkingLevel } from "../contract/AgentDefinition.ts"
import type { KernelTool, ToolContext } from "../tools/Tool.ts"
import type { DenyMatcher } from "../tools/denyPatterns.ts"
import { Compactor, estimateTextTokens, piAiSummariser, type CompactionDeps } from "./compaction.ts"
import { BudgetExceeded, ContextOverflow, LlmFailed, LoopDetected, TurnLimitReached, type KernelError } from "./errors.ts"
import type { EventSink } from "./EventSink.ts"
import { RepeatGuard, StreamGuard } from "./LoopGuard.ts"
import type { JobModels } from "./PiAiModels.ts"
import type { PreparedJob } from "./prepareJob.ts"
import { attemptFailure, failureMessage, observingFetch } from "./providerFailure.ts"
import { decideRetry, waitPlanned, type RetryPolicy } from "./retryPolicy.ts"
import type { Spans } from "./Spans.ts"
import { buildSystemPrompt } from "./systemPrompt.ts"

export interface LoopDeps {
  readonly jobId: string
  readonly job: PreparedJob
  readonly jobModels: JobModels
  readonly tools: ReadonlyArray<KernelTool>
  readonly deny: DenyMatcher
  readonly sink: EventSink
  readonly spans: Spans
  readonly jobSpanId: string
  /** Marks progress for the idle watchdog. */
  readonly progress: () => void
  /** Runs a planned wait (a retry backoff): the idle watchdog does not count it as idleness. */
  readonly plannedWait: <A, E, R>(wait: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly remainingMs: () => number
  readonly retry: RetryPolicy
}

interface Totals {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  costUsd: number
  turns: number
  contextPeakPercent: number
}

/** A short, content-free description of a tool result for the `tool.result` event. */
const summarize = (success: boolean, text: string): string => {
  if (!success) {
    const first = text.split("\n", 1)[0] ?? ""
    return first.length > 200 ? `${first.slice(0, 200)}…` : first
  }
  const lines = text === "" ? 0 : text.split("\n").length
  return `${lines} line${lines === 1 ? "" : "s"}, ${Buffer.byteLength(text)} bytes`
}

const textOf = (msg: AssistantMessage): string =>
  msg.content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("")

/** Runs the loop to the model's final answer; fails with the kernel error that stopped it. */
export const agentLoop = (deps: LoopDeps): Effect.Effect<string, KernelError> => {
  const { job, sink, spans, jobModels } = deps
  const { spec, model } = job
  const limits = spec.limits
  const toolsByName = new Map(deps.tools.map((t) => [t.name, t]))
  // Built once: the prompt prefix is byte-identical on every turn (prompt caches hit).
  const systemPrompt = buildSystemPrompt(spec.agent, job.toolNames)
  const toolDefs: Array<Tool> = deps.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }))
  const messages: Array<Message> = [{ role: "user", content: spec.task, timestamp: Date.now() }]
  const reasoning: ThinkingLevel | undefined = job.thinking.effective === "off" ? undefined : job.thinking.effective
  const http = observingFetch(jobModels.pinnedFetch(model))
  const repeats = new RepeatGuard()
  const streamGuard = new StreamGuard()
  const totals: Totals = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, costUsd: 0, turns: 0, contextPeakPercent: 0 }
  const compactor = new Compactor(model, estimateTextTokens(systemPrompt) + estimateTextTokens(JSON.stringify(toolDefs)))

  const toolContext: ToolContext = {
    workspace: job.workspace,
    emit: (event) => Effect.sync(() => sink.emit(event)),
    progress: deps.progress,
    remainingMs: deps.remainingMs
  }

  const recordUsage = (msg: AssistantMessage) => {
    const u = msg.usage
    totals.input += u.input
    totals.output += u.output
    totals.cacheRead += u.cacheRead
    totals.cacheWrite += u.cacheWrite
    totals.costUsd += u.cost.total
    const context = u.input + u.cacheRead + u.cacheWrite + u.output
    totals.contextPeakPercent = Math.max(totals.contextPeakPercent, Math.round((context / model.contextWindow) * 10000) / 100)
    sink.emit({
      type: "usage",
      model: `${model.provider}/${model.id}`,
      inputTokens: totals.input,
      outputTokens: totals.output,
      cacheReadTokens: totals.cacheRead,
      cacheWriteTokens: totals.cacheWrite,
      costUsd: totals.costUsd,
      turns: totals.turns,
      compactions: compactor.compactions,
      contextPeakPercent: totals.contextPeakPercent,
      compactionSummaries: compactor.summaries
    })
  }

  /**
   * One streamed model call. The stream is aborted on interruption and when a streaming limit trips.
   * `streamed`: some of its text already went out as events (so it must not be retried).
   */
  const callModel = Effect.tryPromise({
    try: async (signal) => {
      const controller = new AbortController()
      const abort = () => controller.abort()
      signal.addEventListener("abort", abort, { once: true })
      streamGuard.reset()
      http.take()
      let loopMessage: string | undefined
      let streamed = false
      const stream = jobModels.models.streamSimple(
        model,
        { systemPrompt, messages, tools: toolDefs },
        {
          signal: controller.signal,
          fetch: http.fetch,
          cacheRetention: "short",
          sessionId: deps.jobId,
          maxRetries: 0,
          ...(reasoning === undefined ? {} : { reasoning })
        }
      )
      try {
        for await (const ev of stream) {
          deps.progress()
          switch (ev.type) {
            case "text_delta":
              sink.emit({ type: "message.delta", text: ev.delta })
              streamed = true
              loopMessage ??= streamGuard.add("text", ev.delta.length)
              break
            case "thinking_delta":
              loopMessage ??= streamGuard.add("thinking", ev.delta.length)
              break
            case "toolcall_delta":
              loopMessage ??= streamGuard.add("toolArgs", ev.delta.length)
              break
            case "toolcall_end":
              streamGuard.toolCallCompleted()
              break
          }
          if (loopMessage !== undefined) {
            controller.abort()
            break
          }
        }
      } finally {
        signal.removeEventListener("abort", abort)
        sink.flushText()
      }
      const msg = await stream.result()
      return { msg, loopMessage, failure: attemptFailure(msg, http.take(), streamed) }
    },
    catch: (cause) => new LlmFailed({ message: `the model stream failed: ${cause instanceof Error ? cause.message : String(cause)}` })
  })

  const checkBudget = Effect.suspend(() => {
    const max = limits.maxCostUsd
    return max !== undefined && totals.costUsd > max
      ? Effect.fail(new BudgetExceeded({ costUsd: totals.costUsd, maxCostUsd: max }))
      : Effect.void
  })

  const compaction = (parentSpanId: string): CompactionDeps => ({
    spans,
    parentSpanId,
    summarise: piAiSummariser(jobModels.models, model, http.fetch, deps.progress),
    // Summary requests count in usage, cost and the budget like any other model call.
    afterSummary: (answer) =>
      Effect.suspend(() => {
        recordUsage(answer)
        return checkBudget
      })
  })

  /**
   * The model call with the retry policy around it. A failed attempt's usage is recorded (the provider
   * may bill it); the answer returned is the last attempt's, with the failure text if it failed.
   */
  const callWithRetries = (turnSpanId: string) =>
    Effect.gen(function* () {
      for (let retryIndex = 0; ; retryIndex++) {
        const attempt = yield* callModel
        const { msg, failure } = attempt
        if (attempt.loopMessage !== undefined || msg.stopReason !== "error" || isContextOverflow(msg, model.contextWindow)) {
          return { ...attempt, failureText: undefined }
        }
        const now = yield* Clock.currentTimeMillis
        const decision = decideRetry(deps.retry, failure, retryIndex, deps.remainingMs(), now, Math.random())
        if (decision._tag === "GiveUp") return { ...attempt, failureText: failureMessage(failure, retryIndex + 1, decision.why) }
        recordUsage(msg)
        yield* checkBudget
        const attributes = {
          attempt: retryIndex + 1,
          waitMs: decision.waitMs,
          cause: decision.cause,
          serverRequested: decision.serverRequested,
          provider: model.provider,
          model: model.id,
          ...(failure.status === undefined || failure.status < 300 ? {} : { statusCode: failure.status })
        }
        yield* spans.span("kintsugi.retry", turnSpanId, attributes, () => deps.plannedWait(waitPlanned(decision.waitMs)))
      }
    })

  const checkAnswer = (msg: AssistantMessage, failureText: string | undefined): Effect.Effect<void, KernelError> => {
    switch (msg.stopReason) {
      case "error":
      case "aborted":
        return isContextOverflow(msg, model.contextWindow)
          ? Effect.fail(new ContextOverflow({ message: `the conversation no longer fits the model's context window: ${msg.errorMessage ?? "overflow"}` }))
          : Effect.fail(new LlmFailed({ message: failureText ?? `model call failed: ${msg.errorMessage ?? msg.stopReason}` }))
      case "length":
        return Effect.fail(new LlmFailed({ message: "the model reached its output token limit before finishing" }))
      case "stop":
        // Some providers overflow silently: a normal stop whose prompt no longer fits.
        return isContextOverflow(msg, model.contextWindow)
          ? Effect.fail(new ContextOverflow({ message: "the conversation no longer fits the model's context window" }))
          : Effect.void
      default:
        return Effect.void
    }
  }

  const runToolCall = (call: ToolCall, turnSpanId: string) =>
    Effect.gen(function* () {
      const tool = toolsByName.get(call.name)
      const args: Record<string, unknown> = call.arguments
      const command = tool?.commandOf?.(args)
      const verdict = command === undefined ? ({ blocked: false } as const) : deps.deny(command)
      const blockReason = tool === undefined ? `tool "${call.name}" is not granted to this agent` : verdict.blocked ? verdict.reason : undefined
      sink.emit({
        type: "tool.call",
        callId: call.id,
        tool: call.name,
        input: args,
        allowed: blockReason === undefined,
        ...(blockReason === undefined ? {} : { reason: blockReason })
      })
      const started = performance.now()
      const attributes: Record<string, string | number | boolean> = { tool: call.name, allowed: blockReason === undefined }
      const outcome = yield* spans.span("kintsugi.tool", turnSpanId, attributes, (toolSpanId) => {
        if (call.argumentsError !== undefined) {
          return Effect.succeed({ success: false, text: `Invalid arguments for tool "${call.name}": ${call.argumentsError}` })
        }
        if (tool === undefined || blockReason !== undefined) {
          return Effect.succeed({ success: false, text: `Blocked: ${blockReason}` })
        }
        // [mcp] issue 11: a tool's own spans (kintsugi.mcp, kintsugi.codemode) are children of this call's span.
        const callContext: ToolContext = { ...toolContext, span: (name, attrs, effect) => spans.span(name, toolSpanId, attrs, () => effect) }
        return tool.execute(args, callContext).pipe(
          Effect.map((out) => ({ success: true, text: out.text })),
          Effect.catchTag("ToolError", (e) => Effect.succeed({ success: false, text: e.message }))
        )
      })
      attributes["success"] = outcome.success
      deps.progress()
      const repeat = repeats.record(call.name, args, outcome.success, outcome.text)
      const text = repeat._tag === "Repeat" && repeat.nudge !== undefined ? outcome.text + repeat.nudge : outcome.text
      sink.emit({
        type: "tool.result",
        callId: call.id,
        tool: call.name,
        success: outcome.success,
        summary: summarize(outcome.success, outcome.text),
        durationMs: Math.round(performance.now() - started)
      })
      const result: ToolResultMessage = {
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text }],
        isError: !outcome.success,
        timestamp: Date.now()
      }
      messages.push(result)
      if (repeat._tag === "Loop") return yield* Effect.fail(new LoopDetected({ message: repeat.message }))
    })

  const turn = Effect.gen(function* () {
    const maxTurns = limits.maxTurns ?? 0
    if (maxTurns > 0 && totals.turns >= maxTurns) return yield* Effect.fail(new TurnLimitReached({ maxTurns }))
    const max = limits.maxCostUsd
    if (max !== undefined && totals.costUsd > 0 && totals.costUsd >= max) {
      return yield* Effect.fail(new BudgetExceeded({ costUsd: totals.costUsd, maxCostUsd: max }))
    }
    totals.turns += 1
    const attributes: Record<string, string | number | boolean> = { turn: totals.turns }
    return yield* spans.span("kintsugi.turn", deps.jobSpanId, attributes, (turnSpanId) =>
      Effect.gen(function* () {
        yield* compactor.beforeTurn(messages, compaction(turnSpanId))
        const { msg, loopMessage, failureText } = yield* callWithRetries(turnSpanId)
        recordUsage(msg)
        yield* checkBudget
        if (loopMessage !== undefined) return yield* Effect.fail(new LoopDetected({ message: loopMessage }))
        // An overflow compaction may recover: the next turn compacts first, then asks again.
        if (compactor.overflowed(msg)) {
          attributes["contextOverflow"] = true
          return undefined
        }
        yield* checkAnswer(msg, failureText)
        messages.push(msg)
        const calls = msg.content.filter((b): b is ToolCall => b.type === "toolCall")
        attributes["toolCalls"] = calls.length
        if (calls.length === 0) {
          const answer = textOf(msg)
          if (answer.trim() === "") return yield* Effect.fail(new LlmFailed({ message: "the model returned an empty response" }))
          return answer
        }
        for (const call of calls) yield* runToolCall(call, turnSpanId)
        return undefined
      })
    )
  })

  return Effect.gen(function* () {
    while (true) {
      const answer = yield* turn
      if (answer !== undefined) return answer
    }
  })
}
