/**
 * The live job page in headless Chromium, fed by the test instead of a worker: opened on a queued job,
 * it shows the rows the server renders as the events arrive (htmx SSE extension — there is no
 * JavaScript renderer any more), message deltas joined in one row, model text as text, the final
 * sections (status, facts, outputs, trace) swapped in when the job ends, and the stream closed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { JobBus } from "../../src/worker/JobBus.ts"
import { JobStore, type JobInput } from "../../src/worker/JobStore.ts"
import { linkSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { createJobDirs } from "../support/jobChild.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(60_000)

let portal: Portal
let context: BrowserContext
let page: Page
let consoleErrors: Array<string>

const INPUT: JobInput = {
  agent: "codebase-inventory",
  task: "t",
  workspace: { root: "/r", readOnly: ["/r/src"], outDir: "/r/out" },
  limits: { timeoutSec: 60 }
}
const at = () => new Date().toISOString()
const store = <A>(f: (s: JobStore["Type"]) => Effect.Effect<A, unknown>) =>
  portal.runtime.runPromise(Effect.flatMap(JobStore, f) as Effect.Effect<A>)
const append = (id: string, e: JobEvent) =>
  portal.runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* JobStore).appendEvent(id, e)
      yield* (yield* JobBus).publish({ _tag: "Events", jobId: id })
    })
  )

beforeAll(async () => {
  portal = await startPortal()
  ;({ context, page, consoleErrors } = await portal.newPage())
  await portal.signIn(page, MANAGER)
}, 120_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

describe("the live job page", () => {
  test(
    "queued, then rows as the events arrive, then the final sections",
    async () => {
      const job = await store((s) => s.enqueue(INPUT, MANAGER.username))
      const opened = page.waitForEvent("response", (r) => r.url().includes(`/jobs/${job.id}/stream`))
      await page.goto(`/jobs/${job.id}`)
      expect((await opened).status()).toBe(200)
      await expect(page.locator("#job-started").textContent()).resolves.toContain("waiting for a worker")

      await store((s) => s.claim("w", 60_000, job.id))
      await append(job.id, {
        type: "job.started",
        seq: 0,
        at: at(),
        runtimeVersion: "t",
        agentId: "codebase-inventory",
        agentVersion: 1,
        metadata: {}
      })
      await page.locator("#job-status .badge-info").waitFor()
      await append(job.id, { type: "message.delta", seq: 1, at: at(), text: "Hel" })
      await append(job.id, { type: "message.delta", seq: 2, at: at(), text: "lo <img src=x onerror=alert(1)>" })
      await append(job.id, {
        type: "tool.call",
        seq: 3,
        at: at(),
        callId: "c",
        tool: "write",
        input: { path: "r.md", content: "x".repeat(300) },
        allowed: true
      })
      await append(job.id, {
        type: "tool.result",
        seq: 4,
        at: at(),
        callId: "c",
        tool: "write",
        success: true,
        summary: "wrote r.md",
        durationMs: 12
      })
      await append(job.id, { type: "output", seq: 5, at: at(), path: "r.md" })
      await append(job.id, {
        type: "usage",
        seq: 6,
        at: at(),
        model: "p/m",
        inputTokens: 10,
        outputTokens: 5,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd: 0.001,
        turns: 1,
        compactions: 0,
        contextPeakPercent: 1,
        compactionSummaries: 0
      })
      const start = at()
      await append(job.id, {
        type: "span",
        seq: 7,
        at: at(),
        name: "kintsugi.turn",
        spanId: "t1",
        parentSpanId: "j1",
        start,
        durationMs: 5,
        status: "ok",
        attributes: { turn: 1 }
      })
      await append(job.id, {
        type: "span",
        seq: 8,
        at: at(),
        name: "kintsugi.job",
        spanId: "j1",
        start,
        durationMs: 9,
        status: "ok",
        attributes: { agentId: "codebase-inventory" }
      })
      await append(job.id, { type: "job.completed", seq: 9, at: at(), summary: "done" })
      // As the worker does: the terminal event first, the row settled later (after committing outputs).
      await page.locator("#job-events .ev-completed").waitFor()
      await store((s) => s.settle(job.id, { status: "completed", summary: "done" }, "no outputs"))
      await portal.runtime.runPromise(Effect.flatMap(JobBus, (b) => b.publish({ _tag: "Events", jobId: job.id })))

      await page.locator("#job-status .badge-ok").waitFor()
      const events = page.locator("#job-events")
      // One message row for both deltas; the model's markup is text.
      expect(await events.locator(".ev-message").count()).toBe(1)
      await expect(events.locator(".ev-message .ev-text").textContent()).resolves.toBe("Hello <img src=x onerror=alert(1)>")
      expect(await events.locator(".ev-message img").count()).toBe(0)
      expect(await events.locator(".ev-call details").count()).toBe(1)
      expect(await events.locator(".ev").count()).toBe(6)
      await expect(page.locator("#job-cost").textContent()).resolves.toBe("$0.001000")
      await expect(page.locator("#job-outputs li code").textContent()).resolves.toBe("r.md")
      expect(await page.locator("#job-trace .spans-root > li .spans > li").count()).toBe(1)
      expect(await page.locator("#job-live").textContent()).toBe("")
      await expect(page.locator("#job-finished").textContent()).resolves.toContain("UTC")
      expect(await page.locator("#job-actions form").count()).toBe(0)
      expect(consoleErrors).toEqual([])
    },
    BROWSER_TEST_MS
  )

  test(
    "output files: only reported paths, inside outDir, no symlink or hard link out of it, never served as HTML",
    async () => {
      const dirs = createJobDirs({ "secret.txt": "not an output\n" })
      writeFileSync(join(dirs.out, "ok.html"), "<script>document.title='pwned'</script>")
      writeFileSync(join(dirs.out, "bin.dat"), new Uint8Array([0xff, 0xfe, 0x00, 0x01]))
      symlinkSync(join(dirs.src, "secret.txt"), join(dirs.out, "link.txt"))
      linkSync(join(dirs.src, "secret.txt"), join(dirs.out, "hard.txt"))
      mkdirSync(join(dirs.out, "dir"))
      writeFileSync(join(dirs.out, "unreported.txt"), "x")
      const job = await store((s) =>
        s.enqueue({ ...INPUT, workspace: { root: dirs.root, readOnly: [dirs.src], outDir: dirs.out } }, MANAGER.username)
      )
      await store((s) => s.claim("w", 60_000, job.id))
      let seq = 0
      for (const path of ["ok.html", "bin.dat", "link.txt", "hard.txt", "dir", "../src/secret.txt"])
        await append(job.id, { type: "output", seq: seq++, at: at(), path })
      const get = (path: string, download = false) =>
        page.request.get(`/jobs/${job.id}/output?path=${encodeURIComponent(path)}${download ? "&download=1" : ""}`)
      const html = await get("ok.html")
      expect(html.status()).toBe(200)
      expect(html.headers()["content-type"]).toBe("text/plain; charset=utf-8")
      expect(html.headers()["content-disposition"]).toStartWith("inline;")
      expect(html.headers()["x-content-type-options"]).toBe("nosniff")
      expect(html.headers()["content-security-policy"]).toBe("default-src 'none'; sandbox")
      const binary = await get("bin.dat")
      expect(binary.headers()["content-type"]).toBe("application/octet-stream")
      expect(binary.headers()["content-disposition"]).toStartWith('attachment; filename="bin.dat"')
      for (const path of ["link.txt", "hard.txt", "dir", "../src/secret.txt", "unreported.txt", "/etc/passwd"]) {
        const r = await get(path)
        expect({ path, status: r.status() }).toEqual({ path, status: 404 })
        expect(await r.text()).not.toContain("not an output")
      }
      dirs.cleanup()
    },
    BROWSER_TEST_MS
  )
})
