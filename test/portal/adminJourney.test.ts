/**
 * The admin side of the portal in headless Chromium: an unsaved edit prompts before leaving; a save
 * without a change adds no version; a change note lands in the history; a shared-skill edit shows in
 * its history and in the history of the agents using it; "test connection" against a scripted
 * OpenAI-compatible server lists its models; a project is created (problems first, in one summary);
 * the home page's first-run checklist follows what exists.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Dialog, Page } from "playwright-core"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { SkillStore } from "../../src/agents/SkillStore.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { startOpenAIServer } from "../../src/testing/openaiServer.ts"
import type { ScriptedServer } from "../../src/testing/scriptedSteps.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(60_000)

let portal: Portal
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>
let models: ScriptedServer

const agentFile = (name: string, skills: ReadonlyArray<string> = []) => ({
  files: [
    {
      path: `${name}.md`,
      content: `---\nname: ${name}\nversion: 1\ndescription: A journey agent.\ntools:\n  - read\n${skills.length === 0 ? "" : `skills:\n${skills.map((s) => `  - ${s}\n`).join("")}`}---\nRead and report.\n`
    }
  ]
})

const run = <A, E>(effect: Effect.Effect<A, E, AgentStore | SkillStore | ProviderStore>) =>
  portal.runtime.runPromise(effect as Effect.Effect<A, E, never>)

beforeAll(async () => {
  portal = await startPortal()
  models = await startOpenAIServer([], { models: ["gw-alpha", "gw-beta"], apiKey: "sk-journey-good" })
  await run(
    Effect.flatMap(SkillStore, (s) =>
      s.create({ name: "house-style", description: "How we write.", content: "Short sentences.\n" }, "setup")
    )
  )
  await run(Effect.flatMap(AgentStore, (s) => s.create(agentFile("guarded-agent", ["house-style"]), "setup")))
  ;({ context, page, consoleErrors } = await portal.newPage())
  await portal.signIn(page, MANAGER)
}, 120_000)

afterAll(async () => {
  await context?.close()
  await models?.stop()
  await portal?.close()
})

const versionRows = () => page.locator("table.versions tbody tr")

describe("the admin portal: an admin's journey", () => {
  test(
    "an unsaved edit prompts before leaving; dismissing stays, accepting leaves",
    async () => {
      await page.goto("/agents/guarded-agent")
      // Leaving an untouched editor does not prompt.
      let prompts = 0
      const count = (d: Dialog) => {
        prompts += 1
        void d.accept()
      }
      page.on("dialog", count)
      await page.getByRole("link", { name: "Versions" }).click()
      await page.waitForURL(/\/versions$/)
      expect(prompts).toBe(0)
      page.off("dialog", count)

      await page.goto("/agents/guarded-agent")
      await page.getByLabel("Instructions (the system prompt)").fill("Read, then report in full.\n")
      const dismissed = page.waitForEvent("dialog")
      const click = page.getByRole("link", { name: "Versions" }).click({ noWaitAfter: true })
      const dialog = await dismissed
      expect(dialog.type()).toBe("beforeunload")
      await dialog.dismiss()
      await click
      expect(page.url()).toMatch(/\/agents\/guarded-agent$/)
      await expect(page.getByLabel("Instructions (the system prompt)").inputValue()).resolves.toBe("Read, then report in full.\n")

      page.once("dialog", (d) => void d.accept())
      await page.getByRole("link", { name: "Versions" }).click()
      await page.waitForURL(/\/versions$/)
      expect(await versionRows().count()).toBe(1)
    },
    BROWSER_TEST_MS
  )

  test(
    "a new agent's live check flags only the fields the user has reached",
    async () => {
      await page.goto("/agents/-/new")
      await page.getByLabel("Name", { exact: true }).fill("Bad Name")
      await page.locator("#preview-status .status-error").waitFor()
      await page.locator("#problems-name li").waitFor()
      expect(await page.locator("#problems-name li").isVisible()).toBe(true)
      // The empty description has a problem already, but the user has not reached the field yet.
      expect(await page.locator("#problems-description li").count()).toBeGreaterThan(0)
      expect(await page.locator("#problems-description li").isVisible()).toBe(false)
      await page.getByLabel("Description").focus()
      await page.getByLabel("Name", { exact: true }).focus()
      expect(await page.locator("#problems-description li").isVisible()).toBe(true)
      // Leaving the new-agent page: the guard asks because the form was edited.
      page.once("dialog", (d) => void d.accept())
    },
    BROWSER_TEST_MS
  )

  test(
    "saving without a change adds no version and says so; saving does not prompt",
    async () => {
      await page.goto("/agents/guarded-agent")
      let prompted = false
      page.once("dialog", (d) => {
        prompted = true
        void d.accept()
      })
      await page.getByRole("button", { name: "Save as new version" }).click()
      await page.waitForURL(/\?unchanged=1$/)
      await expect(page.locator(".alert-ok").textContent()).resolves.toContain("Nothing changed, so no version was added")
      await page.goto("/agents/guarded-agent/versions")
      expect(await versionRows().count()).toBe(1)
      expect(prompted).toBe(false)
    },
    BROWSER_TEST_MS
  )

  test(
    "a change with a note is a new version whose note shows in the history",
    async () => {
      await page.goto("/agents/guarded-agent")
      await page.getByLabel("Instructions (the system prompt)").fill("Read, then report with evidence.\n")
      await page.getByLabel("Change note (optional)").fill("Ask for evidence.")
      await page.getByRole("button", { name: "Save as new version" }).click()
      await page.waitForURL(/\?saved=2$/)
      await page.goto("/agents/guarded-agent/versions")
      expect(await versionRows().count()).toBe(2)
      await expect(versionRows().first().textContent()).resolves.toContain("Ask for evidence.")
    },
    BROWSER_TEST_MS
  )

  test(
    "a shared-skill edit shows in the skill's history (with diff) and in the history of the agent using it",
    async () => {
      await page.goto("/agent-skills/house-style")
      await page.getByLabel("Content").fill("Short sentences.\nActive voice.\n")
      await page.getByLabel("Change note (optional)").fill("Prefer the active voice.")
      await page.getByRole("button", { name: "Save shared skill" }).click()
      // Saved in place (htmx): the notice in the swapped-in page, the address unchanged.
      await page.locator(".alert-ok", { hasText: "Saved. Agents using this skill" }).waitFor()
      await page.getByRole("link", { name: "History" }).click()
      await page.waitForURL(/\/agent-skills\/house-style\/versions$/)
      expect(await versionRows().count()).toBe(2)
      await expect(versionRows().first().textContent()).resolves.toContain("Prefer the active voice.")
      await page.getByRole("button", { name: "Compare" }).click()
      await page.locator(".diff-view .diff-title", { hasText: "v1 to v2" }).waitFor()
      await expect(page.locator(".diff tr.add").first().textContent()).resolves.toContain("Active voice.")

      await page.goto("/agents/guarded-agent/versions")
      const changes = page.locator("table.skill-changes tbody tr")
      await expect(changes.first().textContent()).resolves.toContain("house-style")
      await expect(changes.first().textContent()).resolves.toContain("Prefer the active voice.")

      // Restore v1 of the skill: a new version, recorded as a restore.
      await page.goto("/agent-skills/house-style/versions")
      await page.getByRole("button", { name: "Restore v1" }).click()
      await page.locator(".alert-ok", { hasText: "Restored the text of version 1" }).waitFor()
      await expect(versionRows().first().textContent()).resolves.toContain("restored from v1")
    },
    BROWSER_TEST_MS
  )

  test(
    "provider: test connection lists the models of a scripted OpenAI-compatible server; a bad key is named",
    async () => {
      const model = { id: "gw-alpha", contextWindow: 8000, maxTokens: 1000, thinkingLevels: ["off"] }
      await run(
        Effect.flatMap(ProviderStore, (s) =>
          s.create(
            {
              kind: "custom",
              id: "journey-gw",
              api: "openai-completions",
              baseUrl: models.baseUrl,
              apiKey: "sk-journey-good",
              models: [model]
            },
            "setup"
          )
        )
      )
      await run(
        Effect.flatMap(ProviderStore, (s) =>
          s.create(
            {
              kind: "custom",
              id: "journey-badkey",
              api: "openai-completions",
              baseUrl: models.baseUrl,
              apiKey: "sk-wrong",
              models: [model]
            },
            "setup"
          )
        )
      )
      await page.goto("/providers/journey-gw")
      await page.evaluate("window.__samePage = true")
      await page.getByRole("button", { name: "Test connection and list models" }).click()
      const result = page.locator("#probe-result .alert")
      await result.waitFor()
      await expect(result.textContent()).resolves.toContain("Connected: the key works and the provider lists 2 models")
      const rows = page.locator("table.discovered tbody tr")
      expect(await rows.count()).toBe(2)
      await expect(rows.nth(0).textContent()).resolves.toContain("configured")
      await expect(rows.nth(1).textContent()).resolves.toContain("not added")
      expect(await page.evaluate("window.__samePage")).toBe(true)
      const asked = models.requests.filter((r) => r.method === "GET" && r.path === "/v1/models")
      expect(asked).toHaveLength(1)
      expect(asked[0]!.headers["authorization"]).toBe("Bearer sk-journey-good")
      // The key is never in the page.
      expect(await page.content()).not.toContain("sk-journey-good")
      await portal.screenshot(page, "provider-test-connection")

      await page.goto("/providers/journey-badkey")
      await page.getByRole("button", { name: "Test connection and list models" }).click()
      await page.locator("#probe-result .alert").waitFor()
      await expect(page.locator("#probe-result .alert").textContent()).resolves.toContain("The provider refused the API key (HTTP 401)")
    },
    BROWSER_TEST_MS
  )

  test(
    "a model-row error names its field in plain words, with a summary linking to it",
    async () => {
      await page.goto("/providers/-/new")
      await page.getByLabel("Provider id").fill("row-errors")
      await page.getByLabel("Base URL").fill(models.baseUrl)
      await page.locator("#f-apiKey").fill("sk-typed")
      await page.getByRole("button", { name: "Add model" }).click()
      const row = page.locator("#rows-model [data-row]").last()
      await row.getByLabel("Model id").fill("m1")
      await row.getByLabel("Context window (tokens)").fill("lots")
      await page.getByRole("button", { name: "Add provider" }).click()
      await page.locator(".error-summary").waitFor()
      await expect(row.locator(".field-problems").textContent()).resolves.toContain("Context window: enter a whole number")
      await expect(page.locator(".error-summary").textContent()).resolves.toContain("Context window: enter a whole number")
      expect(await page.locator(".error-summary").textContent()).not.toContain("NaN")
      await expect(page.locator("[data-slot=apiKey] .alert-warn").textContent()).resolves.toContain("Type the API key again")
      await portal.screenshot(page, "provider-row-error")
    },
    BROWSER_TEST_MS
  )

  test(
    "create a project: problems in one summary first, then the project page; the checklist counts it",
    async () => {
      await page.goto("/home")
      await expect(page.locator(".checklist").textContent()).resolves.toContain("Add an LLM provider")
      await page.getByRole("link", { name: "Projects" }).first().click()
      await page.waitForURL(/\/projects$/)
      await page.getByRole("link", { name: "New project" }).click()
      await page.getByLabel("Id").fill("Bad Id!")
      await page.getByRole("button", { name: "Create project" }).click()
      const summary = page.locator(".error-summary")
      await summary.waitFor()
      await expect(summary.textContent()).resolves.toContain("There are 2 problems")
      await expect(summary.textContent()).resolves.toContain("Name: fill this in")
      await summary.getByRole("link", { name: /^Name/ }).click()
      await expect(page.evaluate("document.activeElement && document.activeElement.id")).resolves.toBe("f-name")
      await page.getByLabel("Id").fill("docs-site")
      await page.getByLabel("Name").fill("Docs site")
      await page.getByRole("button", { name: "Create project" }).click()
      await page.waitForURL(/\/projects\/docs-site\?project-created=1$/)
      await expect(page.locator("h1").textContent()).resolves.toBe("Docs site")
      await expect(page.locator("nav.tabs[aria-label=Project]").textContent()).resolves.toContain("Overview")
      await page.goto("/projects")
      await expect(page.locator("table.catalog").textContent()).resolves.toContain("docs-site")
      await page.goto("/home")
      const steps = page.locator(".checklist li")
      await expect(steps.nth(0).textContent()).resolves.toContain("done")
      await expect(steps.nth(3).textContent()).resolves.toContain("1 project")
      // The refused forms answer 400 (the browser logs that); nothing else went wrong in the page.
      expect(consoleErrors.filter((e) => !e.includes("status of 400"))).toEqual([])
    },
    BROWSER_TEST_MS
  )
})
