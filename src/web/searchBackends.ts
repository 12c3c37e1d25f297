/**
 * Search backends behind one interface: SearXNG (its JSON API) and Brave Search (the web search API).
 * The backend URL is an administrator's choice and may be private; the request still goes through the
 * pinned fetch (http(s) only, no credentials in the URL, no redirects), bounded in time and size, and
 * the answer is decoded with a schema. A key never appears in an error.
 */
import { Effect, Either, Schema } from "effect"
import { problemsOf } from "../contract/Problem.ts"
import { pinnedFetch } from "../net/pinnedFetch.ts"
import { readCapped } from "./webFetch.ts"

export type SearchBackendKind = "searxng" | "brave"

export interface SearchBackendConfig {
  readonly kind: SearchBackendKind
  readonly url: string
  readonly apiKey: string | undefined
}

export interface SearchResult {
  readonly title: string
  readonly url: string
  readonly snippet: string
}

export class WebSearchFailed extends Schema.TaggedError<WebSearchFailed>()("WebSearchFailed", {
  problem: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `the web search backend failed: ${this.problem}`
  }
}

const SEARCH_TIMEOUT_MS = 20_000
const MAX_ANSWER_BYTES = 4 * 1024 * 1024
const SNIPPET_CHARS = 500

const SearxngAnswer = Schema.Struct({
  results: Schema.Array(
    Schema.Struct({ title: Schema.optional(Schema.String), url: Schema.String, content: Schema.optional(Schema.String) })
  )
})
const BraveAnswer = Schema.Struct({
  web: Schema.optional(
    Schema.Struct({
      results: Schema.Array(
        Schema.Struct({ title: Schema.optional(Schema.String), url: Schema.String, description: Schema.optional(Schema.String) })
      )
    })
  )
})

/** Brave's snippets carry <strong> marks; every snippet is one line of plain text. */
const plain = (text: string | undefined): string =>
  (text ?? "")
    .replace(/<[^>]{0,200}>/g, "")
    .replace(/&(amp|lt|gt|quot|#39);/g, (_m, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[e] ?? "")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, SNIPPET_CHARS)

/** A backend's answer carries many more fields than we read: extra ones are ignored, not errors. */
const decodeAnswer = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all" })
  return (input: unknown) => Either.mapLeft(decode(input), problemsOf)
}

const request = (
  config: SearchBackendConfig,
  query: string,
  limit: number
): { readonly url: string; readonly headers: Record<string, string> } => {
  const base = config.url.replace(/\/+$/, "")
  if (config.kind === "searxng") {
    const url = `${base}/search?${new URLSearchParams({ q: query, format: "json", safesearch: "1" })}`
    return {
      url,
      headers: { accept: "application/json", ...(config.apiKey === undefined ? {} : { authorization: `Bearer ${config.apiKey}` }) }
    }
  }
  const url = `${base}/res/v1/web/search?${new URLSearchParams({ q: query, count: String(limit) })}`
  return { url, headers: { accept: "application/json", "x-subscription-token": config.apiKey ?? "" } }
}

/** Asks the backend; at most `limit` results with a URL, in its order. */
export const searchWith = (
  config: SearchBackendConfig,
  query: string,
  limit: number
): Effect.Effect<ReadonlyArray<SearchResult>, WebSearchFailed> =>
  Effect.gen(function* () {
    const { url, headers } = request(config, query, limit)
    const response = yield* Effect.tryPromise({
      try: (signal) =>
        pinnedFetch(
          url,
          { headers, signal: AbortSignal.any([signal, AbortSignal.timeout(SEARCH_TIMEOUT_MS)]) },
          { allowPrivateNetwork: true }
        ),
      catch: (e) =>
        new WebSearchFailed({
          problem: e instanceof Error && e.name === "UrlRefused" ? e.message : "the backend could not be reached",
          cause: e
        })
    })
    if (response.status !== 200) {
      yield* Effect.promise(() => response.body?.cancel().catch(() => undefined) ?? Promise.resolve())
      return yield* Effect.fail(new WebSearchFailed({ problem: `the backend answered HTTP ${response.status}` }))
    }
    const text = yield* Effect.tryPromise({
      try: async () => {
        const body = await readCapped(response, MAX_ANSWER_BYTES)
        if (body === "too-large") throw new Error("too large")
        return new TextDecoder().decode(body)
      },
      catch: () => new WebSearchFailed({ problem: "the backend's answer could not be read" })
    })
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => new WebSearchFailed({ problem: "the backend's answer is not JSON" })
    })
    const rows =
      config.kind === "searxng"
        ? Either.map(decodeAnswer(SearxngAnswer)(json), (a) => a.results.map((r) => ({ title: r.title, url: r.url, snippet: r.content })))
        : Either.map(decodeAnswer(BraveAnswer)(json), (a) =>
            (a.web?.results ?? []).map((r) => ({ title: r.title, url: r.url, snippet: r.description }))
          )
    if (Either.isLeft(rows))
      return yield* Effect.fail(
        new WebSearchFailed({ problem: `the backend's answer has an unexpected shape (${rows.left[0]?.path ?? ""})` })
      )
    return rows.right
      .filter((r) => /^https?:\/\//i.test(r.url))
      .slice(0, limit)
      .map((r) => ({ title: plain(r.title) || r.url, url: r.url, snippet: plain(r.snippet) }))
  }).pipe(Effect.withSpan("web.search", { attributes: { "kintsugi.web.backend": config.kind, "kintsugi.web.limit": limit } }))
