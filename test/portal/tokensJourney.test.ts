/**
 * API tokens in headless Chromium: from the user menu to /account, create a token (shown once, it works
 * as a Bearer token), reload (gone), revoke it (401 from then on); the reader cannot open /users.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import type { BrowserContext, Page } from "playwright-core"
import { BROWSER_TEST_MS, MANAGER, READER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(30_000)

let portal: Portal
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>

beforeAll(async () => {
  portal = await startPortal()
  ;({ context, page, consoleErrors } = await portal.newPage())
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

const api = (token: string) => fetch(`${portal.baseUrl}/api/admin/agents`, { headers: { authorization: `Bearer ${token}` } })

describe("API tokens in the portal", () => {
  test(
    "create a token, see it once, use it, revoke it",
    async () => {
      await portal.signIn(page, MANAGER)
      await page.locator(".user-name").click()
      await page.waitForURL(/\/account$/)
      await expect(page.locator("h1").textContent()).resolves.toBe("API tokens")
      await page.getByLabel("Name").fill("browser-made")
      await page.getByLabel("Expires after (days)").fill("30")
      await page.getByRole("button", { name: "Create token" }).click()
      const secret = await page.getByLabel("The new token").inputValue()
      expect(secret).toStartWith("kt_")
      expect((await api(secret)).status).toBe(200)
      await portal.screenshot(page, "api-tokens")

      await page.goto("/account")
      expect(await page.content()).not.toContain(secret)
      const row = page.locator("table.catalog tbody tr", { hasText: "browser-made" })
      await expect(row.textContent()).resolves.toContain("active")
      await row.getByRole("button", { name: "Revoke browser-made" }).click()
      await page.waitForURL(/revoked=browser-made/)
      await expect(page.locator(".alert-ok").textContent()).resolves.toContain("Revoked the token browser-made.")
      await expect(page.locator("table.catalog tbody tr", { hasText: "browser-made" }).textContent()).resolves.toContain("revoked")
      expect((await api(secret)).status).toBe(401)

      await page.getByRole("link", { name: "Users" }).click()
      await page.waitForURL(/\/users$/)
      await expect(page.locator("table.catalog").textContent()).resolves.toContain("reader")
      expect(consoleErrors).toEqual([])
    },
    BROWSER_TEST_MS
  )

  test(
    "a reader has their own tokens page but no Users link, and /users is refused",
    async () => {
      const other = await portal.newPage()
      try {
        await portal.signIn(other.page, READER)
        await other.page.goto("/account")
        expect(await other.page.getByRole("link", { name: "Users" }).count()).toBe(0)
        const refused = await other.page.goto("/users")
        expect(refused?.status()).toBe(403)
      } finally {
        await other.context.close()
      }
    },
    BROWSER_TEST_MS
  )
})
