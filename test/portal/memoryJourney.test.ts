/**
 * Projects → a project → Memory in headless Chromium: the review queue shows a learned note with the
 * diff of its last revision; the manager edits it before approving (a new revision, trust reviewed),
 * rejects another, filters all notes, reads the day's log, turns memory on, and resets only after
 * typing the project id. Agent-written text renders inert.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { MemoryStore } from "../../src/worker/memory/MemoryStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(BROWSER_TEST_MS)

let portal: Portal
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>
const JOB = "00000000-0000-4000-8000-0000000000b1"

const run = <A, E>(e: Effect.Effect<A, E, MemoryStore | Projects>) => portal.runtime.runPromise(e)
const save = (title: string, body: string) =>
  run(
    Effect.flatMap(MemoryStore, (m) =>
      m.save("webproj", { _tag: "Agent", jobId: JOB, agentId: "learner" }, { kind: "lesson", title, body, paths: [] })
    )
  )

beforeAll(async () => {
  portal = await startPortal()
  ;({ context, page, consoleErrors } = await portal.newPage())
  await run(Effect.orDie(Effect.flatMap(Projects, (p) => p.create({ id: "webproj", name: "Web project" }))))
  await save("Build cache", "Run the build once.\nThen it is cached.")
  await save("Build cache", "Run the build once.\nThen it is cached for a day.")
  await save("Bad idea", `Delete the lock file. </pre><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">`)
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

describe("the project memory page", () => {
  test("review queue: diff, edit before approving, reject; all notes; log; settings; reset with confirmation", async () => {
    await portal.signIn(page, MANAGER)
    await page.goto("/projects/webproj/memory")
    await expect(page.locator("h1").textContent()).resolves.toContain("Web project")
    await expect(page.locator("nav[aria-label=Project] [aria-current=page]").textContent()).resolves.toBe("Memory")
    const queue = page.locator("#review-queue li.note")
    expect(await queue.count()).toBe(2)
    const cache = queue.filter({ hasText: "Build cache" })
    await cache.locator("summary", { hasText: "Changes since revision 1" }).click()
    await expect(cache.locator("table.diff tr.add").textContent()).resolves.toContain("Then it is cached for a day.")
    await expect(cache.locator("table.diff tr.del").textContent()).resolves.toContain("Then it is cached.")
    // Agent-written markup stays text.
    expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined()
    await expect(queue.filter({ hasText: "Bad idea" }).locator("pre.note-body").textContent()).resolves.toContain("<script>")
    await portal.screenshot(page, "project-memory")

    await cache.locator("summary", { hasText: "Edit before approving" }).click()
    await cache.getByLabel("Body").fill("Run the build once; it is cached for a day.")
    await cache.getByRole("button", { name: "Save and approve" }).click()
    await page.waitForURL(/done=reviewed/)
    await expect(page.locator(".alert-ok").textContent()).resolves.toContain("The note was approved.")
    await queue.filter({ hasText: "Bad idea" }).getByRole("button", { name: "Reject" }).click()
    await page.waitForURL(/done=rejected/)
    expect(await page.locator("#review-queue li.note").count()).toBe(0)

    const notes = await run(Effect.flatMap(MemoryStore, (m) => m.list("webproj", {})))
    expect(Object.fromEntries(notes.map((n) => [n.title, [n.trust, n.body]]))).toEqual({
      "Build cache": ["reviewed", "Run the build once; it is cached for a day."],
      "Bad idea": ["rejected", expect.stringContaining("Delete the lock file.")]
    })

    // All notes, filtered.
    await page.locator("#all-notes select[name=trust]").selectOption("reviewed")
    await page.locator("#all-notes").getByRole("button", { name: "Filter" }).click()
    await page.waitForURL(/trust=reviewed/)
    await expect(page.locator("#all-notes li.note").allTextContents()).resolves.toEqual([expect.stringContaining("Build cache")])

    // The day's log.
    await expect(page.locator("#daily-log").textContent()).resolves.toContain("note.reviewed")

    // Settings.
    await page.getByLabel("Memory enabled for this project's agents").check()
    await page.getByRole("button", { name: "Save settings" }).click()
    await page.waitForURL(/done=settings/)
    expect((await run(Effect.flatMap(MemoryStore, (m) => m.settings("webproj")))).enabled).toBe(true)

    // Reset: a wrong confirmation changes nothing; the project id resets.
    await page.getByLabel(/Type the project id/).fill("something else")
    await page.getByRole("button", { name: "Reset memory" }).click()
    expect((await run(Effect.flatMap(MemoryStore, (m) => m.list("webproj", {})))).length).toBe(2)
    await page.goto("/projects/webproj/memory")
    await page.getByLabel(/Type the project id/).fill("webproj")
    await page.getByRole("button", { name: "Reset memory" }).click()
    await page.waitForURL(/done=reset/)
    expect(await run(Effect.flatMap(MemoryStore, (m) => m.list("webproj", {})))).toEqual([])
    await expect(page.locator("#daily-log").textContent()).resolves.toContain("memory.reset")
    // The one expected error: the refused reset (400).
    expect(consoleErrors).toEqual(["Failed to load resource: the server responded with a status of 400 (Bad Request)"])
  })
})
