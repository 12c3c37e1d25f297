/**
 * The agent's Evaluations tab in headless Chromium, with the worker running: run the evals of two
 * versions from the tab (real jobs on a scripted model server) and read their results side by side —
 * pass/fail with the failing eval's problems, cost, duration and grounding per eval.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { BROWSER_TEST_MS, MANAGER, READER, runAxe, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(120_000)

let portal: Portal
let server: ScriptedServer
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>

const files = (body: string) => ({
  files: [
    { path: "teller.md", content: `---\nname: teller\nversion: 1\ndescription: Tells.\ntools: [read]\n---\n${body}\n` },
    {
      path: "evals/cites-orders.md",
      content:
        "---\ndescription: d\nfixture: shop\nexpect:\n  grounding: clean\n  contains:\n    - { text: orders }\n---\nWhere are orders?\n"
    },
    { path: "evals/fixtures/shop/src/orders.ts", content: "export const orders = []\n" }
  ]
})
const usage = { input: 1000, output: 40 }

beforeAll(async () => {
  server = await startOpenAIServer([])
  portal = await startPortal({ worker: true })
  await portal.runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* ProviderStore).create(
        {
          kind: "custom",
          id: "scripted",
          api: "openai-completions",
          baseUrl: server.baseUrl,
          apiKey: "sk-evals-tab-123456",
          models: [{ id: "m", contextWindow: 64000, maxTokens: 4096, cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 } }]
        },
        "test"
      )
      yield* (yield* Bindings).set("teller", "", { providerId: "scripted", modelId: "m" }, "test")
      const store = yield* AgentStore
      yield* store.create(files("Tell."), "test")
      yield* store.save("teller", files("Tell, citing lines."), "test")
    })
  )
  ;({ context, page, consoleErrors } = await portal.newPage())
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
  await server?.stop()
})

/** Waits until the comparison shows no run still going. */
const settled = async () => {
  await page.locator("#eval-compare:not([hx-trigger])").waitFor({ timeout: 60_000 })
}

describe("the Evaluations tab", () => {
  test(
    "run v1 and v2 from the tab; their results side by side",
    async () => {
      await portal.signIn(page, MANAGER)
      await page.goto("/agents/teller")
      await page.getByRole("link", { name: "Evaluations" }).click()
      await page.waitForURL(/\/agents\/teller\/evals$/)
      expect(await page.getByText("No results yet.").isVisible()).toBe(true)

      // v1: cites a line it never read → the eval fails, naming the citation.
      server.append({ kind: "turn", text: "The orders are in src/orders.ts:9.", usage })
      await page.getByLabel("Version", { exact: true }).selectOption("1")
      await page.getByRole("button", { name: "Run evals" }).click()
      await page.waitForURL(/started=1/)
      await settled()

      // v2: reads, then cites what it read → passes.
      server.append(
        { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/orders.ts" } }], usage },
        { kind: "turn", text: "The orders are in src/orders.ts:1.", usage }
      )
      await page.getByLabel("Version", { exact: true }).selectOption("2")
      await page.getByRole("button", { name: "Run evals" }).click()
      await page.waitForURL(/started=2/)
      await settled()

      // Side by side: v1 on the left (failed, with its problem), v2 on the right (passed).
      const row = page.locator('tr[data-eval="cites-orders"]')
      const cells = await row.locator("td").allInnerTexts()
      expect(cells[0]).toContain("fail")
      expect(cells[0]).toContain("grounding: 1 ungrounded and 0 unknown citation(s): src/orders.ts:9 (ungrounded)")
      expect(cells[1]).toMatch(/^\$0\.\d+/)
      expect(cells[2]).toMatch(/^\d+\.\d s$/)
      expect(cells[3]).toBe("0 / 1 / 0")
      expect(cells[4]).toContain("pass")
      expect(cells[4]).not.toContain("grounding:")
      expect(cells[7]).toBe("1 / 0 / 0")
      const headers = ((await page.locator("#eval-compare thead tr").first().textContent()) ?? "").replace(/\s+/g, " ")
      expect(headers).toContain("v1 failed")
      expect(headers).toContain("v2 passed")

      // The compare form swaps sides.
      await page.getByLabel("Left").selectOption("2")
      await page.getByLabel("Right").selectOption("1")
      await page.getByRole("button", { name: "Compare" }).click()
      await page.waitForURL(/a=2&b=1/)
      expect(await page.locator('tr[data-eval="cites-orders"] td').first().innerText()).toContain("pass")
      await portal.screenshot(page, "agent-evals-tab")
      expect(consoleErrors).toEqual([])
    },
    BROWSER_TEST_MS
  )

  test(
    "a reader sees the results but no run form",
    async () => {
      const reader = await portal.newPage()
      await portal.signIn(reader.page, READER)
      await reader.page.goto("/agents/teller/evals")
      expect(await reader.page.getByRole("button", { name: "Run evals" }).count()).toBe(0)
      expect(await reader.page.locator('tr[data-eval="cites-orders"]').count()).toBe(1)
      await reader.context.close()
    },
    BROWSER_TEST_MS
  )

  test(
    "the tab with results passes axe (WCAG 2.x A/AA)",
    async () => {
      const axeContext = await portal.browser.newContext({
        baseURL: portal.baseUrl,
        viewport: { width: 1280, height: 900 },
        bypassCSP: true
      })
      const axePage = await axeContext.newPage()
      await portal.signIn(axePage, MANAGER)
      await axePage.goto("/agents/teller/evals?a=1&b=2")
      expect(await axePage.locator('tr[data-eval="cites-orders"]').count()).toBe(1)
      expect((await runAxe(axePage)).map((v) => `${v.id}: ${v.help}`)).toEqual([])
      await axeContext.close()
    },
    BROWSER_TEST_MS
  )
})
