/** LLM provider configurations as the job child receives them on stdin; keys stay in memory. */
import { Schema } from "effect"
import { THINKING_LEVELS } from "./AgentDefinition.ts"

const NonEmpty = Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }))
const Price = Schema.Number.pipe(Schema.nonNegative())

export const ProviderModel = Schema.Struct({
  id: NonEmpty,
  contextWindow: Schema.Number.pipe(Schema.int(), Schema.positive()),
  maxTokens: Schema.Number.pipe(Schema.int(), Schema.positive()),
  reasoning: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** Levels this model accepts; absent = pi-ai's defaults for `reasoning`. */
  thinkingLevels: Schema.optionalWith(Schema.Array(Schema.Literal(...THINKING_LEVELS)), { exact: true }),
  /** USD per million tokens. */
  cost: Schema.optionalWith(Schema.Struct({ input: Price, output: Price, cacheRead: Price, cacheWrite: Price }), { exact: true })
})
export type ProviderModel = typeof ProviderModel.Type

export const CUSTOM_APIS = [
  "openai-completions",
  "openai-responses",
  "anthropic-messages",
  "google-generative-ai",
  "mistral-conversations"
] as const

export const CustomProviderConfig = Schema.Struct({
  id: NonEmpty,
  api: Schema.Literal(...CUSTOM_APIS),
  baseUrl: NonEmpty.pipe(
    Schema.filter((u) => (URL.canParse(u) && /^https?:$/.test(new URL(u).protocol) ? undefined : "must be an http(s) URL"))
  ),
  apiKey: Schema.String,
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true }),
  models: Schema.Array(ProviderModel)
})
export type CustomProviderConfig = typeof CustomProviderConfig.Type

export const BuiltinProviderConfig = Schema.Struct({
  id: NonEmpty,
  /** A pi-ai catalog provider id, e.g. "anthropic" or "openai". */
  builtin: NonEmpty,
  apiKey: Schema.String
})
export type BuiltinProviderConfig = typeof BuiltinProviderConfig.Type

export const ProviderConfig = Schema.Union(CustomProviderConfig, BuiltinProviderConfig)
export type ProviderConfig = typeof ProviderConfig.Type
