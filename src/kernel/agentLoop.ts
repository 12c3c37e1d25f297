/**
 * The agent loop: model turn → tool calls → model turn …, until the model answers without a tool
 * call. Each turn is a `kintsugi.turn` span: limits checked (Limits), the conversation compacted
 * when it nears the window (compaction.ts), one model call with its retries (Llm), then the tool
 * calls (toolCall.ts). Timeouts and abort wrap this loop from the outside (Kernel.ts). A job with a
 * `history` (a continued job) starts from those messages, then its task; the history must belong to
 * the same prompt prefix (historyProblem), so the provider's prompt cache still applies. A resumed job
 * (`resume`) goes on from its history without the task again, its interrupted turn's calls answered
 * as not run (resumedMessages).
 */
import { isContextOverflow, type AssistantMessage, type Message, type Tool, type ToolCall } from "@earendil-works/pi-ai"
import { Clock, Effect } from "effect"
import type { JobSpec } from "../contract/JobSpec.ts"
import type { Problem } from "../contract/Problem.ts"
import type { DenyMatcher } from "../tools/denyPatterns.ts"
import type { KernelTool, ToolServices } from "../tools/Tool.ts"
import { Compactor, estimateTextTokens } from "./compaction.ts"
import { ContextOverflow, LlmFailed, OutputContractViolated, type KernelError } from "./errors.ts"
import { contractNudge, contractProblems } from "./outputContract.ts"
import { readTypedAnswer } from "./answer.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import { Llm } from "./Llm.ts"
import { promptHashes } from "./promptHashes.ts"
import { buildSystemPrompt } from "./systemPrompt.ts"
import { runToolCalls } from "./toolCall.ts"

/** What the loop runs: the spec, the granted tools (in prompt order) and the deny patterns. */
export interface LoopJob {
  readonly spec: JobSpec
  readonly tools: ReadonlyArray<KernelTool>
  readonly deny: DenyMatcher
  /** Per shared skill, its resource files under /skills/<skill>/ (named in the prompt beside the skill). */
  readonly skillFiles?: ReadonlyMap<string, ReadonlyArray<string>>
}

/** The prompt prefix of every turn: the system prompt and the tool definitions, in the tools' order. */
export const loopPrompt = (
  job: Pick<LoopJob, "spec" | "tools" | "skillFiles">
): { readonly systemPrompt: string; readonly toolDefs: Array<Tool> } => ({
  systemPrompt: buildSystemPrompt(
    job.spec.agent,
    job.tools.map((t) => t.name),
    job.skillFiles
  ),
  toolDefs: job.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }))
})

/**
 * The history's problem when it belongs to another prompt than `job`'s (its hashes are those of the
 * parent's system prompt and tool definitions); undefined when it fits or there is none.
 */
export const historyProblem = (job: LoopJob): Problem | undefined => {
  const history = job.spec.history
  if (history === undefined) return undefined
  const { systemPrompt, toolDefs } = loopPrompt(job)
  const own = promptHashes(systemPrompt, toolDefs)
  const differs = [
    ...(own.instructionsHash === history.instructionsHash ? [] : ["instructions and skills"]),
    ...(own.toolsHash === history.toolsHash ? [] : ["tools"])
  ]
  return differs.length === 0
    ? undefined
    : {
        path: "history",
        message: `belongs to another agent version than this job runs (its ${differs.join(" and ")} differ): continue a job with the agent version it ran`
      }
}

/**
 * The history's messages as the model takes them. Each is one pi-ai message as it was sent (a
 * transcript keeps their JSON whole), so it goes back unchanged and the request's prefix is the parent's.
 */
const historyMessages = (history: JobSpec["history"]): ReadonlyArray<Message> =>
  (history?.messages ?? []).map((m) => m as unknown as Message)

/** What a resumed job's model is told of the calls its interrupted turn made: none of them is run again. */
export const INTERRUPTED_CALL =
  "This call was not run to its end: the job was interrupted (its worker was lost) and has been resumed from its last completed turn. " +
  "It is not run again; it may have changed files before the interruption. Check the workspace before you repeat it."
/** What a resumed job's model is told when the interruption came after its final answer, before the job ended. */
const INTERRUPTED_ANSWER =
  "The job was interrupted (its worker was lost) after your last answer, before it ended, and has been resumed. Give your final answer again."

/**
 * A resumed job's conversation: its history (the transcript up to where its last run stopped), then
 * what the model is told of the interrupted turn — a result for each tool call of an answer that has
 * none, or a request to answer again after a final answer. A history that ends with what a call sent
 * (its tool results) needs nothing: that call is simply made again.
 */
const resumedMessages = (history: JobSpec["history"], now: number): Array<Message> => {
  const messages = [...historyMessages(history)]
  const last = messages[messages.length - 1]
  if (last?.role !== "assistant") return messages
  const calls = last.content.filter((b): b is ToolCall => b.type === "toolCall")
  if (calls.length === 0) return [...messages, { role: "user", content: INTERRUPTED_ANSWER, timestamp: now }]
  return [
    ...messages,
    ...calls.map(
      (call): Message => ({
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text: INTERRUPTED_CALL }],
        isError: true,
        timestamp: now
      })
    )
  ]
}

const textOf = (msg: AssistantMessage): string =>
  msg.content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("")

/** What the loop ends with: the final message, and its parsed JSON when the agent declares a typed answer. */
interface LoopResult {
  readonly summary: string
  readonly answer?: unknown
}

/** A failed or cut answer as a kernel error; a usable answer passes. */
const checkStop = (msg: AssistantMessage, failure: string | undefined, window: number): Effect.Effect<void, KernelError> => {
  switch (msg.stopReason) {
    case "error":
    case "aborted":
      return isContextOverflow(msg, window)
        ? Effect.fail(
            new ContextOverflow({
              message: `the conversation no longer fits the model's context window: ${msg.errorMessage ?? "overflow"}`
            })
          )
        : Effect.fail(new LlmFailed({ message: failure ?? `model call failed: ${msg.errorMessage ?? msg.stopReason}` }))
    case "length":
      return Effect.fail(new LlmFailed({ message: "the model reached its output token limit before finishing" }))
    case "stop":
      // Some providers overflow silently: a normal stop whose prompt no longer fits.
      return isContextOverflow(msg, window)
        ? Effect.fail(new ContextOverflow({ message: "the conversation no longer fits the model's context window" }))
        : Effect.void
    default:
      return Effect.void
  }
}

/**
 * Runs the loop to the model's final answer; fails with the kernel error that stopped it. A final
 * answer is checked against the output contract and the typed answer together; every problem found gets the
 * one nudge naming every problem (one chance for both), and a second violation fails the job with
 * OutputContractViolated.
 */
export const agentLoop = (job: LoopJob): Effect.Effect<LoopResult, KernelError, Llm | ToolServices> =>
  Effect.gen(function* () {
    const llm = yield* Llm
    const limits = yield* Limits
    const events = yield* JobEvents
    const toolbox = { tools: new Map(job.tools.map((t) => [t.name, t])), deny: job.deny }
    // Built once: the prompt prefix is byte-identical on every turn (prompt caches hit).
    const { systemPrompt, toolDefs } = loopPrompt(job)
    // A continued job's conversation as its parent's model saw it, then the task; a resumed job's
    // conversation as its last run left it (the task among its first messages).
    const now = yield* Clock.currentTimeMillis
    const messages: Array<Message> =
      job.spec.resume === undefined
        ? [...historyMessages(job.spec.history), { role: "user", content: job.spec.task, timestamp: now }]
        : resumedMessages(job.spec.history, now)
    let contractRetried = false
    const compactor = new Compactor(llm.model, estimateTextTokens(systemPrompt) + estimateTextTokens(JSON.stringify(toolDefs)))

    const turn = (n: number) => {
      const attributes: Record<string, string | number | boolean> = { turn: n }
      return events.span(
        "kintsugi.turn",
        attributes,
        Effect.gen(function* () {
          yield* compactor.beforeTurn(messages)
          const { message, failure } = yield* llm.complete({ systemPrompt, messages, tools: toolDefs })
          // An overflow compaction may recover: the next turn compacts first, then asks again.
          if (compactor.overflowed(message)) {
            attributes["contextOverflow"] = true
            return undefined
          }
          yield* checkStop(message, failure, llm.model.contextWindow)
          messages.push(message)
          const calls = message.content.filter((b): b is ToolCall => b.type === "toolCall")
          attributes["toolCalls"] = calls.length
          if (calls.length === 0) {
            const text = textOf(message)
            if (text.trim() === "") return yield* Effect.fail(new LlmFailed({ message: "the model returned an empty response" }))
            const { outputs, answer } = job.spec.agent
            const problems = outputs === undefined ? [] : yield* contractProblems(outputs, events.outputs())
            const typed = answer === undefined ? undefined : yield* readTypedAnswer(answer, text)
            if (typed?._tag === "Invalid") problems.push(...typed.problems)
            if (problems.length === 0) return typed?._tag === "Valid" ? { summary: text, answer: typed.value } : { summary: text }
            attributes["outputContract.problems"] = problems.length
            if (contractRetried) return yield* Effect.fail(new OutputContractViolated({ problems }))
            // One chance to fix it, in the same job and conversation.
            contractRetried = true
            const nudge = contractNudge(problems, typed?._tag === "Invalid" ? answer : undefined)
            messages.push({ role: "user", content: nudge, timestamp: yield* Clock.currentTimeMillis })
            return undefined
          }
          messages.push(...(yield* runToolCalls(calls, toolbox)))
          return undefined
        })
      )
    }

    while (true) {
      const answer = yield* Effect.flatMap(limits.beginTurn, turn)
      if (answer !== undefined) return answer
    }
  })
