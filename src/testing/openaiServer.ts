/**
 * Scripted OpenAI chat-completions server (`POST /v1/chat/completions`, SSE `chat.completion.chunk`s),
 * so tests can drive pi-ai's real openai-completions client.
 */
import { startScriptedServer, type Dialect, type ScriptedServerOptions } from "./scriptedHttp.ts"
import {
  argumentsText,
  finishOf,
  splitChunks,
  sseFrame,
  type ScriptedServer,
  type ScriptedUsage,
  type Step,
  type TurnContext,
  type TurnStep
} from "./scriptedSteps.ts"

type Delta = Readonly<Record<string, unknown>>

const chunk = (ctx: TurnContext, choices: ReadonlyArray<object>, extra: object = {}): string =>
  sseFrame(
    JSON.stringify({
      id: `chatcmpl-scripted-${ctx.requestNumber}`,
      object: "chat.completion.chunk",
      // Date.now(): a plain synchronous response builder of a test server, outside any Effect.
      created: Math.floor(Date.now() / 1000),
      model: ctx.model,
      choices,
      ...extra
    })
  )

const deltaChunk = (ctx: TurnContext, delta: Delta): string => chunk(ctx, [{ index: 0, delta, logprobs: null, finish_reason: null }])

/**
 * pi-ai reads input = prompt_tokens - cached_tokens - cache_write_tokens, with cache writes taken from
 * `prompt_tokens_details.cache_write_tokens` (the OpenRouter extension), so the prompt total includes both.
 */
const usageJson = (usage: ScriptedUsage): object => {
  const cacheRead = usage.cacheRead ?? 0
  const cacheWrite = usage.cacheWrite ?? 0
  const prompt = usage.input + cacheRead + cacheWrite
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.output,
    total_tokens: prompt + usage.output,
    prompt_tokens_details: { cached_tokens: cacheRead, ...(cacheWrite > 0 ? { cache_write_tokens: cacheWrite } : {}) }
  }
}

const turnFrames = (step: TurnStep, ctx: TurnContext): ReadonlyArray<string> => {
  const frames: Array<string> = [deltaChunk(ctx, { role: "assistant", content: "" })]
  for (const piece of splitChunks(step.thinking ?? "", step.chunkSize)) {
    frames.push(deltaChunk(ctx, { reasoning_content: piece }))
  }
  for (const piece of splitChunks(step.text ?? "", step.chunkSize)) frames.push(deltaChunk(ctx, { content: piece }))
  for (const [index, call] of (step.toolCalls ?? []).entries()) {
    const id = call.id ?? `call_${ctx.requestNumber}_${index}`
    const opening = { index, id, type: "function", function: { name: call.name, arguments: "" } }
    frames.push(deltaChunk(ctx, { tool_calls: [opening] }))
    for (const piece of splitChunks(argumentsText(call), step.chunkSize)) {
      frames.push(deltaChunk(ctx, { tool_calls: [{ index, function: { arguments: piece } }] }))
    }
  }
  frames.push(chunk(ctx, [{ index: 0, delta: {}, logprobs: null, finish_reason: finishOf(step) }]))
  frames.push(chunk(ctx, [], { usage: usageJson(step.usage ?? { input: 0, output: 0 }) }))
  frames.push(sseFrame("[DONE]"))
  return frames
}

const stallFrames = (afterText: string | undefined, ctx: TurnContext): ReadonlyArray<string> => [
  deltaChunk(ctx, { role: "assistant", content: "" }),
  ...(afterText === undefined || afterText.length === 0 ? [] : [deltaChunk(ctx, { content: afterText })])
]

const openAIDialect: Dialect = {
  name: "openai",
  api: "openai-completions",
  path: "/v1/chat/completions",
  turn: turnFrames,
  stall: stallFrames,
  errorBody: (message) => ({ error: { message, type: "scripted_server_error", code: null, param: null } }),
  modelsList: {
    path: "/v1/models",
    body: (ids) => ({ object: "list", data: ids.map((id) => ({ id, object: "model", created: 0, owned_by: "scripted" })) })
  }
}

/**
 * Starts a scripted OpenAI chat-completions server on 127.0.0.1 (a free port, or `options.port`). `baseUrl` ends in `/v1`.
 * Each POST /v1/chat/completions consumes one step; an exhausted script answers 500 "script exhausted"
 * with `x-should-retry: false` (the kernel does not retry it).
 */
export const startOpenAIServer = (steps: ReadonlyArray<Step>, options: ScriptedServerOptions = {}): Promise<ScriptedServer> =>
  startScriptedServer(openAIDialect, steps, "/v1", options)
