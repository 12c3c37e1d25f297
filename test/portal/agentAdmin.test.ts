/**
 * Everyday agent administration in headless Chromium, at 1280 and 390 px: a bad copy name is reported
 * under the name field (the browser's own check first, the server's when that is bypassed), name fields
 * carry the server's rules, deleting a bound provider is refused in its menu naming the bindings, a save
 * takes a change note that the history shows, the version is shown once, the catalog sorts by its
 * column headers, and the Model tab has the agent's header.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { AGENT, createAdminFixtures, PROVIDER } from "./adminFixtures.ts"
import { AGENT_NAME } from "../../src/agents/packageSchema.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { BROWSER_TEST_MS, MANAGER, runAxe, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(BROWSER_TEST_MS)

let portal: Portal
let context: BrowserContext
let page: Page
const consoleErrors: Array<string> = []

beforeAll(async () => {
  portal = await startPortal()
  await createAdminFixtures(portal)
  // Our own context: axe is injected with page.evaluate, which the page's CSP must not block.
  context = await portal.browser.newContext({ baseURL: portal.baseUrl, viewport: { width: 1280, height: 900 }, bypassCSP: true })
  page = await context.newPage()
  page.on("pageerror", (e) => consoleErrors.push(e.message))
  await portal.signIn(page, MANAGER)
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

/** The toast region: empty unless an htmx request failed without a place of its own. */
const toast = () => page.locator("#flash").innerText()

/** Whether the browser's own check (pattern, maxlength) accepts `value` in the field `selector`. */
const browserAccepts = (selector: string, value: string): Promise<boolean> =>
  page
    .evaluate(
      `(() => { const input = document.querySelector(${JSON.stringify(selector)}); input.value = ${JSON.stringify(value)}; return input.checkValidity() })()`
    )
    .then((ok) => ok === true)

describe("name rules in the browser match the server's", () => {
  test("the pattern of every name field accepts exactly what the server accepts", async () => {
    const samples = ["a", "release-notes", "a1-b2", "Bad Name!", "9lives", "-x", "x_y", "a.b", "ünïcode", `a${"b".repeat(63)}`]
    await page.goto("/agents/-/new")
    for (const s of samples) expect({ s, ok: await browserAccepts("#f-name", s) }).toEqual({ s, ok: AGENT_NAME.test(s) && s.length <= 64 })
    await page.goto("/projects/-/new")
    const projectId = /^[a-z0-9][a-z0-9._-]{0,63}$/
    for (const s of samples) expect({ s, ok: await browserAccepts("#f-id", s) }).toEqual({ s, ok: projectId.test(s) })
  })
})

for (const width of [1280, 390] as const) {
  describe(`at ${width} px`, () => {
    beforeAll(async () => {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 900 })
    })

    test("a bad copy name is reported under the name field, in the Copy menu", async () => {
      await page.goto(`/agents/${AGENT}`)
      const menu = page.locator("#copy-menu")
      await menu.locator("summary").click()
      const name = page.getByLabel("Name of the copy")
      expect(await name.getAttribute("maxlength")).toBe("64")
      // The browser's own check stops it first.
      await name.fill("Bad Name!")
      await page.getByRole("button", { name: "Copy as a custom agent" }).click()
      expect(await page.evaluate(`document.getElementById("copy-name").validity.patternMismatch`)).toBe(true)
      expect(new URL(page.url()).pathname).toBe(`/agents/${AGENT}`)
      // Past it (an old browser, a script), the server says the same at the field, not in a toast.
      await page.evaluate(`document.querySelector("#copy-menu form").noValidate = true`)
      await page.getByRole("button", { name: "Copy as a custom agent" }).click()
      const problems = page.locator("#problems-copy-name")
      await problems.locator("li").waitFor()
      await expect(problems.innerText()).resolves.toContain("must use only lower-case letters, digits and dashes, starting with a letter")
      await expect(problems.innerText()).resolves.not.toContain(".md#name")
      expect(await page.locator("#copy-menu").getAttribute("open")).not.toBeNull()
      expect(await page.getByLabel("Name of the copy").inputValue()).toBe("Bad Name!")
      expect(await page.getByLabel("Name of the copy").getAttribute("aria-invalid")).toBe("true")
      expect(await page.evaluate("document.activeElement && document.activeElement.id")).toBe("copy-name")
      expect(await toast()).toBe("")
      expect(new URL(page.url()).pathname).toBe(`/agents/${AGENT}`)
      // The open menu stays on the screen.
      expect(Number(await page.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(width)
      expect(await runAxe(page)).toEqual([])
      await portal.screenshot(page, `copy-refused-${width}`, false)
      // A name that is taken, or a built-in's, is also said at the field.
      await page.getByLabel("Name of the copy").fill("alpha-helper")
      await page.getByRole("button", { name: "Copy as a custom agent" }).click()
      await page.locator("#problems-copy-name li", { hasText: 'an agent named "alpha-helper" already exists' }).waitFor()
      await page.getByLabel("Name of the copy").fill("codebase-inventory")
      await page.getByRole("button", { name: "Copy as a custom agent" }).click()
      await page.locator("#problems-copy-name li", { hasText: "is the name of a built-in agent" }).waitFor()
      expect(await toast()).toBe("")
      // A good name copies.
      await page.getByLabel("Name of the copy").fill(`${AGENT}-copy-${width}`)
      await page.getByRole("button", { name: "Copy as a custom agent" }).click()
      await page.waitForURL(new RegExp(`/agents/${AGENT}-copy-${width}\\?copied=${AGENT}$`))
      await expect(page.locator(".alert-ok").innerText()).resolves.toContain(`Copied from ${AGENT}.`)
    })

    test("a copy refused without JavaScript: the agent's page with the menu open and the problem under the field", async () => {
      const { context: plain, page: noJs } = await portal.newPage()
      try {
        await portal.signIn(noJs, MANAGER)
        await noJs.setViewportSize({ width, height: 900 })
        await noJs.goto(`/agents/${AGENT}`)
        await noJs.evaluate(
          `(() => { const form = document.querySelector("#copy-menu form"); form.removeAttribute("hx-post"); form.noValidate = true })()`
        )
        // A plain post: htmx is not asked to handle it.
        await noJs.locator("#copy-menu summary").click()
        await noJs.getByLabel("Name of the copy").fill("x".repeat(3) + "_")
        const [response] = await Promise.all([
          noJs.waitForResponse((r) => r.url().endsWith("/copy")),
          noJs.evaluate(`document.querySelector("#copy-menu form").submit()`)
        ])
        expect(response.status()).toBe(400)
        await noJs.locator("#problems-copy-name li").waitFor()
        expect(await noJs.locator("#copy-menu").getAttribute("open")).not.toBeNull()
        await expect(noJs.locator("h1").innerText()).resolves.toBe(AGENT)
      } finally {
        await plain.close()
      }
    })

    test("name and id fields carry the server's pattern and maximum length", async () => {
      const fields: ReadonlyArray<readonly [string, string]> = [
        ["/agents/-/new", "#f-name"],
        ["/agent-skills/-/new", "#skill-name"],
        ["/providers/-/new", "#f-id"],
        ["/providers/-/builtin", "#f-id"],
        ["/mcp-servers/-/new", "#f-name"],
        ["/projects/-/new", "#f-id"]
      ]
      for (const [path, selector] of fields) {
        await page.goto(path)
        const field = page.locator(selector)
        expect({ path, pattern: await field.getAttribute("pattern"), maxlength: await field.getAttribute("maxlength") }).toEqual({
          path,
          pattern: path === "/projects/-/new" ? "[a-z0-9][a-z0-9._\\-]*" : "[a-z][a-z0-9\\-]*",
          maxlength: "64"
        })
      }
      // A local skill row of the editor too.
      await page.goto("/agents/-/new")
      await page.getByRole("button", { name: "Add local skill" }).click()
      expect(await page.locator("input[name=lsName]").last().getAttribute("pattern")).toBe("[a-z][a-z0-9\\-]*")
    })

    test("deleting a bound provider is refused in its menu, naming each binding", async () => {
      await page.goto(`/providers/${PROVIDER}`)
      const menu = page.locator("#provider-delete")
      await menu.locator("summary").click()
      await page.getByRole("button", { name: `Delete ${PROVIDER}` }).click()
      const refusal = menu.locator(".alert-error")
      await refusal.waitFor()
      await expect(refusal.innerText()).resolves.toContain(`Not deleted: ${PROVIDER} is still bound.`)
      const held = await menu.locator(".held-by li").allInnerTexts()
      expect(held).toEqual([`${AGENT}: installation default, model m1`, `${AGENT}: project demo, model m1`])
      expect(await menu.locator(".held-by a").first().getAttribute("href")).toBe(`/agents/${AGENT}/binding`)
      // In place: the provider's page is still there, no error page and no toast.
      expect(new URL(page.url()).pathname).toBe(`/providers/${PROVIDER}`)
      await expect(page.locator("h1").innerText()).resolves.toBe(PROVIDER)
      expect(await toast()).toBe("")
      expect(Number(await page.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(width)
      expect(await runAxe(page)).toEqual([])
      await portal.screenshot(page, `provider-delete-refused-${width}`, false)
      // A provider nobody binds is deleted.
      const spare = `spare-${width}`
      await portal.runtime.runPromise(
        Effect.flatMap(ProviderStore, (s) =>
          s.create(
            {
              kind: "custom",
              id: spare,
              api: "openai-completions",
              baseUrl: "http://127.0.0.1:9/v1",
              apiKey: "sk-spare-123456",
              models: [{ id: "m", contextWindow: 8000, maxTokens: 1000 }]
            },
            "test"
          )
        )
      )
      await page.goto(`/providers/${spare}`)
      await page.locator("#provider-delete summary").click()
      await page.getByRole("button", { name: `Delete ${spare}` }).click()
      await page.waitForURL(new RegExp(`/providers\\?removed=${spare}$`))
    })

    test("a save takes a change note, and the history shows it; the version is shown once", async () => {
      await page.goto(`/agents/${AGENT}`)
      expect(await page.getByText("Version label").count()).toBe(0)
      const before = (await page.locator(".badges .badge").allInnerTexts()).filter((t) => /^v\d+$/.test(t))
      expect(before.length).toBe(1)
      await page.getByLabel("Instructions (the system prompt)").fill(`Tell, citing lines, at ${width} px.`)
      await page.getByLabel("Change note (optional)").fill(`Narrower answers (${width})`)
      await page.getByRole("button", { name: "Save as new version" }).click()
      await page.waitForURL(/\?saved=\d+$/)
      const saved = Number(new URL(page.url()).searchParams.get("saved"))
      expect(await page.locator(".badges .badge", { hasText: /^v\d+$/ }).allInnerTexts()).toEqual([`v${saved}`])
      await page.goto(`/agents/${AGENT}/versions`)
      const row = page.locator("table.versions tbody tr").first()
      await expect(row.innerText()).resolves.toContain(`v${saved}`)
      await expect(row.locator(".change-note").innerText()).resolves.toBe(`Narrower answers (${width})`)
      // A built-in's page shows its version once too.
      await page.goto("/agents/codebase-inventory")
      expect(await page.getByText("Version label").count()).toBe(0)
    })

    test("the catalog sorts by its column headers, server-side, and a search keeps the order", async () => {
      await page.goto("/agents")
      const names = () => page.locator("table.catalog tbody .agent-name").allInnerTexts()
      const updated = () =>
        page
          .locator("table.catalog tbody td[data-label=Updated]")
          .evaluateAll((cells) => cells.map((c) => c.querySelector("time")?.getAttribute("datetime") ?? null))
      const header = (label: string) => page.locator("table.catalog thead th a", { hasText: label })
      expect(await header("Updated").isVisible()).toBe(true)

      await header("Updated").click()
      await page.waitForURL(/\/agents\?sort=updated$/)
      const newestFirst = await updated()
      const dated = newestFirst.filter((d): d is string => d !== null)
      expect(dated).toEqual([...dated].sort().reverse())
      // Built-ins (updated with the release) come after every custom agent.
      expect(newestFirst.slice(dated.length).every((d) => d === null)).toBe(true)
      expect(await page.locator("th[aria-sort]").getAttribute("aria-sort")).toBe("descending")

      await header("Updated").click()
      await page.waitForURL(/\/agents\?sort=updated&order=asc$/)
      expect((await updated())[0]).toBeNull()

      await header("Agent").click()
      await page.waitForURL(/\/agents\?sort=name$/)
      const ascending = await names()
      expect(ascending).toEqual([...ascending].sort())
      await header("Agent").click()
      await page.waitForURL(/\/agents\?sort=name&order=desc$/)
      expect(await names()).toEqual([...ascending].reverse())
      expect(await page.locator("th[aria-sort]").innerText()).toContain("AGENT")

      await header("Audience").click()
      await page.waitForURL(/\/agents\?sort=audience$/)
      const audiences = await page.locator("table.catalog tbody td[data-label=Audience]").allInnerTexts()
      expect(audiences).toEqual([...audiences].sort())
      expect(audiences[0]).toBe("member")

      // A search keeps the order; a reload gets the same page from the server.
      await page.getByLabel("Search").fill("e")
      await page.waitForURL(/\/agents\?q=e&.*sort=audience$/)
      await page.reload()
      const reloaded = await page.locator("table.catalog tbody td[data-label=Audience]").allInnerTexts()
      expect(reloaded).toEqual([...reloaded].sort())
      expect(Number(await page.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(width)
      expect(await runAxe(page)).toEqual([])
      await portal.screenshot(page, `catalog-sorted-${width}`, false)
    })

    test("the Model tab has the agent's header, also after a change made in place", async () => {
      await page.goto(`/agents/${AGENT}/binding`)
      await expect(page.locator("h1").innerText()).resolves.toBe(AGENT)
      expect(await page.locator('nav[aria-label=Agent] [aria-current="page"]').innerText()).toBe("Model")
      expect(await page.locator(".badges .badge", { hasText: "custom" }).count()).toBe(1)
      await page.getByRole("button", { name: "Save binding" }).click()
      await page.locator(".alert-ok", { hasText: "Bound to" }).waitFor()
      await expect(page.locator("h1").innerText()).resolves.toBe(AGENT)
      expect(await page.locator('nav[aria-label=Agent] [aria-current="page"]').innerText()).toBe("Model")
      expect(Number(await page.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(width)
      await portal.screenshot(page, `model-tab-${width}`, false)
    })
  })
}

test("no script error on any page the journey saw", () => {
  expect(consoleErrors).toEqual([])
})
