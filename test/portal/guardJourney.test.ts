/**
 * The portal's htmx side in headless Chromium: the unsaved-changes guard asks before an htmx request
 * leaves an edited form (a boosted section link, a same-page change that swaps the page's body) but
 * not for a request from inside the form; a refused in-place save shows the one error summary with
 * the focus on it; the forms with problems and the swapped-in bodies pass axe-core.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Dialog, Page } from "playwright-core"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { BROWSER_TEST_MS, MANAGER, runAxe, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(120_000)

let portal: Portal
let context: BrowserContext
let page: Page
const consoleErrors: Array<string> = []

type Services = AgentStore | Bindings | ProviderStore | Projects
const run = <A, E>(effect: Effect.Effect<A, E, Services>) => portal.runtime.runPromise(effect as Effect.Effect<A, E, never>)
const bindingCount = async () => (await run(Effect.flatMap(Bindings, (b) => b.list("guard-agent")))).length

const agentFile = {
  files: [{ path: "guard-agent.md", content: "---\nname: guard-agent\nversion: 1\ndescription: Guarded.\ntools:\n  - read\n---\nRead.\n" }]
}

/** Violations as readable lines (empty when axe finds none). */
const violations = async (): Promise<Array<string>> =>
  (await runAxe(page)).map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)

beforeAll(async () => {
  portal = await startPortal()
  await run(Effect.flatMap(Projects, (p) => p.create({ id: "guard-p", name: "Guarded project" })))
  await run(Effect.flatMap(AgentStore, (s) => s.create(agentFile, "setup")))
  const model = (id: string) => ({ id, contextWindow: 8000, maxTokens: 1000, thinkingLevels: ["off", "low"] as const })
  await run(
    Effect.flatMap(ProviderStore, (s) =>
      s.create(
        {
          kind: "custom",
          id: "gw",
          api: "openai-completions",
          baseUrl: "http://127.0.0.1:9/v1",
          apiKey: "sk-guard",
          models: [model("m"), model("n")]
        },
        "setup"
      )
    )
  )
  await run(Effect.flatMap(Bindings, (b) => b.set("guard-agent", "", { providerId: "gw", modelId: "m" }, "setup")))
  // Our own context: axe is injected with page.evaluate, which the page's CSP must not block.
  context = await portal.browser.newContext({ baseURL: portal.baseUrl, viewport: { width: 1280, height: 900 }, bypassCSP: true })
  page = await context.newPage()
  page.on("pageerror", (e) => consoleErrors.push(e.message))
  await portal.signIn(page, MANAGER)
}, 180_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

/** Marks the document: a boosted swap keeps the mark, a real page load loses it. */
const mark = () => page.evaluate("window.__sameDocument = true")
const sameDocument = async () => (await page.evaluate("window.__sameDocument === true")) as boolean

describe("the unsaved-changes guard with htmx", () => {
  test(
    "a boosted section link asks before leaving an edited project form; untouched, it does not",
    async () => {
      await page.goto("/projects/guard-p")
      let prompts = 0
      const count = (d: Dialog) => {
        prompts += 1
        void d.accept()
      }
      page.on("dialog", count)
      await mark()
      await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Memory" }).click()
      await page.waitForURL(/\/projects\/guard-p\/memory$/)
      // An htmx swap, not a page load: the browser's own unload prompt could never have come.
      expect(await sameDocument()).toBe(true)
      expect(prompts).toBe(0)
      page.off("dialog", count)

      await page.goto("/projects/guard-p")
      await mark()
      await page.getByLabel("Name").fill("Edited, not saved")
      const asked = page.waitForEvent("dialog")
      const click = page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Memory" }).click({ noWaitAfter: true })
      const dialog = await asked
      expect(dialog.type()).toBe("confirm")
      expect(dialog.message()).toContain("unsaved changes")
      await dialog.dismiss()
      await click
      expect(page.url()).toMatch(/\/projects\/guard-p$/)
      expect(await page.getByLabel("Name").inputValue()).toBe("Edited, not saved")

      page.once("dialog", (d) => void d.accept())
      await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Memory" }).click()
      await page.waitForURL(/\/projects\/guard-p\/memory$/)
      expect(await sameDocument()).toBe(true)
      expect(
        await run(
          Effect.map(
            Effect.flatMap(Projects, (p) => p.get("guard-p")),
            (p) => p.name
          )
        )
      ).toBe("Guarded project")
    },
    BROWSER_TEST_MS
  )

  test(
    "a same-page change that swaps the body away asks; a request from inside the edited form does not",
    async () => {
      await page.goto("/agents/guard-agent/binding")
      await mark()
      let prompts = 0
      const count = (d: Dialog) => {
        prompts += 1
        void d.dismiss()
      }
      page.on("dialog", count)
      // Choosing another model edits the form and fetches its thinking levels (an hx-get from inside it): no prompt.
      const levels = page.waitForResponse((r) => r.url().includes("/bindings/-/thinking"))
      await page.getByLabel("Model").selectOption("gw/n")
      await levels
      expect(prompts).toBe(0)
      // "Remove" would swap the page's body, edited form included: asked, dismissed, nothing removed.
      const seen = page.waitForEvent("dialog")
      await page.getByRole("button", { name: "Remove" }).click({ noWaitAfter: true })
      expect((await seen).type()).toBe("confirm")
      expect(prompts).toBe(1)
      expect(await bindingCount()).toBe(1)
      expect(await page.getByLabel("Model").inputValue()).toBe("gw/n")
      page.off("dialog", count)

      page.once("dialog", (d) => void d.accept())
      await page.getByRole("button", { name: "Remove" }).click()
      await page.locator(".alert-ok").filter({ hasText: "Removed the installation default." }).waitFor()
      expect(await bindingCount()).toBe(0)
      // Answered in place: same document, same address.
      expect(await sameDocument()).toBe(true)
      expect(page.url()).toMatch(/\/agents\/guard-agent\/binding$/)
      expect(await violations()).toEqual([])

      // Saving the edited form itself is not leaving: no prompt, the new binding is in the swapped-in table.
      let asked = false
      page.once("dialog", (d) => {
        asked = true
        void d.dismiss()
      })
      await page.getByLabel("Model").selectOption("gw/n")
      await page.getByRole("button", { name: "Save binding" }).click()
      await page.locator(".alert-ok").filter({ hasText: "Bound to gw/n." }).waitFor()
      expect(asked).toBe(false)
      expect(await bindingCount()).toBe(1)
      expect(await violations()).toEqual([])
    },
    BROWSER_TEST_MS
  )
})

describe("one error summary, also after an htmx swap", () => {
  test(
    "a refused project save swaps in the summary, focused, whose link moves to the field; it passes axe",
    async () => {
      await page.goto("/projects/guard-p")
      await page.getByLabel("Name").fill("")
      await page.getByLabel("Root folder").fill("/etc")
      await page.getByRole("button", { name: "Save settings" }).click()
      await page.locator(".error-summary").waitFor()
      // The focus moves when htmx settles the swap, a moment after the summary appears.
      await page.waitForFunction("document.activeElement?.className === 'error-summary'")
      expect(await page.locator(".error-summary").textContent()).toContain("Name: fill this in")
      expect(await violations()).toEqual([])
      await page.locator(".error-summary a[href='#problems-name']").click()
      expect(await page.evaluate("document.activeElement?.id")).toBe("f-name")

      // Fixed: saved in place, the new name in the header.
      await page.getByLabel("Name").fill("Renamed in place")
      await page.getByLabel("Root folder").fill("")
      await page.getByRole("button", { name: "Save settings" }).click()
      await page.locator(".alert-ok").filter({ hasText: "Saved the settings of Renamed in place." }).waitFor()
      expect(await page.locator("h1").textContent()).toBe("Renamed in place")
      expect(await violations()).toEqual([])
    },
    BROWSER_TEST_MS
  )

  test(
    "the MCP server, run and token forms with problems pass axe",
    async () => {
      const found: Record<string, Array<string>> = {}
      await page.goto("/mcp-servers/-/new")
      await page.getByLabel("Name").fill("Bad Name")
      await page.getByRole("button", { name: "Add server" }).click()
      await page.locator(".error-summary").waitFor()
      found["mcp"] = await violations()

      await page.goto("/agents/guard-agent/run")
      await page.getByLabel("Time limit (seconds)").fill("soon")
      await page.getByRole("button", { name: "Start job" }).click()
      await page.locator(".error-summary").waitFor()
      // The focus moves when htmx settles the swap, a moment after the summary appears.
      await page.waitForFunction("document.activeElement?.className === 'error-summary'")
      found["run"] = await violations()

      await page.goto("/account")
      await page.getByLabel("Expires after (days)").fill("forever")
      await page.getByRole("button", { name: "Create token" }).click()
      await page.locator(".error-summary").waitFor()
      found["token"] = await violations()
      expect(found).toEqual({ mcp: [], run: [], token: [] })
      expect(consoleErrors).toEqual([])
    },
    BROWSER_TEST_MS
  )
})
