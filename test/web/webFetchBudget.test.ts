/**
 * web_fetch's budget against the URL policy: a URL the policy refuses is answered with the rule it broke
 * and spends nothing; a URL it admits meets the budget before any request is made.
 */
import { expect, test } from "bun:test"
import { Effect, Layer } from "effect"
import { ProjectWeb, WebBudgetExhausted, type WebCallKind } from "../../src/web/ProjectWeb.ts"
import { makeWebHandlers } from "../../src/web/webServices.ts"
import { WebSearch } from "../../src/web/WebSearch.ts"
import type { ServiceGrant } from "../../src/worker/ServiceTokens.ts"
import { makeTestLayer } from "../support/testLayer.ts"

const GRANT: ServiceGrant = { jobId: "job-1", projectId: "docs", agentId: "researcher", memoryRole: null, tools: ["web_fetch"] }

/** The handlers over a budget that records each call it counts, or refuses every call when `exhausted`. */
const createHandlers = (taken: Array<WebCallKind>, exhausted = false) =>
  Effect.runPromise(
    makeWebHandlers({ allow: false, resolve: async () => ["93.184.216.34"] }).pipe(
      Effect.provide(
        Layer.merge(
          makeTestLayer(ProjectWeb)({
            take: (_project, _job, kind) =>
              exhausted ? Effect.fail(new WebBudgetExhausted({ kind, scope: "job", limit: 0 })) : Effect.sync(() => void taken.push(kind))
          }),
          makeTestLayer(WebSearch)({})
        )
      )
    )
  )

test("a web_fetch the URL policy refuses names the rule and spends no fetch", async () => {
  const taken: Array<WebCallKind> = []
  const fetch = (await createHandlers(taken)).find((h) => h.name === "web_fetch")!
  for (const url of [
    "http://169.254.169.254/latest/meta-data",
    "http://localhost:7777/",
    "ftp://example.com/x",
    "http://user:pw@example.com/"
  ]) {
    const answer = await Effect.runPromise(fetch.handle({ url }, GRANT))
    expect(answer.isError).toBe(true)
    expect(answer.text).toMatch(/^web_fetch refused .* \(rule: (non-public-address|local-host|scheme|credentials)\)/)
  }
  expect(taken).toEqual([])
})

test("a web_fetch the URL policy admits meets the budget before any request: used up, it is a tool error", async () => {
  const fetch = (await createHandlers([], true)).find((h) => h.name === "web_fetch")!
  const answer = await Effect.runPromise(fetch.handle({ url: "https://example.com/page" }, GRANT))
  expect(answer).toEqual({ isError: true, text: "web fetch budget for this job is used up (0 per job)" })
})
