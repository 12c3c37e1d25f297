/**
 * The LLM port's pi-ai adapter: one in-memory `Models` collection per job, one provider per
 * `ProviderConfig`. No environment, disk or network besides each provider's own base URL: a locked
 * `AuthContext`, keys from the config only, OpenAI org/project headers nulled, egress pinned.
 */
import {
  InMemoryCredentialStore,
  type Api,
  type FetchFunction,
  type Model,
  type MutableModels,
  type Provider,
  type ThinkingLevelMap
} from "@earendil-works/pi-ai"
// From their own module, not the package index: a bytecode bundle keeps pi-ai's modules lazy (the
// index is marked side-effect free), and only a direct import makes the bundle initialise them first.
import { createModels, createProvider, getSupportedThinkingLevels } from "@earendil-works/pi-ai/models"
import { anthropicMessagesApi } from "@earendil-works/pi-ai/api/anthropic-messages.lazy"
import { googleGenerativeAIApi } from "@earendil-works/pi-ai/api/google-generative-ai.lazy"
import { mistralConversationsApi } from "@earendil-works/pi-ai/api/mistral-conversations.lazy"
import { openAICompletionsApi } from "@earendil-works/pi-ai/api/openai-completions.lazy"
import { openAIResponsesApi } from "@earendil-works/pi-ai/api/openai-responses.lazy"
import type { ThinkingLevel } from "../contract/AgentDefinition.ts"
import { THINKING_LEVELS } from "../contract/AgentDefinition.ts"
import type { CustomProviderConfig, ProviderConfig, ProviderModel } from "../contract/ProviderConfig.ts"

/** A request outside the provider's base URL, refused before it left: never a connection failure. */
export class EgressRefused extends Error {}

const API_IMPLEMENTATIONS = {
  "openai-completions": openAICompletionsApi,
  "openai-responses": openAIResponsesApi,
  "anthropic-messages": anthropicMessagesApi,
  "google-generative-ai": googleGenerativeAIApi,
  "mistral-conversations": mistralConversationsApi
} as const

/**
 * The implementations behind API_IMPLEMENTATIONS, which pi-ai imports at a job's first model call (one
 * per API, most used first): a child started ahead loads them while it waits (jobChild/warmUp.ts).
 */
export const API_IMPLEMENTATION_MODULES: ReadonlyArray<() => Promise<unknown>> = [
  () => import("@earendil-works/pi-ai/api/openai-completions"),
  () => import("@earendil-works/pi-ai/api/anthropic-messages"),
  () => import("@earendil-works/pi-ai/api/openai-responses"),
  () => import("@earendil-works/pi-ai/api/mistral-conversations"),
  () => import("@earendil-works/pi-ai/api/google-generative-ai")
]

/** Headers the OpenAI SDK would otherwise fill from OPENAI_ORG_ID / OPENAI_PROJECT_ID, for any baseUrl. */
const NULLED_HEADERS = { "OpenAI-Organization": null, "OpenAI-Project": null }

export interface JobModels {
  readonly models: MutableModels
  /** The model a job names, or undefined. */
  readonly find: (provider: string, id: string) => Model<Api> | undefined
  /** A fetch that only reaches this model's base URL; anything else is refused before it leaves. */
  readonly pinnedFetch: (model: Model<Api>) => FetchFunction
  /** Every secret the configs hold (keys, header values), for the event redactor. */
  readonly secrets: ReadonlyArray<string>
}

/** null marks a level unsupported; a listed level keeps the provider's default wire value, except
 * xhigh and max, which pi-ai only sends when the map opts in with a value. */
const toThinkingMap = (levels: ReadonlyArray<ThinkingLevel>): ThinkingLevelMap => {
  const map: Record<string, string | null> = {}
  for (const level of THINKING_LEVELS) {
    if (!levels.includes(level)) map[level] = null
    else if (level === "xhigh" || level === "max") map[level] = level
  }
  return map as ThinkingLevelMap
}

const customModel = (config: CustomProviderConfig, m: ProviderModel): Model<Api> => {
  const levels = m.thinkingLevels
  const reasoning = m.reasoning ?? (levels !== undefined && levels.some((l) => l !== "off"))
  return {
    id: m.id,
    name: m.id,
    api: config.api,
    provider: config.id,
    baseUrl: config.baseUrl,
    reasoning,
    ...(reasoning && levels !== undefined ? { thinkingLevelMap: toThinkingMap(levels) } : {}),
    input: ["text"],
    contextWindow: m.contextWindow,
    maxTokens: m.maxTokens,
    cost: m.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    ...(config.headers === undefined ? {} : { headers: config.headers }),
    ...(config.api === "anthropic-messages"
      ? { compat: { supportsEagerToolInputStreaming: false } }
      : config.api === "openai-completions"
        ? { compat: { supportsStore: false } }
        : {})
  } as Model<Api>
}

const keyAuth = (name: string, apiKey: string) => ({
  apiKey: {
    name,
    resolve: async () => (apiKey === "" ? undefined : { auth: { apiKey, headers: NULLED_HEADERS } })
  }
})

/** Thinking levels the model accepts, in pi-ai's terms ("off" included when it can stop thinking). */
export const supportedThinking = (model: Model<Api>): ReadonlyArray<ThinkingLevel> =>
  getSupportedThinkingLevels(model) as ReadonlyArray<ThinkingLevel>

/**
 * Builds the job's model collection. Unknown built-in provider ids and duplicate config ids are
 * reported by `problems` (the kernel refuses the job with them).
 */
export const makeJobModels = async (
  configs: ReadonlyArray<ProviderConfig>
): Promise<{ readonly jobModels: JobModels; readonly problems: ReadonlyArray<{ path: string; message: string }> }> => {
  // The built-in catalog is costly to load (time and memory): only when a config asks for it.
  const catalog = configs.some((c) => "builtin" in c)
    ? new Map((await import("@earendil-works/pi-ai/providers/all")).builtinProviders().map((p) => [p.id, p]))
    : new Map<string, Provider>()
  const models = createModels({
    authContext: { env: async () => undefined, fileExists: async () => false },
    credentials: new InMemoryCredentialStore(),
    identity: { userAgent: { custom: "kintsugi-runtime" }, attribution: null }
  })
  const problems: Array<{ path: string; message: string }> = []
  const secrets: Array<string> = []
  const seen = new Set<string>()
  configs.forEach((config, i) => {
    if (seen.has(config.id)) problems.push({ path: `providers.${i}.id`, message: `duplicate provider id "${config.id}"` })
    seen.add(config.id)
    secrets.push(config.apiKey)
    if ("builtin" in config) {
      const builtin = catalog.get(config.builtin)
      if (builtin === undefined) {
        problems.push({ path: `providers.${i}.builtin`, message: `unknown pi-ai provider "${config.builtin}"` })
        return
      }
      models.setProvider(
        createProvider({
          id: config.id,
          name: builtin.name,
          auth: keyAuth(config.id, config.apiKey),
          models: builtin.getModels().map((m) => ({ ...m, provider: config.id })),
          // The catalog provider streams; auth and egress are ours (its own auth reads the environment).
          api: { stream: (m, c, o) => builtin.stream(m, c, o), streamSimple: (m, c, o) => builtin.streamSimple(m, c, o) }
        })
      )
      return
    }
    for (const v of Object.values(config.headers ?? {})) secrets.push(v)
    models.setProvider(
      createProvider({
        id: config.id,
        baseUrl: config.baseUrl,
        auth: keyAuth(config.id, config.apiKey),
        models: config.models.map((m) => customModel(config, m)),
        api: API_IMPLEMENTATIONS[config.api]()
      })
    )
  })
  const pinnedFetch = (model: Model<Api>): FetchFunction => {
    const allowed = new URL(model.baseUrl)
    const prefix = allowed.pathname.replace(/\/+$/, "")
    const pinned = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url)
      const inside = url.origin === allowed.origin && (url.pathname === prefix || url.pathname.startsWith(`${prefix}/`))
      if (!inside) return Promise.reject(new EgressRefused(`egress refused: request outside the provider's base URL (${url.origin})`))
      // A provider never needs a redirect; following one could carry the key to another origin.
      return globalThis.fetch(input, { ...init, redirect: "error" }).catch((error: unknown) => {
        // A refused redirect is the provider's answer, not a connection failure to retry.
        if (error instanceof Error && "code" in error && error.code === "UnexpectedRedirect") {
          throw new EgressRefused("egress refused: the provider answered with a redirect")
        }
        throw error
      })
    }
    return Object.assign(pinned, { preconnect: globalThis.fetch.preconnect }) as FetchFunction
  }
  return {
    jobModels: {
      models,
      find: (provider, id) => models.getModel(provider, id),
      pinnedFetch,
      secrets: secrets.filter((s) => s.length >= 6)
    },
    problems
  }
}
