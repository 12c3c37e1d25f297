/**
 * One tool call of a turn: the grant and deny checks, `tool.call` and `tool.result` events, the
 * `kintsugi.tool` span, the loop guard, and the tool result message the model gets back.
 */
import type { ToolCall, ToolResultMessage } from "@earendil-works/pi-ai"
import { Clock, Effect } from "effect"
import type { DenyMatcher } from "../tools/denyPatterns.ts"
import type { KernelTool, ToolServices } from "../tools/Tool.ts"
import { LoopDetected } from "../job/errors.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"

/** The tools a job was granted, by name, and its deny patterns. */
export interface Toolbox {
  readonly tools: ReadonlyMap<string, KernelTool>
  readonly deny: DenyMatcher
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

/**
 * Runs one call (or blocks it) and returns the result message for the model. Tool failures are
 * results with `isError`; only the loop guard fails (LoopDetected).
 */
export const runToolCall = (call: ToolCall, toolbox: Toolbox): Effect.Effect<ToolResultMessage, LoopDetected, ToolServices> =>
  Effect.gen(function* () {
    const events = yield* JobEvents
    const limits = yield* Limits
    const tool = toolbox.tools.get(call.name)
    const args: Record<string, unknown> = call.arguments
    const command = tool?.commandOf?.(args)
    const verdict = command === undefined ? ({ blocked: false } as const) : toolbox.deny(command)
    const blockReason =
      tool === undefined ? `tool "${call.name}" is not granted to this agent` : verdict.blocked ? verdict.reason : undefined
    yield* events.emit({
      type: "tool.call",
      callId: call.id,
      tool: call.name,
      input: args,
      allowed: blockReason === undefined,
      ...(blockReason === undefined ? {} : { reason: blockReason })
    })
    const started = yield* Clock.currentTimeMillis
    const attributes: Record<string, string | number | boolean> = { tool: call.name, allowed: blockReason === undefined }
    const run =
      call.argumentsError !== undefined
        ? Effect.succeed({ success: false, text: `Invalid arguments for tool "${call.name}": ${call.argumentsError}` })
        : tool === undefined || blockReason !== undefined
          ? Effect.succeed({ success: false, text: `Blocked: ${blockReason}` })
          : tool.execute(args).pipe(
              Effect.map((out) => ({ success: true, text: out.text })),
              Effect.catchTag("ToolError", (e) => Effect.succeed({ success: false, text: e.message }))
            )
    // Set inside the span: its event goes out (copied) as the span ends.
    const outcome = yield* events.span(
      "kintsugi.tool",
      attributes,
      Effect.tap(run, (o) => {
        attributes["success"] = o.success
      })
    )
    limits.progress()
    const repeat = limits.toolCall(call.name, args, outcome.success, outcome.text)
    const text = repeat._tag === "Repeat" && repeat.nudge !== undefined ? outcome.text + repeat.nudge : outcome.text
    const finished = yield* Clock.currentTimeMillis
    yield* events.emit({
      type: "tool.result",
      callId: call.id,
      tool: call.name,
      success: outcome.success,
      summary: summarize(outcome.success, outcome.text),
      durationMs: Math.round(finished - started)
    })
    if (repeat._tag === "Loop") return yield* Effect.fail(new LoopDetected({ message: repeat.message }))
    return {
      role: "toolResult",
      toolCallId: call.id,
      toolName: call.name,
      content: [{ type: "text", text }],
      isError: !outcome.success,
      timestamp: finished
    }
  })

/** A turn's tool calls, in call order; the result messages in the same order. */
export const runToolCalls = (
  calls: ReadonlyArray<ToolCall>,
  toolbox: Toolbox
): Effect.Effect<Array<ToolResultMessage>, LoopDetected, ToolServices> => Effect.forEach(calls, (call) => runToolCall(call, toolbox))
