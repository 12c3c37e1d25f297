/**
 * The portal under test: the app over a fresh test database, served by Bun.serve on 127.0.0.1:0,
 * a manager and a reader, and headless Chromium through playwright-core (Debian's when present, else
 * the one `@sparticuz/chromium` ships: `launchChromium.ts`). The browser tests never skip.
 */
import { Effect } from "effect"
import { mkdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { Access, type Permission } from "../../src/access/Access.ts"
import type { makeApp } from "../../src/http/app.ts"
import { listen } from "../../src/http/serve.ts"
import { makeTestApp, makeTestAppRuntime, type TestRuntime } from "../support/testApp.ts"
import { launchChromium } from "./launchChromium.ts"

/** Per-test timeout of the browser tests (a 2-core CI machine, a real browser, a database). */
export const BROWSER_TEST_MS = 90_000

export const ARTIFACTS = join(import.meta.dir, "..", "..", "test-artifacts")

export interface TestUser {
  readonly username: string
  readonly password: string
}
export const MANAGER: TestUser = { username: "manager", password: "correct horse battery staple" }
export const READER: TestUser = { username: "reader", password: "correct horse battery staple" }

export type AppRuntime = TestRuntime

export interface Portal {
  readonly baseUrl: string
  readonly runtime: AppRuntime
  readonly app: ReturnType<typeof makeApp>
  /** Lines the app logged (defects). */
  readonly log: ReadonlyArray<string>
  readonly browser: Browser
  /** A fresh browser context (own cookies) and page; console errors and CSP reports are collected. */
  readonly newPage: () => Promise<{ readonly context: BrowserContext; readonly page: Page; readonly consoleErrors: Array<string> }>
  readonly signIn: (page: Page, user: TestUser) => Promise<void>
  /** Saves test-artifacts/<name>.png: the whole page, or only the viewport. */
  readonly screenshot: (page: Page, name: string, fullPage?: boolean) => Promise<string>
  readonly close: () => Promise<void>
}

export const addUser = (runtime: AppRuntime, user: TestUser, permissions: ReadonlyArray<Permission>) =>
  runtime.runPromise(Effect.flatMap(Access, (a) => a.addUser(user.username, user.password, permissions)))

/** The app runtime over a fresh test database, with a throwaway secret key (never the data dir's key file). */
/** The manager and the reader, each signed in: their session tokens and CSRF tokens by name. */
export const signInTestUsers = async (runtime: AppRuntime): Promise<Record<"manager" | "reader", { cookie: string; csrf: string }>> => {
  await addUser(runtime, MANAGER, ["agents.manage", "providers.manage"])
  await addUser(runtime, READER, [])
  const signIn = async (user: TestUser) => {
    const s = await runtime.runPromise(Effect.flatMap(Access, (a) => a.signIn(user.username, user.password)))
    return { cookie: s.token, csrf: s.principal.csrfToken ?? "" }
  }
  return { manager: await signIn(MANAGER), reader: await signIn(READER) }
}

export const makeTestRuntime = (worker?: { readonly log: (line: string) => void }) =>
  makeTestAppRuntime(worker === undefined ? {} : { worker })

/** `worker`: run the job workers in the app's runtime (jobs started in the portal then run). */
export const startPortal = async (options: { readonly worker?: boolean } = {}): Promise<Portal> => {
  const browser = await launchChromium()
  const log: Array<string> = []
  const { runtime, app } = await makeTestApp({
    ...(options.worker === true ? { worker: { log: (line: string) => log.push(line) } } : {}),
    appLog: (line) => log.push(line)
  })
  await addUser(runtime, MANAGER, ["agents.manage", "providers.manage"])
  await addUser(runtime, READER, [])
  const server = listen(app, { hostname: "127.0.0.1", port: 0 })
  const baseUrl = `http://127.0.0.1:${server.port}`
  mkdirSync(ARTIFACTS, { recursive: true })

  return {
    baseUrl,
    runtime,
    app,
    log,
    browser,
    newPage: async () => {
      const context = await browser.newContext({ baseURL: baseUrl, viewport: { width: 1280, height: 900 }, acceptDownloads: true })
      const page = await context.newPage()
      const consoleErrors: Array<string> = []
      page.on("console", (m) => {
        if (m.type() === "error") consoleErrors.push(m.text())
      })
      page.on("pageerror", (e) => consoleErrors.push(e.message))
      return { context, page, consoleErrors }
    },
    signIn: async (page, user) => {
      await page.goto("/sign-in")
      await page.getByLabel("Username").fill(user.username)
      await page.getByLabel("Password").fill(user.password)
      await page.getByRole("button", { name: "Sign in" }).click()
      await page.waitForURL(/\/home$/)
    },
    screenshot: async (page, name, fullPage = true) => {
      const path = join(ARTIFACTS, `${name}.png`)
      await page.screenshot({ path, fullPage })
      return path
    },
    close: async () => {
      await browser.close()
      await server.stop(true)
      await runtime.dispose()
    }
  }
}

const AXE = readFileSync(Bun.fileURLToPath(import.meta.resolve("axe-core/axe.min.js")), "utf8")

export interface AxeViolation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<string>; readonly failureSummary?: string }>
}

/** axe-core's WCAG 2.x A/AA violations of the page as it is now (the context must bypass the CSP to inject it). */
export const runAxe = async (page: Page): Promise<ReadonlyArray<AxeViolation>> => {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(AXE)
  return page.evaluate(`axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"] }, resultTypes: ["violations"] })
    .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target, failureSummary: n.failureSummary })) })))`)
}
