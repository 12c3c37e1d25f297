/**
 * Test-only pi-ai `MutableModels` with one provider pointed at a scripted server (pi-ai.md §2): locked
 * auth context, in-memory key, no env or disk reads. The kernel has its own adapter; this only exercises the servers.
 */
import {
  createModels,
  createProvider,
  InMemoryCredentialStore,
  type Api,
  type Model,
  type MutableModels,
  type ProviderStreams
} from "@earendil-works/pi-ai"
import { anthropicMessagesApi } from "@earendil-works/pi-ai/api/anthropic-messages.lazy"
import { openAICompletionsApi } from "@earendil-works/pi-ai/api/openai-completions.lazy"
import { bypassProxyForLoopback } from "./scriptedHttp.ts"

/** The collection, its single model and the key the provider sends. */
export type PiModelsFixture<TApi extends Api> = {
  readonly models: MutableModels
  readonly model: Model<TApi>
  readonly apiKey: string
}

/** Overrides for the test model; `api`, `provider` and `baseUrl` are fixed by the builder. */
export type PiModelOverrides<TApi extends Api> = Partial<Omit<Model<TApi>, "api" | "provider" | "baseUrl">>

/** Options shared by both builders. */
export type PiModelsOptions<TApi extends Api> = {
  /** Default "sk-scripted-test-key". */
  readonly apiKey?: string
  /** Default "scripted-openai" / "scripted-anthropic". */
  readonly providerId?: string
  readonly model?: PiModelOverrides<TApi>
}

/** USD per million tokens, as in pi-ai.md §2. */
export const SCRIPTED_MODEL_COST = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } as const

const DEFAULT_KEY = "sk-scripted-test-key"

const baseModel = <TApi extends Api>(api: TApi, provider: string, baseUrl: string) => ({
  id: "scripted-model",
  name: "scripted-model",
  api,
  provider,
  baseUrl,
  reasoning: false,
  input: ["text" as const],
  contextWindow: 128_000,
  maxTokens: 8_192,
  cost: { ...SCRIPTED_MODEL_COST }
})

const register = <TApi extends Api>(model: Model<TApi>, api: ProviderStreams, apiKey: string): PiModelsFixture<TApi> => {
  bypassProxyForLoopback()
  const models = createModels({
    authContext: { env: async () => undefined, fileExists: async () => false },
    credentials: new InMemoryCredentialStore(),
    identity: { userAgent: "short", attribution: null }
  })
  models.setProvider(
    createProvider<TApi>({
      id: model.provider,
      models: [model],
      api,
      auth: {
        apiKey: {
          name: "scripted key",
          // A per-request options.apiKey arrives as credential.key; the OpenAI SDK would otherwise add env org/project headers.
          resolve: async ({ credential }) => ({
            auth: { apiKey: credential?.key || apiKey, headers: { "OpenAI-Organization": null, "OpenAI-Project": null } }
          })
        }
      }
    })
  )
  return { models, model, apiKey }
}

/** Builds a `MutableModels` whose one openai-completions model targets `baseUrl` (which must end in `/v1`). */
export const createOpenAIPiModels = (
  baseUrl: string,
  options: PiModelsOptions<"openai-completions"> = {}
): PiModelsFixture<"openai-completions"> => {
  const model: Model<"openai-completions"> = {
    ...baseModel("openai-completions", options.providerId ?? "scripted-openai", baseUrl),
    compat: { supportsDeveloperRole: false, supportsStore: false },
    ...options.model
  }
  return register(model, openAICompletionsApi(), options.apiKey ?? DEFAULT_KEY)
}

/** Builds a `MutableModels` whose one anthropic-messages model targets `baseUrl` (an origin without `/v1`). */
export const createAnthropicPiModels = (
  baseUrl: string,
  options: PiModelsOptions<"anthropic-messages"> = {}
): PiModelsFixture<"anthropic-messages"> => {
  const model: Model<"anthropic-messages"> = {
    ...baseModel("anthropic-messages", options.providerId ?? "scripted-anthropic", baseUrl),
    ...options.model
  }
  return register(model, anthropicMessagesApi(), options.apiKey ?? DEFAULT_KEY)
}
