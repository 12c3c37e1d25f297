/**
 * The thinking level a job gets, in headless Chromium with the worker in the app and a scripted model server:
 * the agent asks for `high`, its binding for `low`. The "Job definition" tab shows the bound model and
 * `low` (the binding wins), the run form says the same, and a job started from the form records it:
 * the job's model, the job span's thinking, and the `reasoning_effort` the model server received.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { createJobDirs, MODEL_PRICES, type JobDirs } from "../support/jobChild.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { BROWSER_TEST_MS, MANAGER, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(120_000)

// A built-in agent whose front matter says `thinking: high`.
const AGENT = "architecture-map"

let portal: Portal
let server: ScriptedServer
let dirs: JobDirs
let context: BrowserContext
let page: Page

type Services = Bindings | ProviderStore | JobStore
const run = <A, E>(effect: Effect.Effect<A, E, Services>) => portal.runtime.runPromise(effect as Effect.Effect<A, E, never>)

beforeAll(async () => {
  server = await startOpenAIServer([{ kind: "turn", text: "Mapped.", usage: { input: 100, output: 10 } }])
  dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  portal = await startPortal({ worker: true })
  await run(
    Effect.gen(function* () {
      yield* (yield* ProviderStore).create(
        {
          kind: "custom",
          id: "scripted",
          api: "openai-completions",
          baseUrl: server.baseUrl,
          apiKey: "sk-thinking",
          models: [
            {
              id: "m",
              contextWindow: 128_000,
              maxTokens: 8192,
              reasoning: true,
              thinkingLevels: ["off", "low", "medium", "high"],
              cost: MODEL_PRICES
            }
          ]
        },
        "setup"
      )
      yield* (yield* Bindings).set(AGENT, "", { providerId: "scripted", modelId: "m", thinking: "low" }, "setup")
    })
  )
  ;({ context, page } = await portal.newPage())
  await portal.signIn(page, MANAGER)
}, 240_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
  await server?.stop()
  dirs?.cleanup()
})

const fact = (term: string) => page.locator("#job-model dt", { hasText: new RegExp(`^${term}$`) }).locator("xpath=following-sibling::dd[1]")

describe("thinking: one rule, shown where it is decided", () => {
  test(
    "agent high, binding low: the Job definition tab shows the model and low, and a started job records the same",
    async () => {
      await page.goto(`/agents/${AGENT}/definition`)
      await expect(page.locator("#job-model").textContent()).resolves.toContain("scripted / m")
      await expect(fact("thinking requested").textContent()).resolves.toContain("low")
      await expect(fact("thinking requested").textContent()).resolves.toContain("the binding's level, which overrides the agent's")
      await expect(fact("thinking the job gets").locator("strong").textContent()).resolves.toBe("low")
      // The agent's own default is still shown as the agent's, not as what a job gets.
      await expect(
        page.locator("dt", { hasText: "thinking (the agent's default)" }).locator("xpath=following-sibling::dd[1]").textContent()
      ).resolves.toBe("high")

      await page.getByRole("link", { name: "Run a job" }).click()
      await expect(page.locator("#run-model-name").textContent()).resolves.toBe("scripted/m")
      await expect(page.locator("#run-thinking").textContent()).resolves.toBe("low")
      await page.getByLabel("Task").fill("Map the architecture.")
      await page.getByLabel("Workspace root").fill(dirs.root)
      await page.getByLabel("Read-only source folders").fill(dirs.src)
      await page.getByLabel("Output folder").fill(dirs.out)
      await page.getByRole("button", { name: "Start job" }).click()
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/)
      const jobId = page.url().split("/").pop() ?? ""
      await page.locator("#job-status :is(.badge-ok, .badge-error)").waitFor({ timeout: 120_000 })

      const job = await run(Effect.flatMap(JobStore, (s) => s.get(jobId)))
      expect(job.model).toBe("scripted/m")
      const events: ReadonlyArray<JobEvent> = await run(Effect.flatMap(JobStore, (s) => s.events(jobId, 0)))
      const span = events.find((e) => e.type === "span" && e.name === "kintsugi.job")
      expect(span?.type === "span" ? span.attributes : {}).toMatchObject({
        model: "scripted/m",
        "thinking.requested": "low",
        "thinking.effective": "low",
        "thinking.clamped": "none"
      })
      const chat = server.requests.find((r) => r.method === "POST")
      expect((chat?.body as Record<string, unknown> | undefined)?.["reasoning_effort"]).toBe("low")
    },
    BROWSER_TEST_MS
  )
})
