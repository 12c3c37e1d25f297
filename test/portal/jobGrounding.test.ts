/**
 * The job page's grounding section in headless Chromium: the counts, each ungrounded or
 * unknown citation with a link to its place in the output (a numbered view, the cited line marked),
 * and model-written paths shown as text, never markup.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { JobStore, type JobInput } from "../../src/worker/JobStore.ts"
import { createJobDirs } from "../support/jobChild.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(60_000)

let portal: Portal
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>

const at = () => new Date().toISOString()
const store = <A>(f: (s: JobStore["Type"]) => Effect.Effect<A, unknown>) =>
  portal.runtime.runPromise(Effect.flatMap(JobStore, f) as Effect.Effect<A>)

beforeAll(async () => {
  portal = await startPortal()
  ;({ context, page, consoleErrors } = await portal.newPage())
  await portal.signIn(page, MANAGER)
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

describe("the job page's grounding section", () => {
  test(
    "counts, and each ungrounded citation linked to its line in the output",
    async () => {
      const dirs = createJobDirs({ "app.ts": "a\nb\nc\n" })
      writeFileSync(join(dirs.out, "report.md"), "# Report\n\n- a at src/app.ts:1\n- z at src/app.ts:9\n")
      const input: JobInput = {
        agent: "codebase-inventory",
        task: "t",
        workspace: { root: dirs.root, readOnly: [dirs.src], outDir: dirs.out },
        limits: { timeoutSec: 60 }
      }
      const job = await store((s) => s.enqueue(input, MANAGER.username))
      await store((s) => s.claim("w", 60_000, job.id))
      const events: Array<JobEvent> = [
        { type: "job.started", seq: 0, at: at(), runtimeVersion: "t", agentId: "codebase-inventory", agentVersion: 1, metadata: {} },
        { type: "output", seq: 1, at: at(), path: "report.md" },
        {
          type: "grounding",
          seq: 2,
          at: at(),
          grounded: 1,
          ungrounded: 1,
          unknown: 1,
          required: false,
          citations: [
            { status: "ungrounded", path: "src/app.ts", firstLine: 9, lastLine: 9, file: "report.md", at: 4 },
            { status: "unknown", path: "<b>x</b>.ts", firstLine: 2, lastLine: 2, file: null, at: 1 },
            { status: "grounded", path: "src/app.ts", firstLine: 1, lastLine: 1, file: "report.md", at: 3 }
          ]
        },
        { type: "job.completed", seq: 3, at: at(), summary: "see <b>x</b>.ts:2" }
      ]
      for (const e of events) await store((s) => s.appendEvent(job.id, e))
      await store((s) => s.settle(job.id, { status: "completed", summary: "see <b>x</b>.ts:2" }, "no outputs"))

      await page.goto(`/jobs/${job.id}`)
      const section = page.locator("#job-grounding")
      await expect(section.locator("#grounding-counts").textContent()).resolves.toBe("1 grounded · 1 ungrounded · 1 unknown path")
      const items = section.locator("li")
      expect(await items.count()).toBe(2)
      await expect(items.nth(0).textContent()).resolves.toContain("src/app.ts:9 never shown to the model")
      await expect(items.nth(1).textContent()).resolves.toContain("<b>x</b>.ts:2 names no readable file — in the summary, line 1")
      expect(await section.locator("b").count()).toBe(0)

      const link = items.nth(0).locator("a")
      await expect(link.textContent()).resolves.toBe("report.md line 4")
      const href = (await link.getAttribute("href")) ?? ""
      expect(href).toContain("line=4#L4")
      await page.goto(href)
      const cited = page.locator("li.cited")
      await expect(cited.getAttribute("id")).resolves.toBe("L4")
      await expect(cited.textContent()).resolves.toBe("- z at src/app.ts:9")
      expect(consoleErrors).toEqual([])
    },
    BROWSER_TEST_MS
  )
})
