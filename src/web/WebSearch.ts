/**
 * The installation's web search backend (Settings → Web search), registered by `providers.manage`:
 * `searxng` or `brave`, a URL and an optional API key (required for Brave), the key sealed with the
 * SecretBox like provider keys and never returned — a view says only whether one is stored.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { decodeAll, Problem } from "../contract/Problem.ts"
import { SecretBox } from "../providers/SecretBox.ts"
import { checkOutboundUrl } from "../net/urlPolicy.ts"
import { traced } from "../telemetry/traced.ts"
import { decodeRows, Timestamp } from "../db/rowSchema.ts"
import { type StoreError, storeErrors } from "../db/StoreError.ts"
import { searchWith, WebSearchFailed, type SearchBackendKind, type SearchResult } from "./searchBackends.ts"

export { WebSearchFailed } from "./searchBackends.ts"
export type { SearchResult } from "./searchBackends.ts"

const WebSearchInput = Schema.Struct({
  kind: Schema.Literal("searxng", "brave"),
  url: Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }), Schema.maxLength(2000)),
  /** Absent on update keeps the stored key. */
  apiKey: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }), Schema.maxLength(4000)), {
    exact: true
  })
})

export interface WebSearchView {
  readonly kind: SearchBackendKind
  readonly url: string
  readonly hasApiKey: boolean
  readonly updatedBy: string
  readonly updatedAt: Date
}

/** What the portal's and the API's "test" action reports. */
export interface WebSearchTest {
  readonly ok: boolean
  readonly results: number
  readonly problem?: string
}

export class WebSearchInvalid extends Schema.TaggedError<WebSearchInvalid>()("WebSearchInvalid", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return "the web search backend has problems"
  }
}
export class WebSearchNotConfigured extends Schema.TaggedError<WebSearchNotConfigured>()("WebSearchNotConfigured", {}) {
  override get message(): string {
    return "no web search backend is registered (Settings → Web search)"
  }
}

export class WebSearch extends Context.Tag("web/WebSearch")<
  WebSearch,
  {
    readonly get: Effect.Effect<WebSearchView, WebSearchNotConfigured | StoreError>
    /** Registers or replaces the backend (URL checked for scheme and credentials; a private address is the admin's choice). */
    readonly put: (input: unknown, by: string) => Effect.Effect<WebSearchView, WebSearchInvalid | StoreError>
    readonly remove: Effect.Effect<void, WebSearchNotConfigured | StoreError>
    /** One query to the stored backend; the answer says how many results came back or why none did. */
    readonly test: (query: string) => Effect.Effect<WebSearchTest, WebSearchNotConfigured>
    /** Titles, URLs and snippets (at most `limit`). */
    readonly search: (query: string, limit: number) => Effect.Effect<ReadonlyArray<SearchResult>, WebSearchNotConfigured | WebSearchFailed>
  }
>() {}

const Row = Schema.Struct({
  kind: WebSearchInput.fields.kind,
  url: Schema.String,
  apiKeySealed: Schema.NullOr(Schema.String),
  updatedBy: Schema.String,
  updatedAt: Timestamp
})
type Row = typeof Row.Type
const backendRows = decodeRows(Row)

const makeWebSearch = Effect.gen(function* () {
  const sql = yield* SqlClient
  const box = yield* SecretBox
  const row = Effect.flatMap(
    storeErrors("WebSearch.get")(backendRows(sql`SELECT kind, url, api_key_sealed, updated_by, updated_at FROM admin.web_search_backend`)),
    (rows) => (rows[0] === undefined ? Effect.fail(new WebSearchNotConfigured()) : Effect.succeed(rows[0]))
  )
  const view = ({ apiKeySealed, ...r }: Row): WebSearchView => ({ ...r, hasApiKey: apiKeySealed !== null })
  const config = (r: Row) => ({ kind: r.kind, url: r.url, apiKey: r.apiKeySealed === null ? undefined : box.open(r.apiKeySealed) })
  // A search is a tool call whose refusals are "not configured" and "failed": a store failure there is a defect.
  const search = (query: string, limit: number) =>
    Effect.flatMap(Effect.catchTags(row, { StoreUnavailable: Effect.die, RowInvalid: Effect.die }), (r) =>
      searchWith(config(r), query, limit)
    )

  const service: WebSearch["Type"] = {
    get: Effect.map(row, view),
    put: (input, by) =>
      Effect.gen(function* () {
        const decoded = decodeAll(WebSearchInput)(input)
        if (Either.isLeft(decoded)) return yield* Effect.fail(new WebSearchInvalid({ problems: decoded.left }))
        const s = decoded.right
        // The admin's URL may be private (a SearXNG next door); scheme, credentials and DNS still apply.
        const urlProblem = yield* Effect.promise(() => checkOutboundUrl(s.url, true))
        const existing = yield* Effect.option(row)
        const sealed =
          s.apiKey !== undefined
            ? box.seal(s.apiKey)
            : existing._tag === "Some" && existing.value.kind === s.kind
              ? existing.value.apiKeySealed
              : null
        const problems = [
          ...(urlProblem === undefined ? [] : [{ path: "url", message: urlProblem }]),
          ...(s.kind === "brave" && sealed === null ? [{ path: "apiKey", message: "is required for Brave Search" }] : [])
        ]
        if (problems.length > 0) return yield* Effect.fail(new WebSearchInvalid({ problems }))
        yield* storeErrors(
          "WebSearch.put"
        )(sql`INSERT INTO admin.web_search_backend (singleton, kind, url, api_key_sealed, updated_by) VALUES (true, ${s.kind}, ${s.url}, ${sealed}, ${by})
          ON CONFLICT (singleton) DO UPDATE SET kind = EXCLUDED.kind, url = EXCLUDED.url, api_key_sealed = EXCLUDED.api_key_sealed,
            updated_by = EXCLUDED.updated_by, updated_at = now()`)
        // The backend was written just before: WebSearchNotConfigured here would be a defect.
        return view(yield* Effect.catchTag(row, "WebSearchNotConfigured", Effect.die))
      }),
    remove: Effect.gen(function* () {
      const deleted = yield* storeErrors("WebSearch.remove")(sql`DELETE FROM admin.web_search_backend RETURNING kind`)
      if (deleted.length === 0) return yield* Effect.fail(new WebSearchNotConfigured())
    }),
    test: (query) =>
      search(query, 3).pipe(
        Effect.map((results): WebSearchTest => ({ ok: true, results: results.length })),
        Effect.catchTag("WebSearchFailed", (e) => Effect.succeed<WebSearchTest>({ ok: false, results: 0, problem: e.problem }))
      ),
    search
  }
  return service
})

export const WebSearchLive: Layer.Layer<WebSearch, never, SqlClient | SecretBox> = Layer.effect(
  WebSearch,
  Effect.map(makeWebSearch, (service) => traced("WebSearch", service))
)
