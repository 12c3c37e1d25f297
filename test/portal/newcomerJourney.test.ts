/**
 * A newcomer's first job, all in the portal, on a real `kintsugi serve` started on an empty data dir
 * (or a fresh PostgreSQL database when DATABASE_URL is set): the start says what it does and, when
 * ready, the URL, allowed hosts and where the admin password came from; sign in lands on Home, which
 * names the job roots; add a provider (a scripted OpenAI-compatible server on 127.0.0.1), bind an
 * agent, create a workspace from an uploaded .tar.gz, run the agent on it from the run form and watch
 * the job complete. No shell, no API call. Prints how long it took.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { randomBytes } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import type { Browser } from "playwright-core"
import { builtinAnswer, builtinOutputCalls } from "../support/builtinOutputs.ts"
import { createTarGz } from "../support/archives.ts"
import { adminStatement, withDatabase } from "../support/db.ts"
import { TEST_SANDBOX_MODE } from "../support/sandbox.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { startServe, type ServeProcess } from "../support/serveProcess.ts"
import { launchChromium } from "./launchChromium.ts"
import { ARTIFACTS, BROWSER_TEST_MS } from "./harness.ts"

setDefaultTimeout(600_000)

const SERVER = process.env["DATABASE_URL"] ?? ""
const ADMIN_PASSWORD = "newcomer journey admin password"
const ANSWER = "src/a.ts exports one constant, a."
/** Data-dir templates the servers of this test build and reuse (the first run on a machine runs initdb). */
const TEMPLATES = path.join(os.tmpdir(), `kintsugi-newcomer-templates-${process.getuid?.() ?? 0}`)

let base = ""
let jobRoot = ""
let databaseUrl = ""
let model: ScriptedServer
let serve: ServeProcess | undefined
let browser: Browser

beforeAll(async () => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-newcomer-")))
  jobRoot = path.join(base, "jobs")
  fs.mkdirSync(jobRoot)
  fs.mkdirSync(TEMPLATES, { recursive: true, mode: 0o700 })
  if (SERVER !== "") {
    const name = `kintsugi_newcomer_${randomBytes(6).toString("hex")}`
    await adminStatement(SERVER, `CREATE DATABASE ${name}`)
    databaseUrl = withDatabase(SERVER, name)
  }
  model = await startOpenAIServer([
    // codebase-inventory reads the uploaded source, writes its contracted files, then answers.
    {
      kind: "turn",
      toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }, ...builtinOutputCalls("codebase-inventory")],
      usage: { input: 1000, output: 50 }
    },
    { kind: "turn", text: builtinAnswer("codebase-inventory", ANSWER), usage: { input: 1200, output: 30 } }
  ])
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await serve?.stop()
  await model?.stop()
  if (databaseUrl !== "") await adminStatement(SERVER, `DROP DATABASE IF EXISTS ${new URL(databaseUrl).pathname.slice(1)} WITH (FORCE)`)
  fs.rmSync(base, { recursive: true, force: true })
})

describe("a newcomer's first job, in the portal only", () => {
  test(
    "fresh install → sign in → Home → provider → binding → workspace from an upload → run → completed",
    async () => {
      const began = performance.now()
      serve = await startServe({
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        HOME: base,
        KINTSUGI_DATA_DIR: path.join(base, "state"),
        KINTSUGI_DB_TEMPLATES: TEMPLATES,
        KINTSUGI_JOB_ROOTS: jobRoot,
        KINTSUGI_ADMIN_PASSWORD: ADMIN_PASSWORD,
        KINTSUGI_SANDBOX: process.env["KINTSUGI_SANDBOX"] ?? TEST_SANDBOX_MODE,
        ...(process.env["KINTSUGI_ALLOW_UNCONFINED_ROOT"] === undefined
          ? {}
          : { KINTSUGI_ALLOW_UNCONFINED_ROOT: process.env["KINTSUGI_ALLOW_UNCONFINED_ROOT"] }),
        NO_PROXY: "127.0.0.1,localhost",
        ...(databaseUrl === "" ? {} : { DATABASE_URL: databaseUrl })
      })
      // 1. The start said what it was doing, then where to go and how to sign in.
      const out = await serve.waitFor("the ready line", (t) => t.includes("admin password:"))
      const started = performance.now()
      if (databaseUrl === "")
        expect(out).toMatch(
          /^kintsugi: role all: [^\n]*; database: creating the embedded database in \S+\/state\/data (from the template|\(initdb)/
        )
      else {
        expect(out).toMatch(/^kintsugi: role all: /)
        expect(out).toContain(
          `; database: connecting to PostgreSQL at 127.0.0.1:5432${new URL(databaseUrl).pathname} and applying migrations…`
        )
      }
      expect(out).toMatch(/kintsugi: database ready \(\d+\.\d s\); job children: /)
      expect(out).toContain(
        `kintsugi: serving on ${serve.origin}/ (allowed hosts: localhost,127.0.0.1,[::1],127.0.0.1); admin password: KINTSUGI_ADMIN_PASSWORD (the first admin, admin, was created with it)`
      )

      const context = await browser.newContext({ baseURL: serve.origin, viewport: { width: 1280, height: 900 } })
      const page = await context.newPage()
      const consoleErrors: Array<string> = []
      page.on("console", (m) => void (m.type() === "error" && consoleErrors.push(m.text())))
      page.on("pageerror", (e) => consoleErrors.push(e.message))

      // 2. Sign in: Home, in the navigation, with the job roots and the steps to take.
      await page.goto("/")
      await page.waitForURL(/\/sign-in$/)
      await page.getByLabel("Username").fill("admin")
      await page.getByLabel("Password").fill(ADMIN_PASSWORD)
      await page.getByRole("button", { name: "Sign in" }).click()
      await page.waitForURL(/\/home$/)
      await expect(page.locator("h1").textContent()).resolves.toBe("Home")
      await expect(
        page.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Home" }).getAttribute("aria-current")
      ).resolves.toBe("page")
      await expect(page.locator("[data-job-roots]").first().textContent()).resolves.toContain(jobRoot)
      await expect(page.locator(".checklist").textContent()).resolves.toContain("Add an LLM provider")

      // 3. A provider: the scripted OpenAI-compatible server on 127.0.0.1, model "m".
      await page.getByRole("link", { name: "Add a provider" }).click()
      await page.waitForURL(/\/providers\/-\/new$/)
      await page.getByLabel("Provider id").fill("scripted")
      await page.getByLabel("Base URL").fill(model.baseUrl)
      await page.getByLabel("API key").fill("sk-newcomer-key")
      await page.getByLabel("Model id").fill("m")
      await page.getByRole("button", { name: "Add provider" }).click()
      await page.waitForURL(/\/providers\?added=scripted$/)

      // 4. Bind the agent to it, from Home's next step.
      await page.getByRole("link", { name: "Home" }).click()
      await page.getByRole("link", { name: "Choose an agent" }).click()
      await page.getByRole("link", { name: "codebase-inventory" }).click()
      await page.getByRole("link", { name: "Model" }).click()
      await page.waitForURL(/\/agents\/codebase-inventory\/binding$/)
      await page.getByRole("button", { name: "Save binding" }).click()
      await page.locator(".alert-ok", { hasText: "Bound to scripted/m." }).waitFor()

      // 5. A workspace from an uploaded .tar.gz (its one top folder removed).
      await page.getByRole("link", { name: "Home" }).click()
      await page.getByRole("link", { name: "New workspace" }).first().click()
      await page.waitForURL(/\/workspaces\/-\/new$/)
      await expect(page.getByLabel("Job root").inputValue()).resolves.toBe(jobRoot)
      await page.getByLabel("Folder name").fill("shop")
      await page.getByLabel("Upload an archive").check()
      const archive = createTarGz([
        { name: "shop-main/", type: "5" },
        { name: "shop-main/a.ts", content: "export const a = 1\n" },
        { name: "shop-main/README.md", content: "# Shop\n" }
      ])
      await page
        .getByLabel("Archive (.zip or .tar.gz)")
        .setInputFiles({ name: "shop-main.tar.gz", mimeType: "application/gzip", buffer: Buffer.from(archive) })
      await page.getByRole("button", { name: "Create workspace" }).click()
      await page.waitForURL(/\/workspaces\?added=shop$/)
      await expect(page.locator("[data-workspace=shop]").textContent()).resolves.toContain(path.join(jobRoot, "shop", "src"))
      await page.screenshot({ path: path.join(ARTIFACTS, "newcomer-workspaces.png"), fullPage: true })

      // 6. Run the agent on it: the run form offers the workspace and fills in its folders.
      await page.goto("/agents/codebase-inventory")
      await page.getByRole("link", { name: "Run a job" }).click()
      await page.waitForURL(/\/agents\/codebase-inventory\/run$/)
      await expect(page.locator("#run-places [data-job-roots]").textContent()).resolves.toContain(jobRoot)
      await page.getByLabel("Workspace", { exact: true }).selectOption({ label: "shop" })
      await page.getByRole("button", { name: "Use this workspace" }).click()
      await page.waitForURL(/\?workspace=/)
      await expect(page.getByLabel("Workspace root").inputValue()).resolves.toBe(path.join(jobRoot, "shop"))
      await expect(page.getByLabel("Read-only source folders").inputValue()).resolves.toBe(path.join(jobRoot, "shop", "src"))
      await expect(page.getByLabel("Output folder").inputValue()).resolves.toBe(path.join(jobRoot, "shop", "out"))
      await page.getByLabel("Task").fill("What does src/a.ts export?")
      await page.getByRole("button", { name: "Start job" }).click()
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/)

      // 7. It completes, with the answer; Home now says jobs can run.
      await page.locator("#job-status .badge-ok").waitFor({ timeout: 120_000 })
      await expect(page.locator("#job-status").textContent()).resolves.toContain("completed")
      await expect(page.locator("#job-events .ev-completed").textContent()).resolves.toContain(ANSWER)
      const finished = performance.now()
      await page.screenshot({ path: path.join(ARTIFACTS, "newcomer-job.png"), fullPage: true })
      expect(fs.readFileSync(path.join(jobRoot, "shop", "out", "inventory.md"), "utf8")).toBe("# Report\n")
      expect(model.requests.length).toBe(2)
      await page.goto("/home")
      await expect(page.locator(".page-title").textContent()).resolves.toContain("Jobs can run here.")
      expect(consoleErrors).toEqual([])
      await context.close()
      process.stderr.write(
        `newcomer journey (${databaseUrl === "" ? "embedded database" : "PostgreSQL"}): ${Math.round(finished - began)} ms from an empty data dir to a completed job ` +
          `(start-up ${Math.round(started - began)} ms, portal ${Math.round(finished - started)} ms)\n`
      )
    },
    BROWSER_TEST_MS * 6
  )
})
