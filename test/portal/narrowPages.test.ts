/**
 * The widest pages fit a phone's width, at 1280 and 390 px in headless Chromium, with
 * real content: the evaluations comparison and a project's memory fit the viewport (a wide table
 * scrolls inside its own box or reflows), the top bar stays compact, and the memory page has the
 * project's breadcrumb and tabs and a settings form whose labels do not run into each other.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import type { BrowserContext, Page } from "playwright-core"
import { AGENT, createAdminFixtures, PROJECT } from "./adminFixtures.ts"
import { BROWSER_TEST_MS, MANAGER, runAxe, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(BROWSER_TEST_MS)

let portal: Portal
let context: BrowserContext
let page: Page

const WIDTHS = [1280, 390] as const

beforeAll(async () => {
  portal = await startPortal()
  await createAdminFixtures(portal)
  // Our own context: axe is injected with page.evaluate, which the page's CSP must not block.
  context = await portal.browser.newContext({ baseURL: portal.baseUrl, viewport: { width: 1280, height: 900 }, bypassCSP: true })
  page = await context.newPage()
  await portal.signIn(page, MANAGER)
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

const scrollWidth = async (): Promise<number> => Number(await page.evaluate("document.documentElement.scrollWidth"))
const box = async (selector: string) => {
  const b = await page.locator(selector).first().boundingBox()
  if (b === null) throw new Error(`${selector} is not visible`)
  return b
}

for (const width of WIDTHS) {
  describe(`at ${width} px`, () => {
    beforeAll(async () => {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 900 })
    })

    test("the evaluations comparison fits: the table scrolls in its own box or reflows, never the page", async () => {
      await page.goto(`/agents/${AGENT}/evals?a=1&b=2`)
      await page.locator("#eval-compare table").waitFor()
      expect(await scrollWidth()).toBeLessThanOrEqual(width)
      // Every eval and both versions' results are there, whatever the layout.
      expect(await page.locator("#eval-compare tbody tr").count()).toBe(3)
      const failing = page.locator('#eval-compare tr[data-eval="cites-orders-with-line-numbers"]')
      await expect(failing.locator(".eval-problems").textContent()).resolves.toContain("a line the job never read")
      // The table's box never reaches past the card it sits in.
      const card = await box("#eval-compare")
      const region = await box("#eval-compare .table-scroll")
      expect(region.x + region.width).toBeLessThanOrEqual(card.x + card.width + 0.5)
      if (width === 390) {
        // Reflowed: one card per eval, each cell labelled, nothing to scroll sideways.
        expect(await page.locator("#eval-compare thead").isVisible()).toBe(false)
        expect(
          Number(
            await page.evaluate(
              `document.querySelector("#eval-compare .table-scroll").scrollWidth - document.querySelector("#eval-compare .table-scroll").clientWidth`
            )
          )
        ).toBeLessThanOrEqual(0)
        expect(
          await page.evaluate(
            `getComputedStyle(document.querySelector('#eval-compare tr[data-eval="cites-orders-with-line-numbers"] td'), "::before").content`
          )
        ).toBe('"v1 result"')
      }
      expect(await runAxe(page)).toEqual([])
      await portal.screenshot(page, `narrow-evals-${width}`)
    })

    test("the top bar is compact and the current section is in view", async () => {
      await page.goto(`/projects/${PROJECT}/memory`)
      const bar = await box(".topbar")
      expect(bar.height).toBeLessThanOrEqual(width === 390 ? 96 : 100)
      const current = await box('.topbar nav [aria-current="page"]')
      expect(await page.locator('.topbar nav [aria-current="page"]').textContent()).toBe("Projects")
      expect(current.x).toBeGreaterThanOrEqual(0)
      expect(current.x + current.width).toBeLessThanOrEqual(width)
      // Signing out stays one tap away.
      expect(await page.getByRole("button", { name: "Sign out" }).isVisible()).toBe(true)
      await portal.screenshot(page, `narrow-topbar-${width}`, false)
    })

    test("project memory: breadcrumb, project tabs, notes that wrap, labels that do not run together", async () => {
      await page.goto(`/projects/${PROJECT}/memory`)
      expect(await scrollWidth()).toBeLessThanOrEqual(width)
      // The breadcrumb names the place, never a raw path.
      const crumbs = page.locator("nav[aria-label=Breadcrumb] a")
      expect(await crumbs.allTextContents()).toEqual(["Projects"])
      expect(await crumbs.first().getAttribute("href")).toBe("/projects")
      await expect(page.locator("h1").textContent()).resolves.toBe("Demo project")
      // The project's sections, Memory current.
      const tabs = page.locator("nav[aria-label=Project] a")
      expect(await tabs.allTextContents()).toEqual(["Overview", "Memory", "Web"])
      expect(await page.locator('nav[aria-label=Project] [aria-current="page"]').textContent()).toBe("Memory")
      // A long note wraps inside its card.
      const note = page.locator("#review-queue li.note", { hasText: "Build cache" })
      const noteBox = await note.boundingBox()
      const body = await note.locator("pre.note-body").boundingBox()
      expect(noteBox !== null && body !== null && body.x + body.width <= noteBox.x + noteBox.width).toBe(true)
      expect(Number(await note.locator("pre.note-body").evaluate((e) => e.scrollWidth - e.clientWidth))).toBeLessThanOrEqual(0)
      // The checkbox's label ends before the next field's label starts, and each label names one field.
      const check = page.getByLabel("Memory enabled for this project's agents")
      expect(await check.isVisible()).toBe(true)
      const checkLabel = await box('label:has(input[name="enabled"])')
      const next = await box('label[for="memory-learnedDays"]')
      expect(checkLabel.y + checkLabel.height).toBeLessThanOrEqual(next.y)
      await expect(page.locator('label:has(input[name="enabled"])').textContent()).resolves.not.toContain("Learned")
      for (const label of [
        "Learned notes not reviewed become forgotten after (days)",
        "Forgotten and rejected notes are deleted after (days)",
        "Daily logs are kept (days)"
      ]) {
        expect(await page.getByLabel(label, { exact: true }).getAttribute("type")).toBe("number")
      }
      expect(await runAxe(page)).toEqual([])
      await portal.screenshot(page, `narrow-memory-${width}`)
    })

    test("the project's other sections share the header and fit", async () => {
      for (const section of ["", "/web"]) {
        await page.goto(`/projects/${PROJECT}${section}`)
        expect(await scrollWidth()).toBeLessThanOrEqual(width)
        expect(await page.locator("nav[aria-label=Project] a").allTextContents()).toEqual(["Overview", "Memory", "Web"])
        await expect(page.locator("h1").textContent()).resolves.toBe("Demo project")
      }
    })
  })
}
