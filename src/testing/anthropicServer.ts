/**
 * Scripted Anthropic messages server (`POST /v1/messages`, named SSE events from message_start to
 * message_stop), so tests can drive pi-ai's real anthropic-messages client.
 */
import { startScriptedServer, type Dialect, type ScriptedServerOptions } from "./scriptedHttp.ts"
import {
  argumentsText,
  finishOf,
  splitChunks,
  sseFrame,
  type ScriptedFinish,
  type ScriptedServer,
  type ScriptedUsage,
  type Step,
  type TurnContext,
  type TurnStep
} from "./scriptedSteps.ts"

const STOP_REASONS: Readonly<Record<ScriptedFinish, string>> = {
  stop: "end_turn",
  tool_calls: "tool_use",
  length: "max_tokens"
}

const event = (type: string, payload: object): string => sseFrame(JSON.stringify({ type, ...payload }), type)

const messageStart = (ctx: TurnContext, usage: ScriptedUsage): string =>
  event("message_start", {
    message: {
      id: `msg_scripted_${ctx.requestNumber}`,
      type: "message",
      role: "assistant",
      model: ctx.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input,
        output_tokens: 0,
        cache_read_input_tokens: usage.cacheRead ?? 0,
        cache_creation_input_tokens: usage.cacheWrite ?? 0
      }
    }
  })

/** One content block: start, its deltas, stop. */
const block = (index: number, start: object, deltas: ReadonlyArray<object>): ReadonlyArray<string> => [
  event("content_block_start", { index, content_block: start }),
  ...deltas.map((delta) => event("content_block_delta", { index, delta })),
  event("content_block_stop", { index })
]

const turnFrames = (step: TurnStep, ctx: TurnContext): ReadonlyArray<string> => {
  const usage = step.usage ?? { input: 0, output: 0 }
  const frames: Array<string> = [messageStart(ctx, usage)]
  let index = 0
  if (step.thinking !== undefined && step.thinking.length > 0) {
    const deltas = splitChunks(step.thinking, step.chunkSize).map((thinking) => ({ type: "thinking_delta", thinking }))
    // pi-ai replays thinking to Anthropic only with a signature, so the block carries a fake one.
    const signature = { type: "signature_delta", signature: `scripted-signature-${ctx.requestNumber}` }
    frames.push(...block(index++, { type: "thinking", thinking: "", signature: "" }, [...deltas, signature]))
  }
  if (step.text !== undefined && step.text.length > 0) {
    const deltas = splitChunks(step.text, step.chunkSize).map((text) => ({ type: "text_delta", text }))
    frames.push(...block(index++, { type: "text", text: "" }, deltas))
  }
  for (const [n, call] of (step.toolCalls ?? []).entries()) {
    const id = call.id ?? `toolu_scripted_${ctx.requestNumber}_${n}`
    const deltas = splitChunks(argumentsText(call), step.chunkSize).map((partial_json) => ({
      type: "input_json_delta",
      partial_json
    }))
    frames.push(...block(index++, { type: "tool_use", id, name: call.name, input: {} }, deltas))
  }
  frames.push(
    event("message_delta", {
      delta: { stop_reason: STOP_REASONS[finishOf(step)], stop_sequence: null },
      usage: { output_tokens: usage.output }
    }),
    event("message_stop", {})
  )
  return frames
}

const stallFrames = (afterText: string | undefined, ctx: TurnContext): ReadonlyArray<string> => {
  const frames = [messageStart(ctx, { input: 0, output: 0 })]
  if (afterText !== undefined && afterText.length > 0) {
    frames.push(
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      event("content_block_delta", { index: 0, delta: { type: "text_delta", text: afterText } })
    )
  }
  return frames
}

const anthropicDialect: Dialect = {
  name: "anthropic",
  api: "anthropic-messages",
  path: "/v1/messages",
  turn: turnFrames,
  stall: stallFrames,
  errorBody: (message) => ({ type: "error", error: { type: "api_error", message } }),
  modelsList: {
    path: "/v1/models",
    body: (ids) => ({
      data: ids.map((id) => ({ type: "model", id, display_name: id, created_at: "2026-01-01T00:00:00Z" })),
      has_more: false,
      first_id: ids[0] ?? null,
      last_id: ids.at(-1) ?? null
    })
  }
}

/**
 * Starts a scripted Anthropic messages server on 127.0.0.1 (a free port, or `options.port`). `baseUrl` has no `/v1`
 * (the SDK appends `/v1/messages`). Each POST /v1/messages consumes one step; an exhausted script
 * answers 500 "script exhausted" with `x-should-retry: false`
 * (the kernel does not retry it).
 */
export const startAnthropicServer = (steps: ReadonlyArray<Step>, options: ScriptedServerOptions = {}): Promise<ScriptedServer> =>
  startScriptedServer(anthropicDialect, steps, "", options)
