/**
 * The two public-web tools (design/memory-and-web.md §4): their inputs and what the model is told.
 * The kernel turns each into a tool that calls the services channel; the worker's web service decodes
 * the same schemas, counts the budgets and does the work (the kernel never reaches the web itself).
 */
import { Schema } from "effect"
import type { ServiceToolDef } from "./ServiceToolDef.ts"

export const MAX_WEB_SEARCH_LIMIT = 10

export const WebSearchToolInput = Schema.Struct({
  query: Schema.String.pipe(
    Schema.minLength(1, { message: () => "query must not be empty" }),
    Schema.maxLength(400, { message: () => "query must be at most 400 characters" })
  ).annotations({
    description: "What to search the public web for: general, public terms only (never project code, file contents or internal names)."
  }),
  limit: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.int(),
      Schema.between(1, MAX_WEB_SEARCH_LIMIT, { message: () => `must be an integer from 1 to ${MAX_WEB_SEARCH_LIMIT}` })
    ).annotations({
      description: `At most this many results (default 5, at most ${MAX_WEB_SEARCH_LIMIT}).`
    }),
    { exact: true }
  )
})

export const WebFetchToolInput = Schema.Struct({
  url: Schema.String.pipe(
    Schema.minLength(1, { message: () => "url must not be empty" }),
    Schema.maxLength(2000, { message: () => "url must be at most 2,000 characters" })
  ).annotations({ description: "An http(s) URL of a public page (for example one web_search returned)." })
})

export const WEB_TOOL_DEFS: ReadonlyArray<ServiceToolDef> = [
  {
    name: "web_search",
    description:
      "Search the public web for references (documentation, specifications, public articles). Returns titles, URLs and snippets. Counts against the project's search budget; never put project content in the query.",
    params: WebSearchToolInput,
    readOnly: true,
    // The worker counts the search budget as calls arrive: in call order, the same calls are refused.
    lane: "web_search"
  },
  {
    name: "web_fetch",
    description:
      "Fetch one public web page (http or https) as text. Private, local and cloud-metadata addresses are refused; pages are capped at 2 MB and 20 s, text types only. Counts against the project's fetch budget.",
    params: WebFetchToolInput,
    readOnly: true,
    // The worker counts the fetch budget as calls arrive: in call order, the same calls are refused.
    lane: "web_fetch",
    // The fetch's own cap is 20 s; the call may also wait for the budget's database round trip.
    timeoutMs: 35_000
  }
]
