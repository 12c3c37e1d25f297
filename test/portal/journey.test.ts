/**
 * The Agent Builder portal end to end in headless Chromium: sign in, create an agent with a problem
 * shown while typing, save, edit, diff, restore, copy a built-in, import and export a ZIP, delete.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import type { BrowserContext, Page } from "playwright-core"
import { readZip, writeZip } from "../../src/agents/zip.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
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

const notice = () => page.locator(".alert-ok")

describe("the Agent Builder portal", () => {
  test(
    "signing in leads to Home, and its navigation to the catalog of built-in agents",
    async () => {
      await page.goto("/")
      await page.waitForURL(/\/sign-in/)
      await portal.signIn(page, MANAGER)
      await expect(page.locator("h1").textContent()).resolves.toBe("Home")
      await page.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Agents" }).click()
      await page.waitForURL(/\/agents$/)
      await expect(page.locator("h1").textContent()).resolves.toBe("Agents")
      await expect(page.locator(".user-name").textContent()).resolves.toBe("manager")
      await expect(page.locator(".perms").textContent()).resolves.toContain("agents.manage")
      expect(await page.locator("table.catalog tbody tr").count()).toBeGreaterThanOrEqual(5)
      await expect(page.getByRole("link", { name: "codebase-inventory" }).isVisible()).resolves.toBe(true)
      await portal.screenshot(page, "catalog")
    },
    BROWSER_TEST_MS
  )

  test(
    "search filters the catalog without reloading the page",
    async () => {
      await page.evaluate("window.__samePage = true")
      await page.getByLabel("Search").fill("inventory")
      await page.locator("table.catalog tbody tr").nth(1).waitFor({ state: "detached" })
      expect(await page.locator("table.catalog tbody tr").count()).toBe(1)
      await expect(page.locator("table.catalog tbody tr").first().textContent()).resolves.toContain("codebase-inventory")
      expect(await page.evaluate("window.__samePage")).toBe(true)
      expect(page.url()).toContain("q=inventory")
      await page.getByLabel("Search").fill("no-such-agent-anywhere")
      await page.locator(".empty").waitFor()
      await page.goto("/agents")
    },
    BROWSER_TEST_MS
  )

  test(
    "create an agent: a bad local skill name shows a problem while typing, fixing it clears it, save gives v1",
    async () => {
      await page.getByRole("link", { name: "New agent" }).click()
      await page.waitForURL(/\/agents\/-\/new$/)
      await page.getByLabel("Name", { exact: true }).fill("release-notes")
      await page.getByLabel("Description").fill("Writes release notes from the history.")
      await page.getByLabel("Instructions (the system prompt)").fill("Read the changes.\nWrite the notes.\n")
      await page.getByRole("button", { name: "Add local skill" }).click()
      const row = page.locator("#rows-ls [data-row]").first()
      await row.getByLabel("Skill name").fill("Bad Name")
      await row.getByLabel("SKILL.md").fill("Keep entries short.\n")
      const problem = row.locator(".field-problems li")
      await problem.waitFor()
      await expect(problem.textContent()).resolves.toContain("use only lower-case letters, digits and dashes")
      await expect(page.locator("#preview-status").textContent()).resolves.toContain("problem")
      // A viewport as tall as the form: the problem, its field and the status line in one picture.
      await page.setViewportSize({ width: 1280, height: 2600 })
      await portal.screenshot(page, "editor-problem", false)
      await page.setViewportSize({ width: 1280, height: 900 })
      await row.getByLabel("Skill name").fill("notes-style")
      await page.locator("#preview-status .status-ok").waitFor()
      expect(await row.locator(".field-problems li").count()).toBe(0)
      await page.getByRole("button", { name: "Create agent" }).click()
      await page.waitForURL(/\/agents\/release-notes\?created=1$/)
      await expect(notice().textContent()).resolves.toContain("Created release-notes (v1)")
      await expect(page.locator("#problems-general").textContent()).resolves.toBe("")
    },
    BROWSER_TEST_MS
  )

  test(
    "edit and save again: v2",
    async () => {
      await page.getByLabel("Instructions (the system prompt)").fill("Read the changes.\nGroup them by area.\nWrite the notes.\n")
      await page.getByRole("button", { name: "Save as new version" }).click()
      await page.waitForURL(/\?saved=2$/)
      await expect(notice().textContent()).resolves.toContain("Saved version 2")
    },
    BROWSER_TEST_MS
  )

  test(
    "diff v1 against v2 in the version history",
    async () => {
      await page.getByRole("link", { name: "Versions" }).click()
      await page.waitForURL(/\/versions$/)
      expect(await page.locator("table.versions tbody tr").count()).toBe(2)
      await expect(page.locator("table.versions").textContent()).resolves.toContain("manager")
      await page.getByLabel("From").selectOption("1")
      await page.getByLabel("To").selectOption("2")
      await page.getByRole("button", { name: "Compare" }).click()
      await page.locator(".diff-view .diff-title", { hasText: "v1 to v2" }).waitFor()
      await expect(page.locator(".diff tr.add").first().textContent()).resolves.toContain("Group them by area.")
      expect(page.url()).toContain("from=1&to=2")
      await portal.screenshot(page, "diff")
    },
    BROWSER_TEST_MS
  )

  test(
    "restore v1 makes it current again",
    async () => {
      await page.getByRole("button", { name: "Restore v1" }).click()
      await page.locator(".alert-ok", { hasText: "Version 1 is current again." }).waitFor()
      await expect(page.locator("tr.current").textContent()).resolves.toContain("v1")
      await page.getByRole("link", { name: "Editor" }).click()
      await expect(page.getByLabel("Instructions (the system prompt)").inputValue()).resolves.toBe("Read the changes.\nWrite the notes.\n")
    },
    BROWSER_TEST_MS
  )

  test(
    "a built-in is read-only and copyable",
    async () => {
      await page.goto("/agents/codebase-inventory")
      await expect(page.locator("main").textContent()).resolves.toContain("Built-in agents are read-only")
      expect(await page.locator("#agent-form").count()).toBe(0)
      expect(await page.getByRole("button", { name: /Save/ }).count()).toBe(0)
      expect(await page.getByRole("button", { name: "Delete", exact: true }).count()).toBe(0)
      await page.locator("summary", { hasText: "Copy" }).click()
      await page.getByLabel("Name of the copy").fill("inventory-copy")
      await page.getByRole("button", { name: "Copy as a custom agent" }).click()
      await page.waitForURL(/\/agents\/inventory-copy\?copied=codebase-inventory$/)
      await expect(notice().textContent()).resolves.toContain("Copied from codebase-inventory")
      expect(await page.locator("#agent-form").count()).toBe(1)
      await page.goto("/agents/codebase-inventory")
      expect(await page.locator("#agent-form").count()).toBe(0)
    },
    BROWSER_TEST_MS
  )

  test(
    "import a ZIP, then export it",
    async () => {
      const files = [
        {
          path: "zipped-agent/zipped-agent.md",
          content: "---\nname: zipped-agent\nversion: 1\ndescription: Came in a zip.\ntools:\n  - read\n---\nYou read.\n"
        },
        { path: "zipped-agent/skills/tone/SKILL.md", content: "Be brief.\n" }
      ]
      await page.getByRole("link", { name: "Import" }).click()
      await page
        .getByLabel("Package files")
        .setInputFiles({ name: "zipped-agent.zip", mimeType: "application/zip", buffer: Buffer.from(writeZip(files)) })
      await page.getByRole("button", { name: "Check and import" }).click()
      await page.waitForURL(/\/agents\/zipped-agent\?imported=1$/)
      await expect(notice().textContent()).resolves.toContain("Imported as version 1")
      const download = page.waitForEvent("download")
      await page.getByRole("link", { name: "Export ZIP" }).click()
      const file = await (await download).path()
      const entries = await Effect.runPromise(readZip(new Uint8Array(readFileSync(file))))
      expect(entries.map((e) => e.path).sort()).toEqual(["skills/tone/SKILL.md", "zipped-agent.md"])
      const main = entries.find((e) => e.path === "zipped-agent.md")
      expect(new TextDecoder().decode(main?.content)).toContain('description: "Came in a zip."')
    },
    BROWSER_TEST_MS
  )

  test(
    "an import with problems lists them all and saves nothing",
    async () => {
      await page.goto("/agents/-/import")
      const bad = '---\nname: broken-agent\nversion: 1\ndescription: ""\ntools:\n  - telnet\n---\n \n'
      await page.getByLabel("Package files").setInputFiles({ name: "broken-agent.md", mimeType: "text/markdown", buffer: Buffer.from(bad) })
      await page.getByRole("button", { name: "Check and import" }).click()
      await page.locator("#import-result .problems li").first().waitFor()
      const listed = await page.locator("#import-result .problems li").allTextContents()
      expect(listed.length).toBeGreaterThanOrEqual(3)
      expect(listed.join("\n")).toContain("telnet")
      const catalog = await page.request.get("/agents?q=broken-agent")
      expect(await catalog.text()).not.toContain('href="/agents/broken-agent"')
    },
    BROWSER_TEST_MS
  )

  test(
    "delete the custom agent after confirming",
    async () => {
      await page.goto("/agents/release-notes")
      await page.locator("summary", { hasText: "Delete" }).click()
      await page.getByRole("button", { name: "Delete release-notes" }).click()
      await page.waitForURL(/\/agents\?deleted=release-notes$/)
      await expect(notice().textContent()).resolves.toContain("Deleted release-notes")
      expect(await page.getByRole("link", { name: "release-notes", exact: true }).count()).toBe(0)
    },
    BROWSER_TEST_MS
  )

  test(
    "shared skills: create (a bad name shows its problem), edit, refuse deleting while in use, delete",
    async () => {
      await page.getByRole("link", { name: "Shared skills" }).click()
      await page.getByRole("link", { name: "New shared skill" }).click()
      await page.getByLabel("Name").fill("Bad Name")
      await page.getByLabel("Content").fill("Write plainly.\n")
      await page.getByRole("button", { name: "Create shared skill" }).click()
      await expect(page.locator("#problems-name li").textContent()).resolves.toContain(
        "must use only lower-case letters, digits and dashes"
      )
      await page.getByLabel("Name").fill("tone-guide")
      await page.getByLabel("Description").fill("How we write.")
      await page.getByRole("button", { name: "Create shared skill" }).click()
      await page.waitForURL(/\/agent-skills\/tone-guide\?skill-created=1$/)
      await page.getByLabel("Content").fill("Write plainly. Short sentences.\n")
      await page.getByRole("button", { name: "Save shared skill" }).click()
      await page.locator(".alert-ok", { hasText: "Saved. Agents using this skill" }).waitFor()
      await expect(page.getByLabel("Content").inputValue()).resolves.toBe("Write plainly. Short sentences.\n")

      // Used by an agent: deleting is refused and the message names the agent.
      await page.goto("/agents/inventory-copy")
      await page.getByRole("checkbox", { name: /tone-guide/ }).check()
      await page.getByRole("button", { name: "Save as new version" }).click()
      await page.waitForURL(/\?saved=2$/)
      await page.goto("/agent-skills/tone-guide")
      await expect(page.locator("main").textContent()).resolves.toContain("inventory-copy")
      await page.locator("summary", { hasText: "Delete" }).click()
      await page.getByRole("button", { name: "Delete tone-guide" }).click()
      await page.locator("#flash .toast").waitFor()
      await expect(page.locator("#flash .toast").textContent()).resolves.toContain("is used by inventory-copy")

      await page.goto("/agents/inventory-copy")
      await page.getByRole("checkbox", { name: /tone-guide/ }).uncheck()
      await page.getByRole("button", { name: "Save as new version" }).click()
      await page.waitForURL(/\?saved=3$/)
      await page.goto("/agent-skills/tone-guide")
      await page.locator("summary", { hasText: "Delete" }).click()
      await page.getByRole("button", { name: "Delete tone-guide" }).click()
      await page.waitForURL(/\/agent-skills\?deleted=tone-guide$/)
      await expect(notice().textContent()).resolves.toContain("Deleted tone-guide")
    },
    BROWSER_TEST_MS
  )

  test(
    "no page broke the Content-Security-Policy or threw",
    () => {
      // The refused import answered 400 with its problem list (htmx logs it, and so does Chromium);
      // so did the skill form with a bad name (400) and the refused delete of a skill in use (409).
      // The editor's live check is `hx-sync="this:replace"`: a keystroke during a check aborts the outdated
      // request, which htmx reports as sendAbort (and its afterRequest); a failed response would still show as a status.
      const expected = (e: string) => /^Response Status Error Code (400|409)|status of (400|409) |^htmx:(sendAbort|afterRequest), /.test(e)
      expect(consoleErrors.filter((e) => !expected(e))).toEqual([])
      expect(portal.log).toEqual([])
    },
    BROWSER_TEST_MS
  )
})
