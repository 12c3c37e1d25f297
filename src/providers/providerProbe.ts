/**
 * "Test connection" and model discovery for a provider: one GET of the provider's models list
 * (`<baseUrl>/models` for OpenAI-compatible APIs, `<baseUrl>/v1/models` for Anthropic's), with the
 * provider's stored key and headers, through pinnedFetch (the URL policy at connect time, the
 * connection pinned to the checked address, no redirects followed). Never throws; the result names no
 * key and quotes nothing the provider sent but model ids.
 */
import type { ProviderConfig } from "../contract/ProviderConfig.ts"
import { makeJobModels } from "../kernel/PiAiModels.ts"
import { pinnedFetch, UrlRefused, type PinnedFetchOptions } from "../net/pinnedFetch.ts"
import { readCapped } from "../tools/services/ServiceChannel.ts"

export interface ProbeResult {
  readonly ok: boolean
  /** One plain sentence: what happened. */
  readonly summary: string
  /** The model ids the provider lists (sorted; at most MAX_MODELS). */
  readonly models: ReadonlyArray<string>
  /** The address asked, without query or credentials. */
  readonly endpoint: string
}

const MAX_BODY = 1024 * 1024
const MAX_MODELS = 500
const TIMEOUT_MS = 10_000
const ANTHROPIC_VERSION = "2023-06-01"

interface Target {
  readonly api: string
  readonly baseUrl: string
  readonly apiKey: string
  readonly headers: Readonly<Record<string, string>>
}

/** The API and base URL a config is reached at: its own for a custom provider, pi-ai's for a built-in. */
const targetOf = async (config: ProviderConfig): Promise<Target | string> => {
  if ("baseUrl" in config) return { api: config.api, baseUrl: config.baseUrl, apiKey: config.apiKey, headers: config.headers ?? {} }
  const { jobModels } = await makeJobModels([config])
  const model = jobModels.models.getModels(config.id)[0]
  if (model === undefined) return "pi-ai knows no model of this provider"
  return { api: model.api, baseUrl: model.baseUrl, apiKey: config.apiKey, headers: {} }
}

/** The models-list request of an API, or why there is none. */
const requestOf = (t: Target): { readonly url: string; readonly headers: Record<string, string> } | string => {
  const base = t.baseUrl.replace(/\/+$/, "")
  switch (t.api) {
    case "openai-completions":
    case "openai-responses":
      return { url: `${base}/models`, headers: { ...t.headers, authorization: `Bearer ${t.apiKey}`, accept: "application/json" } }
    case "anthropic-messages":
      return {
        url: `${base.replace(/\/v1$/, "")}/v1/models`,
        headers: { ...t.headers, "x-api-key": t.apiKey, "anthropic-version": ANTHROPIC_VERSION, accept: "application/json" }
      }
    default:
      return `this provider's API (${t.api}) has no models list to test`
  }
}

/** The body read up to MAX_BODY bytes (more is refused, not buffered). */
const cappedText = (response: Response): Promise<string | undefined> => readCapped(response, MAX_BODY)

const idsOf = (body: unknown): Array<string> | undefined => {
  const data = body !== null && typeof body === "object" ? (body as { data?: unknown }).data : undefined
  if (!Array.isArray(data)) return undefined
  return data
    .map((m: unknown) => (m !== null && typeof m === "object" ? (m as { id?: unknown }).id : undefined))
    .filter((id): id is string => typeof id === "string" && id.length > 0 && id.length <= 200)
    .sort()
    .slice(0, MAX_MODELS)
}

const shown = (url: string): string => {
  const u = new URL(url)
  return `${u.origin}${u.pathname}`
}

const statusSummary = (status: number, path: string): string =>
  status === 401 || status === 403
    ? `The provider refused the API key (HTTP ${status}).`
    : status === 404
      ? `The provider has no models list at ${path} (HTTP 404): check the base URL.`
      : status === 429
        ? "The provider is rate limiting this key (HTTP 429); try again later."
        : status >= 300 && status < 400
          ? `The provider answered with a redirect (HTTP ${status}); use the address it redirects to as the base URL.`
          : `The provider answered HTTP ${status}.`

/**
 * Asks the provider for its models. `allowPrivateNetwork`: a custom provider is the admin's own
 * endpoint (jobs reach the same address), so private addresses are allowed for it; a built-in is not.
 */
export const probeProvider = async (
  config: ProviderConfig,
  options: Omit<PinnedFetchOptions, "allowPrivateNetwork"> & { readonly allowPrivateNetwork: boolean }
): Promise<ProbeResult> => {
  const target = await targetOf(config)
  if (typeof target === "string") return { ok: false, summary: `Cannot test: ${target}.`, models: [], endpoint: "" }
  const request = requestOf(target)
  if (typeof request === "string") return { ok: false, summary: `Cannot test: ${request}.`, models: [], endpoint: target.baseUrl }
  const endpoint = URL.canParse(request.url) ? shown(request.url) : request.url
  try {
    const response = await pinnedFetch(
      request.url,
      { method: "GET", headers: request.headers, signal: AbortSignal.timeout(TIMEOUT_MS) },
      options
    )
    if (!response.ok) {
      await response.body?.cancel()
      return { ok: false, summary: statusSummary(response.status, new URL(request.url).pathname), models: [], endpoint }
    }
    const text = await cappedText(response)
    if (text === undefined) return { ok: false, summary: "The provider's models list is larger than 1 MiB.", models: [], endpoint }
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return { ok: false, summary: "The provider answered, but not with JSON: check the base URL.", models: [], endpoint }
    }
    const models = idsOf(body)
    if (models === undefined)
      return {
        ok: false,
        summary: "The provider answered, but not with a models list: check the base URL and the API.",
        models: [],
        endpoint
      }
    return {
      ok: true,
      summary: `Connected: the key works and the provider lists ${models.length} model${models.length === 1 ? "" : "s"}.`,
      models,
      endpoint
    }
  } catch (error) {
    if (error instanceof UrlRefused) return { ok: false, summary: `The base URL is refused: ${error.problem}.`, models: [], endpoint }
    const name = error instanceof Error ? error.name : ""
    if (name === "TimeoutError" || name === "AbortError")
      return { ok: false, summary: "The provider did not answer within 10 seconds.", models: [], endpoint }
    return {
      ok: false,
      summary: "Could not connect to the provider: check the base URL and that the server is reachable from here.",
      models: [],
      endpoint
    }
  }
}
