/**
 * The jobs side of the portal in headless Chromium, with the worker in
 * the app and a scripted model server: the run form names the model and thinking level a job gets and
 * refuses a bad workspace, or an agent with no model binding, next to its fields before anything is queued; a double click on Start job
 * starts one job; the job page shows the timeline (timestamps, expandable tool calls), the trace of
 * nested spans, cost and tokens and the output files — read from the worker's commit (a change to the
 * folder later does not show), a hostile output served as text, never as a page of the portal; abort asks first and records who did it; the jobs list filters and pages.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { SqlClient } from "@effect/sql/SqlClient"
import type { BrowserContext, Page } from "playwright-core"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { createJobDirs, MODEL_PRICES, type JobDirs } from "../support/jobChild.ts"
import { builtinAnswer, builtinOutputCalls } from "../support/builtinOutputs.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(120_000)

const HOSTILE = "# Report\n<script>document.title = 'pwned'</script><img src=x onerror=\"document.title='pwned'\">\n"
const ANSWER = "Wrote report.md."

let portal: Portal
let server: ScriptedServer
let dirs: JobDirs
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>

const jobCount = async (): Promise<number> =>
  Number(
    (await portal.runtime.runPromise(Effect.flatMap(SqlClient, (sql) => sql<{ n: string }>`SELECT count(*) AS n FROM runtime.job`)))[0]
      ?.n ?? "0"
  )

const fillRun = async (values: { task: string; root: string; readOnly: string; outDir: string }) => {
  await page.getByLabel("Task").fill(values.task)
  await page.getByLabel("Workspace root").fill(values.root)
  await page.getByLabel("Read-only source folders").fill(values.readOnly)
  await page.getByLabel("Output folder").fill(values.outDir)
}

beforeAll(async () => {
  server = await startOpenAIServer([
    // codebase-inventory's output contract: its report (hostile HTML here) and inventory.json.
    { kind: "turn", toolCalls: builtinOutputCalls("codebase-inventory", HOSTILE), usage: { input: 1000, output: 50 } },
    { kind: "turn", text: builtinAnswer("codebase-inventory", ANSWER), usage: { input: 1200, output: 30 } },
    // The second job's model never answers: it is aborted.
    { kind: "stall" }
  ])
  dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  // A work tree inside the job roots: the worker commits the outputs, and the job page reads them from that commit.
  Bun.spawnSync(["git", "init", "-q", dirs.root], { env: { PATH: "/usr/bin:/bin", HOME: dirs.root } })
  portal = await startPortal({ worker: true })
  await portal.runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* ProviderStore).create(
        {
          kind: "custom",
          id: "scripted",
          api: "openai-completions",
          baseUrl: server.baseUrl,
          apiKey: "sk-journey",
          models: [{ id: "m", contextWindow: 128_000, maxTokens: 8192, cost: MODEL_PRICES }]
        },
        "setup"
      )
      yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "scripted", modelId: "m" }, "setup")
    })
  )
  ;({ context, page, consoleErrors } = await portal.newPage())
  await portal.signIn(page, MANAGER)
}, 240_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
  await server?.stop()
  dirs?.cleanup()
})

describe("jobs in the portal", () => {
  test(
    "an agent with no model binding: refused on the form next to the agent, saying where to bind it; nothing queued",
    async () => {
      await page.goto("/agents/risk-quality/run")
      const bind = page.locator("#run-model").getByRole("link", { name: "Bind it to a provider in Bindings" })
      expect(await bind.getAttribute("href")).toBe("/agents/risk-quality/binding")
      await fillRun({ task: "Assess.", root: dirs.root, readOnly: dirs.src, outDir: dirs.out })
      await page.getByRole("button", { name: "Start job" }).click()
      await page.locator("#problems-agent li").first().waitFor()
      const problem = (await page.locator("#problems-agent").textContent()) ?? ""
      expect(problem).toContain('agent "risk-quality" is not bound to a model')
      expect(problem).toContain("bind it to a provider in Bindings")
      expect(await page.getByLabel("Agent").getAttribute("aria-invalid")).toBe("true")
      // The valid fields are kept and carry no problem of their own.
      expect(await page.getByLabel("Output folder").inputValue()).toBe(dirs.out)
      expect(await page.locator("#problems-outDir").textContent()).toBe("")
      expect(await jobCount()).toBe(0)
    },
    BROWSER_TEST_MS
  )

  test(
    "the run form names the model, refuses a bad workspace on the form, and a double click starts one job",
    async () => {
      await page.goto("/agents/codebase-inventory/run")
      // What the job gets: the binding's model; thinking from the agent (medium), clamped to what "m" has (off).
      await expect(page.locator("#run-model-name").textContent()).resolves.toBe("scripted/m")
      await expect(page.locator("#run-thinking").textContent()).resolves.toBe("off")

      // Relative root, a missing source folder, an output folder outside the job roots: all refused at once, next to their fields.
      await fillRun({ task: "Inventory.", root: "relative/dir", readOnly: `${dirs.src}/missing`, outDir: "/etc" })
      await page.getByRole("button", { name: "Start job" }).click()
      await page.locator("#problems-root li").first().waitFor()
      expect(await page.locator("#problems-root").textContent()).toMatch(/absolute/)
      expect(await page.locator("#problems-readOnly").textContent()).not.toBe("")
      expect(await page.locator("#problems-outDir").textContent()).not.toBe("")
      await expect(page.locator(".error-summary").textContent()).resolves.toContain("This job was not started")
      // The summary takes the focus after the swap and links to each field.
      // The focus moves when htmx settles the swap, a moment after the summary appears.
      await page.waitForFunction("document.activeElement?.className === 'error-summary'")
      expect(await page.locator(".error-summary a[href='#problems-root']").count()).toBeGreaterThan(0)
      expect(await page.getByLabel("Task").inputValue()).toBe("Inventory.")
      expect(await jobCount()).toBe(0)

      // A double click on Start job: one job.
      await fillRun({ task: "Write a report.", root: dirs.root, readOnly: dirs.src, outDir: dirs.out })
      await page.getByRole("button", { name: "Start job" }).dblclick()
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/)
      expect(await jobCount()).toBe(1)
    },
    BROWSER_TEST_MS
  )

  test(
    "the job page: timeline with times, tool calls expandable, trace, cost, outputs viewable as text only",
    async () => {
      const jobUrl = page.url()
      try {
        await page.locator("#job-status :is(.badge-ok, .badge-error)").waitFor({ timeout: 120_000 })
      } catch (e) {
        const rows = await portal.runtime.runPromise(
          Effect.flatMap(SqlClient, (sql) => sql`SELECT status, reason, message, started_at, finished_at FROM runtime.job`)
        )
        await portal.screenshot(page, "job-page-stuck")
        throw new Error(`${String(e)}\n${JSON.stringify(rows)}\n${await page.locator("main").innerHTML()}\n${portal.log.join("\n")}`)
      }
      const ended = (await page.locator("#job-status").textContent()) ?? ""
      if (!ended.includes("completed"))
        throw new Error(`the job ended ${ended}: ${await page.locator("main").textContent()} ${portal.log.join("\n")}`)
      // Live rows came from the server over SSE (the page opened while the job ran).
      const events = page.locator("#job-events")
      await expect(events.locator(".ev-message").last().textContent()).resolves.toContain(ANSWER)
      expect(await events.locator(".ev time").count()).toBeGreaterThan(2)
      const call = events.locator(".ev-call details").first()
      await call.locator("summary").click()
      await expect(call.locator("pre").textContent()).resolves.toContain('"path": "inventory.md"')
      // The final sections replaced the live ones: trace with nested spans, outputs, facts.
      await page.locator("#job-trace .spans-root > li").first().waitFor()
      expect(await page.locator("#job-trace .spans-root > li .spans li").count()).toBeGreaterThan(0)
      expect(await page.locator("#job-trace").textContent()).toContain("turn")
      expect(await page.locator("#job-duration").textContent()).toMatch(/\d/)
      await expect(page.locator("#job-tokens").textContent()).resolves.toBe("2200 / 80")
      expect(await page.locator("#job-live").textContent()).toBe("")

      // Output files: listed, viewable as plain text, downloadable; the hostile HTML never runs in our origin.
      await page.goto(jobUrl)
      const outputs = page.locator("#job-outputs")
      await expect(outputs.locator("li code").allTextContents()).resolves.toEqual(["inventory.md", "inventory.json"])
      const report = outputs.locator("li", { hasText: "inventory.md" })
      const viewHref = (await report.getByRole("link", { name: "View" }).getAttribute("href")) ?? ""
      const view = await page.request.get(viewHref)
      expect(view.status()).toBe(200)
      expect(view.headers()["content-type"]).toBe("text/plain; charset=utf-8")
      expect(view.headers()["x-content-type-options"]).toBe("nosniff")
      expect(view.headers()["content-security-policy"]).toContain("sandbox")
      expect(await view.text()).toBe(HOSTILE)
      // What was committed is shown, whatever the folder holds later: rewritten, or a link to a host file.
      await expect(outputs.textContent()).resolves.toMatch(/committed [0-9a-f]{12}\. View and Download show each file as committed/)
      writeFileSync(join(dirs.out, "report.md"), "rewritten after the job\n")
      expect(await (await page.request.get(viewHref)).text()).toBe(HOSTILE)
      rmSync(join(dirs.out, "report.md"))
      symlinkSync("/etc/passwd", join(dirs.out, "report.md"))
      expect(await (await page.request.get(viewHref)).text()).toBe(HOSTILE)
      const viewer = await context.newPage()
      await viewer.goto(viewHref)
      expect(await viewer.title()).not.toBe("pwned")
      expect(await viewer.locator("body").textContent()).toContain("<script>")
      await viewer.close()
      const download = await page.request.get((await report.getByRole("link", { name: "Download" }).getAttribute("href")) ?? "")
      expect(download.headers()["content-disposition"]).toStartWith('attachment; filename="inventory.md"')
      expect(download.headers()["content-type"]).toBe("application/octet-stream")
      // Only files the job reported, inside its outDir.
      const id = jobUrl.split("/").pop() ?? ""
      for (const path of ["../src/a.ts", "/etc/passwd", "a.ts"]) {
        expect((await page.request.get(`/jobs/${id}/output?path=${encodeURIComponent(path)}`)).status()).toBe(404)
      }
      await portal.screenshot(page, "job-page")
    },
    2 * BROWSER_TEST_MS
  )

  test(
    "re-run fills the form; abort asks first and records who aborted",
    async () => {
      await page.getByRole("link", { name: "Re-run" }).click()
      await page.waitForURL(/\/run\?from=/)
      expect(await page.getByLabel("Output folder").inputValue()).toBe(dirs.out)
      await page.getByRole("button", { name: "Start job" }).click()
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/)
      await page.locator("#job-status .badge-info").waitFor({ timeout: 60_000 })
      // The abort button is behind a confirmation.
      expect(await page.getByRole("button", { name: "Abort job" }).isVisible()).toBe(false)
      await page.locator("#job-actions summary").click()
      await page.getByRole("button", { name: "Abort job" }).click()
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/)
      await page.locator("#job-status .badge-error").waitFor({ timeout: 60_000 })
      await page.reload()
      await expect(page.locator("#job-aborted").textContent()).resolves.toContain("by manager")
      await expect(page.locator("#job-status").textContent()).resolves.toContain("aborted")
    },
    BROWSER_TEST_MS
  )

  test(
    "the jobs list: filters by status, pages with a cursor, refreshes itself",
    async () => {
      await page.goto("/jobs")
      expect(await page.locator("#jobs-rows tr[data-job]").count()).toBe(2)
      expect(await page.locator("#jobs-rows").getAttribute("hx-trigger")).toBe("every 5s")
      await page.getByLabel("Status").selectOption("completed")
      await page.getByRole("button", { name: "Filter" }).click()
      await page.waitForURL(/status=completed/)
      expect(await page.locator("#jobs-rows tr[data-job]").count()).toBe(1)
      await expect(page.locator("#jobs-rows").textContent()).resolves.toContain("completed")

      await page.goto("/jobs?limit=1")
      const first = await page.locator("#jobs-rows tr[data-job]").getAttribute("data-job")
      await page.getByRole("link", { name: "Older jobs" }).click()
      await page.waitForURL(/before=/)
      const second = await page.locator("#jobs-rows tr[data-job]").getAttribute("data-job")
      expect(second).not.toBe(first)
      expect(await page.locator("#jobs-rows tr[data-job]").count()).toBe(1)
      // A later page does not refresh itself (its rows would shift under the reader).
      expect(await page.locator("#jobs-rows").getAttribute("hx-trigger")).toBeNull()
      // htmx reports the refused run form's 400 (the first test) on the console; nothing else is expected.
      expect(
        consoleErrors.filter((e) => !/status of 400|Error Code 400 from \/agents\/(codebase-inventory|risk-quality)\/run/.test(e))
      ).toEqual([])
    },
    BROWSER_TEST_MS
  )
})
