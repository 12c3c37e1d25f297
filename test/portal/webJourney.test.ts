/**
 * Web search in headless Chromium: register a Brave backend (the key required, then never shown), test
 * it against the scripted backend; a project's web settings with problems at their fields, saved, and
 * its usage counts beside the budgets; a reader sees both pages without controls.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { ProjectWeb } from "../../src/web/ProjectWeb.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { BRAVE_KEY, startScriptedWeb, type ScriptedWeb } from "../support/webServers.ts"
import { MANAGER, READER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(60_000)

let portal: Portal
let web: ScriptedWeb
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>

beforeAll(async () => {
  web = startScriptedWeb()
  portal = await startPortal()
  ;({ context, page, consoleErrors } = await portal.newPage())
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
  web?.stop()
})

/** Submits with `submit` and waits until the refused save's page (a 400 from a POST to `url`) has replaced the form's. */
const refusedSave = async (page: Page, url: string, submit: () => Promise<void>): Promise<void> => {
  const response = page.waitForResponse((r) => r.url() === url && r.request().method() === "POST")
  await submit()
  expect((await response).status()).toBe(400)
  await page.waitForLoadState("domcontentloaded")
}

describe("web search in the portal", () => {
  test("register Brave: the key is required, stored, never shown; the test action asks the backend", async () => {
    await portal.signIn(page, MANAGER)
    await page.getByRole("link", { name: "Web search" }).click()
    await page.waitForURL(/\/web-search$/)
    await expect(page.locator("[data-backend]").getAttribute("data-backend")).resolves.toBe("none")
    await page.getByLabel("Kind").selectOption("brave")
    await page.getByLabel("URL", { exact: true }).fill(web.url)
    // The refused save is a 400 page of its own: read its problems once it is the page (not the form before it).
    await refusedSave(page, `${portal.baseUrl}/web-search`, () => page.getByRole("button", { name: "Save backend" }).click())
    await expect(page.locator("#problems-apiKey").textContent()).resolves.toContain("is required for Brave Search")
    await page.getByLabel("API key (write-only)").fill(BRAVE_KEY)
    await page.getByRole("button", { name: "Save backend" }).click()
    await page.waitForURL(/updated=/)
    await expect(page.locator("[data-backend]").getAttribute("data-backend")).resolves.toBe("brave")
    expect(await page.content()).not.toContain(BRAVE_KEY)
    await page.getByRole("button", { name: "Test" }).click()
    await expect(page.locator("#web-search-test .alert-ok").textContent()).resolves.toContain("3 results")
    expect(web.searches().at(-1)?.headers["x-subscription-token"]).toBe(BRAVE_KEY)
    await portal.screenshot(page, "web-search")
  })

  test("a project's web settings: problems at their fields, saved, usage beside the budgets", async () => {
    await portal.runtime.runPromise(Effect.orDie(Effect.flatMap(Projects, (p) => p.create({ id: "docs", name: "Docs" }))))
    const [job] = await portal.runtime.runPromise(
      Effect.flatMap(
        SqlClient,
        (sql) =>
          sql<{
            id: string
          }>`INSERT INTO runtime.job (project_id, agent_name, task, workspace, limits, created_by) VALUES ('docs', 'researcher', 't', '{}', '{}', 'test') RETURNING id`
      )
    )
    await portal.runtime.runPromise(
      Effect.flatMap(ProjectWeb, (w) => Effect.zipRight(w.take("docs", job!.id, "search"), w.take("docs", job!.id, "fetch")))
    )
    await page.goto("/projects/docs/web")
    await expect(page.locator("[data-used][data-budget]").first().textContent()).resolves.toBe("1 of 100")
    await page.getByLabel("Agents granted web search").fill("researcher\nNot An Id")
    await page.getByLabel("Searches per day (project)").fill("lots")
    await refusedSave(page, `${portal.baseUrl}/projects/docs/web`, () => page.getByRole("button", { name: "Save web settings" }).click())
    await expect(page.locator("#problems-searchAgents").textContent()).resolves.toContain("must be an agent id")
    await expect(page.locator("#problems-dailySearches").textContent()).resolves.toContain("enter a number")
    await page.getByLabel("Agents granted web search").fill("researcher")
    await page.getByLabel("Searches per day (project)").fill("50")
    await page.locator("input[name=fetch]").check()
    await page.getByRole("button", { name: "Save web settings" }).click()
    await page.waitForURL(/updated=/)
    await expect(page.locator("[data-used][data-budget]").first().textContent()).resolves.toBe("1 of 50")
    const settings = await portal.runtime.runPromise(Effect.flatMap(ProjectWeb, (w) => w.get("docs")))
    expect(settings).toMatchObject({ searchAgents: ["researcher"], fetch: true, dailySearches: 50 })
    await portal.screenshot(page, "project-web")
    // The two refused saves answer 400 on purpose; nothing else may log an error.
    expect(consoleErrors.filter((e) => !e.includes("status of 400"))).toEqual([])
  })

  test("a reader sees both pages without controls", async () => {
    const reader = await portal.newPage()
    await portal.signIn(reader.page, READER)
    await reader.page.goto("/projects/docs/web")
    await expect(reader.page.getByRole("button", { name: "Save web settings" }).count()).resolves.toBe(0)
    await expect(reader.page.locator(".alert-info").first().textContent()).resolves.toContain("agents.manage")
    await reader.page.goto("/web-search")
    await expect(reader.page.getByRole("button", { name: "Test" }).count()).resolves.toBe(0)
    expect(await reader.page.content()).not.toContain(BRAVE_KEY)
    await reader.context.close()
  })
})
