/**
 * The portal's job flow in headless Chromium, with the worker running in the app: add a custom LLM
 * provider pointing at the scripted model server, bind codebase-inventory to it, start a job from
 * the agent page, and watch the live page (EventSource) until it shows completed with the answer
 * and a cost. The provider's key never appears in any page.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import type { BrowserContext, Page } from "playwright-core"
import { createJobDirs, type JobDirs } from "../support/jobChild.ts"
import { builtinAnswer, builtinOutputCalls } from "../support/builtinOutputs.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(60_000)

const CANARY = `sk-canary-${crypto.randomUUID()}`
const ANSWER = "src/a.ts exports one constant, a."

let portal: Portal
let server: ScriptedServer
let dirs: JobDirs
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>
const seen: Array<string> = []

/** Every page visited: its HTML is kept to check that the key never shows up. */
const visit = async (path: string) => {
  await page.goto(path)
  seen.push(await page.content())
}

beforeAll(async () => {
  server = await startOpenAIServer([
    // codebase-inventory's output contract: it reads, then writes inventory.md and inventory.json in the same turn.
    {
      kind: "turn",
      toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, ...builtinOutputCalls("codebase-inventory")],
      usage: { input: 1000, output: 50 }
    },
    { kind: "turn", text: builtinAnswer("codebase-inventory", ANSWER), usage: { input: 1200, output: 30 }, chunkSize: 6, delayMs: 250 }
  ])
  dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  portal = await startPortal({ worker: true })
  ;({ context, page, consoleErrors } = await portal.newPage())
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
  await server?.stop()
  dirs?.cleanup()
})

describe("running a job from the portal", () => {
  test(
    "add a provider, bind the agent, start a job, watch it complete live",
    async () => {
      await portal.signIn(page, MANAGER)

      // 1. A custom provider pointing at the scripted server, model "m" with prices.
      await visit("/providers")
      await page.getByRole("link", { name: "Add custom provider" }).click()
      await page.getByLabel("Provider id").fill("scripted")
      await page.getByLabel("Base URL").fill(server.baseUrl)
      await page.getByLabel("API key").fill(CANARY)
      await page.getByLabel("Model id").fill("m")
      await page.getByLabel("Input price (USD per million tokens)").fill("3")
      await page.getByLabel("Output price (USD per million)").fill("15")
      await page.getByRole("button", { name: "Add provider" }).click()
      await page.waitForURL(/\/providers\?added=scripted$/)
      seen.push(await page.content())
      await visit("/providers/scripted")
      expect(await page.getByLabel("API key").inputValue()).toBe("")

      // 2. Bind codebase-inventory to scripted / m; the thinking select offers the model's levels only.
      await visit("/agents/codebase-inventory")
      await page.getByRole("link", { name: "Model" }).click()
      await page.waitForURL(/\/agents\/codebase-inventory\/binding$/)
      expect(await page.getByLabel("Model").inputValue()).toBe("scripted/m")
      const levels = await page.locator("#f-thinking option").evaluateAll((os) => os.map((o) => o.getAttribute("value") ?? ""))
      expect(levels).toEqual(["", "off"])
      await page.getByRole("button", { name: "Save binding" }).click()
      await page.locator(".alert-ok", { hasText: "Bound to scripted/m." }).waitFor()
      seen.push(await page.content())
      await expect(page.locator("table.catalog").textContent()).resolves.toContain("scripted / m")

      // 3. Start a job from the agent page.
      await visit("/agents/codebase-inventory")
      await page.getByRole("link", { name: "Run a job" }).click()
      await page.getByLabel("Task").fill("What does src/a.ts export?")
      await page.getByLabel("Workspace root").fill(dirs.root)
      await page.getByLabel("Read-only source folders").fill(dirs.src)
      await page.getByLabel("Output folder").fill(dirs.out)
      await page.getByRole("button", { name: "Start job" }).click()
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/)
      // The page opened before the job finished: what follows arrived over EventSource.
      expect(await page.locator("#job-events").getAttribute("data-live")).toBe("true")

      // 4. Watch it finish: the tool call, the answer, usage and cost, the terminal state.
      await page.locator("#job-status .badge-ok").waitFor({ timeout: 45_000 })
      await expect(page.locator("#job-status").textContent()).resolves.toContain("completed")
      const events = page.locator("#job-events")
      await expect(events.locator(".ev-call").first().textContent()).resolves.toContain("read")
      await expect(events.locator(".ev-message").last().textContent()).resolves.toContain(ANSWER)
      await expect(events.locator(".ev-completed").textContent()).resolves.toContain(ANSWER)
      // The typed answer's card arrived with the final sections.
      await expect(page.locator("#job-answer pre").textContent()).resolves.toContain('"injectionAttempts": 0')
      const cost = (await page.locator("#job-cost").textContent()) ?? ""
      expect(cost).toMatch(/^\$0\.\d+$/)
      expect(Number(cost.slice(1))).toBeCloseTo((2200 * 3 + 80 * 15) / 1e6, 6)
      await expect(page.locator("#job-tokens").textContent()).resolves.toBe("2200 / 80")
      expect(await page.locator("#abort-form").count()).toBe(0)
      seen.push(await page.content())
      await portal.screenshot(page, "job-live")

      // The same job, reloaded: rendered from the stored events, no longer live.
      await visit(page.url())
      expect(await page.locator("#job-events").getAttribute("data-live")).toBe("false")
      await expect(page.locator("#job-events .ev-message").textContent()).resolves.toContain(ANSWER)
      await visit("/jobs")
      await expect(page.locator("table.catalog tbody").textContent()).resolves.toContain("completed")

      // The key reached the model server and nothing else.
      expect(server.requests[0]?.headers["authorization"]).toBe(`Bearer ${CANARY}`)
      for (const html of seen) expect(html).not.toContain(CANARY)
      expect(consoleErrors).toEqual([])
    },
    BROWSER_TEST_MS
  )
})
