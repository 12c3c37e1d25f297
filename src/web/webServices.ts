/**
 * The worker's side of `web_search` and `web_fetch` on the services channel (design/memory-and-web.md
 * §1, §4): the grant (the project's searchAgents, and the separate fetch opt-in), a fetch's URL policy
 * (a refused URL spends nothing), the budgets (counted in the database before any web request), then
 * the backend search or the bounded fetch. Every
 * failure the model can act on — an exhausted budget, a refused URL, a backend error — is an error
 * result, never a job failure. Results are cut like every tool result.
 */
import { Config, Effect, Either, Layer } from "effect"
import { MAX_WEB_SEARCH_LIMIT, WebFetchToolInput, WebSearchToolInput } from "../tools/services/webTools.ts"
import { truncateOutput } from "../tools/truncate.ts"
import type { ServiceAnswer } from "../tools/services/ServiceChannel.ts"
import { type GrantSubject, type ServiceHandler, ServiceHandlers } from "../worker/Services.ts"
import type { ServiceGrant } from "../worker/ServiceTokens.ts"
import { ProjectWeb, type WebCallKind } from "./ProjectWeb.ts"
import { fetchPage, WebFetchRefused } from "./webFetch.ts"
import { WebSearch } from "./WebSearch.ts"
import { checkTargetRule, systemResolver, type NetworkAllowance, type Resolver } from "../net/urlPolicy.ts"

/** The test-only setting that lets web_fetch reach pages on loopback (the tests' scripted pages). */
export const TEST_LOOPBACK_SETTING = "KINTSUGI_TEST_WEB_LOOPBACK"

/** Refused outside tests: a production server with it set would let every job fetch its own host. */
class TestOnlySetting extends Error {
  constructor() {
    super(`${TEST_LOOPBACK_SETTING} is a test-only setting (it lets web_fetch reach loopback); it is refused unless NODE_ENV=test`)
    this.name = "TestOnlySetting"
  }
}

/**
 * The fetch's network allowance from the environment: `false` (public addresses only), or `"loopback"`
 * when KINTSUGI_TEST_WEB_LOOPBACK=1 under NODE_ENV=test. Set anywhere else, it is a defect: the server
 * does not start.
 */
export const webFetchAllowance: Effect.Effect<NetworkAllowance> = Effect.gen(function* () {
  const on = yield* Config.boolean(TEST_LOOPBACK_SETTING).pipe(
    Config.withDefault(false),
    Effect.orElseSucceed(() => true)
  )
  if (!on) return false
  const env = yield* Config.string("NODE_ENV").pipe(
    Config.withDefault(""),
    Effect.orElseSucceed(() => "")
  )
  // A test-only setting outside a test run is a misconfigured deployment: a startup defect, never a request failure.
  if (env !== "test") return yield* Effect.die(new TestOnlySetting())
  return "loopback" as const
})

const ok = (text: string): ServiceAnswer => ({ text, isError: false })
const error = (text: string): ServiceAnswer => ({ text, isError: true })

/** Tool output, cut like every tool result (2000 lines or 50 KB). */
const cut = (text: string, hint: string): string => truncateOutput(text, hint)

export interface WebServicesOptions {
  /** The fetch's network allowance (default: from the environment, `webFetchAllowance`). */
  readonly allow?: NetworkAllowance
  /** Resolves page hosts (default: the system resolver); a seam for tests. */
  readonly resolve?: Resolver
}

export const makeWebHandlers = (
  options: WebServicesOptions = {}
): Effect.Effect<ReadonlyArray<ServiceHandler>, never, ProjectWeb | WebSearch> =>
  Effect.gen(function* () {
    const web = yield* ProjectWeb
    const search = yield* WebSearch
    const allow = options.allow ?? (yield* webFetchAllowance)

    const settings = (projectId: string) => Effect.option(web.get(projectId))
    const searchRefusal = ({ projectId, agentId }: GrantSubject) =>
      Effect.map(settings(projectId), (s) =>
        s._tag === "None"
          ? `no project "${projectId}"`
          : s.value.searchAgents.includes(agentId)
            ? undefined
            : `project "${projectId}" does not grant web search to agent "${agentId}"`
      )

    /** The budget first (nothing reaches the web past it), then the work; every failure an error result. */
    const budgeted = (grant: ServiceGrant, kind: WebCallKind, work: Effect.Effect<ServiceAnswer>) =>
      web
        .take(grant.projectId, grant.jobId, kind)
        .pipe(Effect.matchEffect({ onFailure: (e) => Effect.succeed(error(e.message)), onSuccess: () => work }))

    const webSearch: ServiceHandler = {
      name: "web_search",
      params: WebSearchToolInput,
      refusal: (subject) =>
        Effect.flatMap(searchRefusal(subject), (refused) =>
          refused !== undefined
            ? Effect.succeed(refused)
            : Effect.map(Effect.option(search.get), (b) => (b._tag === "None" ? "no web search backend is registered" : undefined))
        ),
      handle: (input, grant) => {
        const { query, limit } = input as typeof WebSearchToolInput.Type
        return budgeted(
          grant,
          "search",
          search.search(query, Math.min(limit ?? 5, MAX_WEB_SEARCH_LIMIT)).pipe(
            Effect.map((results) =>
              ok(
                results.length === 0
                  ? `No results for "${query}".`
                  : cut(
                      results.map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}${r.snippet === "" ? "" : `\n   ${r.snippet}`}`).join("\n"),
                      "ask for fewer results"
                    )
              )
            ),
            Effect.catchAll((e) => Effect.succeed(error(e.message)))
          )
        )
      }
    }

    /** The admitted URL's fetch, counted against the budget first. */
    const fetchBudgeted = (url: string, grant: ServiceGrant, resolve: Resolver) =>
      budgeted(
        grant,
        "fetch",
        fetchPage(url, { allow, resolve }).pipe(
          Effect.map((page) => {
            const head = [
              ...(page.title === undefined ? [] : [`# ${page.title}`]),
              `URL: ${page.url}`,
              `Content-Type: ${page.mediaType}`
            ].join("\n")
            return ok(cut(`${head}\n\n${page.text}`, "the page is longer; fetch a more specific page"))
          }),
          Effect.catchAll((e) => Effect.succeed(error(e.message)))
        )
      )

    const webFetch: ServiceHandler = {
      name: "web_fetch",
      params: WebFetchToolInput,
      refusal: (subject) =>
        Effect.flatMap(searchRefusal(subject), (refused) =>
          refused !== undefined
            ? Effect.succeed(refused)
            : Effect.map(settings(subject.projectId), (s) =>
                s._tag === "Some" && s.value.fetch ? undefined : `project "${subject.projectId}" has web fetch off`
              )
        ),
      handle: (input, grant) => {
        const { url } = input as typeof WebFetchToolInput.Type
        const resolve = options.resolve ?? systemResolver
        // A URL the policy refuses reaches nothing, so it spends no budget; fetchPage checks every hop again.
        return Effect.flatMap(
          Effect.promise(() => checkTargetRule(url, allow, resolve)),
          (checked) =>
            Either.isLeft(checked)
              ? Effect.succeed(
                  error(new WebFetchRefused({ rule: checked.left.rule, url, problem: `the URL ${checked.left.problem}` }).message)
                )
              : fetchBudgeted(url, grant, resolve)
        )
      }
    }
    return [webSearch, webFetch]
  })

/** The web handlers as the channel's registry (memory's handlers join these in the composition root). */
export const WebServiceHandlersLive = (options: WebServicesOptions = {}): Layer.Layer<ServiceHandlers, never, ProjectWeb | WebSearch> =>
  Layer.effect(ServiceHandlers, makeWebHandlers(options))
