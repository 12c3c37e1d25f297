/**
 * A second admin while a job runs, in headless Chromium, with no restart: the admin creates a user on
 * /users, grants the second permission on the user's page; the new user signs in, is an admin at once
 * (the Users page opens), changes their password on /account/password (their other session ends, this
 * one stays), and signs in with the new one. The job, started before and held by the model server, is
 * running throughout and completes afterwards on the same server.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { Access } from "../../src/access/Access.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { builtinAnswerTurn, builtinOutputsStep } from "../support/builtinOutputs.ts"
import { createJobDirs, type JobDirs } from "../support/jobChild.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal, type TestUser } from "./harness.ts"

setDefaultTimeout(60_000)

const SECOND: TestUser = { username: "second-admin", password: "the first password of two" }
const NEW_PASSWORD = "second admin's own password"

let portal: Portal
let model: ScriptedServer
let dirs: JobDirs
let releaseModel: () => void = () => undefined
let modelCalled: Promise<void>

/** Signs in on the sign-in page and waits to be let in (wherever sign-in lands). */
const signIn = async (page: Page, user: TestUser) => {
  await page.goto("/sign-in")
  await page.getByLabel("Username").fill(user.username)
  await page.getByLabel("Password").fill(user.password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.waitForURL((url) => url.pathname !== "/sign-in")
}

beforeAll(async () => {
  const gate = new Promise<void>((resolve) => (releaseModel = resolve))
  let called: () => void = () => undefined
  modelCalled = new Promise<void>((resolve) => (called = resolve))
  // The job's first model call waits for the gate: the job stays running until the journey is done.
  model = await startOpenAIServer([
    { kind: "fn", respond: async () => (called(), await gate, builtinOutputsStep("codebase-inventory")) },
    builtinAnswerTurn("codebase-inventory", "Inventory done after the admin changes.")
  ])
  dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  portal = await startPortal({ worker: true })
  await portal.runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* ProviderStore).create(
        {
          kind: "custom",
          id: "held",
          api: "openai-completions",
          baseUrl: model.baseUrl,
          apiKey: "sk-held-123456",
          models: [{ id: "m", contextWindow: 64000, maxTokens: 4096 }]
        },
        "test"
      )
      yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "held", modelId: "m" }, "test")
    })
  )
}, 120_000)

afterAll(async () => {
  releaseModel()
  await portal?.close()
  await model?.stop()
  dirs?.cleanup()
})

describe("a second admin while a job runs", () => {
  test(
    "created, granted, signing in and changing their password, with no restart",
    async () => {
      const started = performance.now()
      // A job, started through the API, running: its model call is held.
      const token = await portal.runtime.runPromise(Effect.flatMap(Access, (a) => a.issueToken(MANAGER.username, "journey")))
      const api = (path: string, init: RequestInit = {}) =>
        fetch(`${portal.baseUrl}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers }
        })
      const queued = await api("/api/jobs", {
        method: "POST",
        body: JSON.stringify({
          agent: "codebase-inventory",
          task: "Inventory it.",
          workspace: { root: dirs.root, readOnly: [dirs.src], outDir: dirs.out },
          limits: { timeoutSec: 120 }
        })
      })
      expect(queued.status).toBe(201)
      const jobId = ((await queued.json()) as { job: { id: string } }).job.id
      await modelCalled
      const status = async () => ((await (await api(`/api/jobs/${jobId}`)).json()) as { job: { status: string } }).job.status
      expect(await status()).toBe("running")

      // 1. The admin creates the user with one permission, then grants the other on the user's page.
      const admin = await portal.newPage()
      await signIn(admin.page, MANAGER)
      await admin.page.goto("/users")
      await admin.page.getByLabel("Username").fill(SECOND.username)
      await admin.page.getByLabel("Password").fill(SECOND.password)
      await admin.page.getByRole("checkbox", { name: /agents\.manage/ }).check()
      await admin.page.getByRole("button", { name: "Create user" }).click()
      await admin.page.waitForURL(/\/users\/second-admin\?added=second-admin$/)
      await expect(admin.page.locator(".alert-ok").textContent()).resolves.toContain("Added second-admin.")
      expect(await admin.page.getByRole("checkbox", { name: /agents\.manage/ }).isChecked()).toBe(true)
      expect(await admin.page.getByRole("checkbox", { name: /providers\.manage/ }).isChecked()).toBe(false)
      await admin.page.getByRole("checkbox", { name: /providers\.manage/ }).check()
      await admin.page.getByRole("button", { name: "Save permissions" }).click()
      await admin.page.waitForURL(/\/users\/second-admin\?updated=/)
      await expect(admin.page.locator(".alert-ok").textContent()).resolves.toContain("Saved the permissions of second-admin.")
      expect(await admin.page.getByRole("checkbox", { name: /providers\.manage/ }).isChecked()).toBe(true)
      await portal.screenshot(admin.page, "users-second-admin")
      expect(await status()).toBe("running")

      // 2. The second admin signs in twice (two browsers) and is an admin at once: the Users page opens.
      const second = await portal.newPage()
      const elsewhere = await portal.newPage()
      await signIn(second.page, SECOND)
      await signIn(elsewhere.page, SECOND)
      const users = await second.page.goto("/users")
      expect(users?.status()).toBe(200)
      await expect(second.page.locator("table.catalog").textContent()).resolves.toContain("second-admin")

      // 3. They change their password: the current one, the new one twice.
      await second.page.goto("/account")
      await second.page.getByRole("link", { name: "Change password" }).click()
      await second.page.waitForURL(/\/account\/password$/)
      await second.page.getByLabel("Current password").fill("not my password at all")
      await second.page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD)
      await second.page.getByLabel("New password again").fill(NEW_PASSWORD)
      await second.page.getByRole("button", { name: "Change password" }).click()
      await expect(second.page.locator(".error-summary").textContent()).resolves.toContain("is not your current password")
      await second.page.getByLabel("Current password").fill(SECOND.password)
      await second.page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD)
      await second.page.getByLabel("New password again").fill(NEW_PASSWORD)
      await second.page.getByRole("button", { name: "Change password" }).click()
      await second.page.waitForURL(/\/account\?updated=/)
      await expect(second.page.locator(".alert-ok").textContent()).resolves.toContain("Saved your password; your other sessions ended.")
      await portal.screenshot(second.page, "users-password-changed")
      // This session stays; the other browser's session ended.
      expect((await second.page.goto("/users"))?.status()).toBe(200)
      await elsewhere.page.goto("/users")
      await elsewhere.page.waitForURL(/\/sign-in\?next=/)

      // 4. The old password no longer signs in; the new one does.
      await elsewhere.page.getByLabel("Username").fill(SECOND.username)
      await elsewhere.page.getByLabel("Password").fill(SECOND.password)
      await elsewhere.page.getByRole("button", { name: "Sign in" }).click()
      // The refusal is a new page (the form posts): wait for it to be shown, then read it (a loaded machine is slow to hash).
      await elsewhere.page.locator(".alert-error").waitFor({ timeout: 45_000 })
      await expect(elsewhere.page.locator(".alert-error").textContent()).resolves.toContain("unknown user or wrong password")
      await signIn(elsewhere.page, { username: SECOND.username, password: NEW_PASSWORD })
      expect((await elsewhere.page.goto("/users"))?.status()).toBe(200)

      // 5. The job ran all along on this same server, and completes now.
      expect(await status()).toBe("running")
      releaseModel()
      await admin.page.goto(`/jobs/${jobId}`)
      await admin.page.locator("#job-status .badge-ok").waitFor({ timeout: 45_000 })
      expect(await status()).toBe("completed")
      // The refused attempts above are the only failed loads: the wrong current password (400), the old password (401).
      expect(admin.consoleErrors).toEqual([])
      expect(second.consoleErrors).toEqual(["Failed to load resource: the server responded with a status of 400 (Bad Request)"])
      expect(elsewhere.consoleErrors).toEqual(["Failed to load resource: the server responded with a status of 401 (Unauthorized)"])
      // No request failed on the server (its log holds every request, at info).
      expect(portal.log.filter((l) => l.includes("request failed") || l.includes('"level":"error"'))).toEqual([])
      for (const p of [admin, second, elsewhere]) await p.context.close()
      process.stderr.write(`second-admin journey: ${Math.round(performance.now() - started)} ms\n`)
    },
    BROWSER_TEST_MS
  )
})
