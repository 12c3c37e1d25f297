/**
 * The catalog page at scale in headless Chromium: 75 agents, one page of 50 rendered by the server,
 * "Next page" and the search swap the results in place (htmx) and ask the server, never the browser,
 * to filter — an agent that is not on the first page is found by searching.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(30_000)

let portal: Portal
let context: BrowserContext
let page: Page

beforeAll(async () => {
  portal = await startPortal()
  await portal.runtime.runPromise(
    Effect.orDie(
      Effect.flatMap(SqlClient, (sql) =>
        sql.withTransaction(
          Effect.all([
            sql`INSERT INTO admin.agent_version (name, version, package, saved_by, note)
                SELECT 'paged-' || lpad(i::text, 2, '0'), 1, jsonb_build_object('name', 'paged-' || lpad(i::text, 2, '0'), 'version', 1,
                  'description', CASE WHEN i = 70 THEN 'The rare seventieth one' ELSE 'Paged agent ' || i END,
                  'tools', jsonb_build_array('read'), 'audience', 'runtime', 'instructions', 'Hi', 'localSkills', jsonb_build_array(),
                  'files', jsonb_build_array()), 'test', 'seeded' FROM generate_series(1, 70) AS i`,
            sql`INSERT INTO admin.agent (name, audience, current_version) SELECT 'paged-' || lpad(i::text, 2, '0'), 'runtime', 1 FROM generate_series(1, 70) AS i`,
            sql`INSERT INTO admin.agent_version_counter (name, last_version) SELECT 'paged-' || lpad(i::text, 2, '0'), 1 FROM generate_series(1, 70) AS i`
          ])
        )
      )
    )
  )
  ;({ context, page } = await portal.newPage())
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

const rows = () => page.locator("table.catalog tbody tr")

describe("the catalog pages and searches server-side", () => {
  test(
    "a page of 50, next page in place, first page back",
    async () => {
      await page.goto("/")
      await portal.signIn(page, MANAGER)
      await page.goto("/agents")
      expect(await rows().count()).toBe(50)
      await expect(page.locator(".count").textContent()).resolves.toContain("75 agents (showing 50 on this page)")
      // The browser holds only this page: the seventieth agent is not in it.
      expect(await page.content()).not.toContain("paged-70")
      await page.evaluate("window.__samePage = true")
      await page.getByRole("link", { name: "Next page" }).click()
      await page.waitForURL(/cursor=/)
      await page.locator("table.catalog tbody tr", { hasText: "paged-70" }).waitFor()
      expect(await rows().count()).toBe(25)
      expect(await page.getByRole("link", { name: "Next page" }).count()).toBe(0)
      expect(await page.evaluate("window.__samePage")).toBe(true)
      await page.getByRole("link", { name: "First page" }).click()
      await page.locator("table.catalog tbody tr", { hasText: "architecture-map" }).waitFor()
      expect(await rows().count()).toBe(50)
    },
    BROWSER_TEST_MS
  )

  test(
    "searching finds an agent that was not on the page, by its description",
    async () => {
      await page.goto("/agents")
      await page.getByLabel("Search").fill("rare seventieth")
      await page.locator("table.catalog tbody tr", { hasText: "paged-70" }).waitFor()
      expect(await rows().count()).toBe(1)
      await expect(page.locator(".count").textContent()).resolves.toContain("1 of 75 agents match")
      expect(page.url()).toContain("q=rare%20seventieth")
    },
    BROWSER_TEST_MS
  )
})
