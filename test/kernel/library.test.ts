/**
 * docs/kernel.md "Use the kernel as a library", as a test: an orchestrator composes `KernelLive`, runs
 * two jobs concurrently, consumes their `Stream<JobEvent>`s and stops one. Imports only package exports.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Fiber, Option, Stream } from "effect"
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentRuntime, type JobEvent, type JobSpec } from "kintsugi-runtime/contract"
import { KernelLive, RUNTIME_VERSION } from "kintsugi-runtime/kernel"
import { startOpenAIServer, type RecordedRequest, type ScriptedServer, type Step } from "kintsugi-runtime/testing"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

// ---- the example in docs/kernel.md, verbatim from here to "end of example" ----

/** Runs `review` and `survey` side by side; once `review` has finished, `survey` is no longer needed. */
const orchestrate = (review: JobSpec, survey: JobSpec, log: (job: string, event: JobEvent) => void) =>
  Effect.scoped(
    Effect.gen(function* () {
      const runtime = yield* AgentRuntime
      const run = (name: string, spec: JobSpec) =>
        Effect.gen(function* () {
          // The job lives in this scope: closing it, or interrupting the fiber awaiting `result`, aborts it.
          const handle = yield* runtime.start(spec)
          const watching = yield* Effect.fork(Stream.runLast(Stream.tap(handle.events, (event) => Effect.sync(() => log(name, event)))))
          const result = yield* Effect.fork(handle.result)
          return { watching, result }
        })
      const [a, b] = yield* Effect.all([run("review", review), run("survey", survey)], { concurrency: 2 })
      const reviewed = yield* Fiber.join(a.result)
      // Interrupting the fiber that awaits the survey aborts the job itself; this returns once it has ended.
      yield* Fiber.interrupt(b.result)
      // Its event stream still ends with the terminal event: `job.failed` with reason `aborted`.
      const surveyed = Option.getOrUndefined(yield* Fiber.join(b.watching))
      return { reviewed, surveyed }
    })
  )

// ---- end of example ----

const job = (root: string, task: string): JobSpec => ({
  agent: { id: "reviewer", version: 1, instructions: "Read what you are asked to read.", tools: ["read", "ls", "grep", "find"] },
  task,
  model: { provider: "scripted", id: "scripted-model" },
  workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
  limits: { timeoutSec: 30, idleTimeoutSec: 0 }
})

const isSurvey = (req: RecordedRequest) => req.rawBody.includes("Survey the tree")
const sawToolResult = (req: RecordedRequest) => req.rawBody.includes('"role":"tool"')

test("two concurrent jobs through the package exports: one completes, the other is stopped mid model call", async () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-lib-")))
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  writeFileSync(join(root, "src", "app.ts"), "export const app = 1\nexport const main = () => app\n")
  let surveyCalled: () => void = () => {}
  const surveyInFlight = new Promise<void>((resolve) => (surveyCalled = resolve))
  // One scripted model for both jobs, answering by the request: the survey's call never ends, and the
  // review's last answer waits until that call is in flight, so the two jobs really overlap.
  const route: Step = {
    kind: "fn",
    respond: async (req) => {
      if (isSurvey(req)) {
        surveyCalled()
        return { kind: "stall" }
      }
      if (!sawToolResult(req)) return { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/app.ts" } }] }
      await surveyInFlight
      return { kind: "turn", text: "app.ts exports app and main." }
    }
  }
  const server: ScriptedServer = await startOpenAIServer([route, route, route])
  cleanups.push(
    () => server.stop(),
    () => rmSync(root, { recursive: true, force: true })
  )
  const layer = KernelLive({
    providers: [
      {
        id: "scripted",
        api: "openai-completions",
        baseUrl: server.baseUrl,
        apiKey: "sk-library-test",
        models: [{ id: "scripted-model", contextWindow: 128_000, maxTokens: 8_192 }]
      }
    ]
  })
  const seen: Record<string, Array<JobEvent>> = { review: [], survey: [] }
  const { reviewed, surveyed } = await Effect.runPromise(
    orchestrate(job(root, "What does src/app.ts export?"), job(root, "Survey the tree."), (name, event) => {
      seen[name]?.push(event)
    }).pipe(Effect.provide(layer))
  )
  expect(reviewed).toEqual({ _tag: "Completed", summary: "app.ts exports app and main." })
  expect(surveyed).toMatchObject({ type: "job.failed", reason: "aborted" })
  expect(server.requests.filter(isSurvey)).toHaveLength(1)
  expect(server.requests.filter((r) => !isSurvey(r))).toHaveLength(2)
  const review = seen["review"] ?? []
  const survey = seen["survey"] ?? []
  expect(review[0]).toMatchObject({ type: "job.started", runtimeVersion: RUNTIME_VERSION, agentId: "reviewer" })
  expect(review).toContainEqual(expect.objectContaining({ type: "source.read", path: "src/app.ts" }))
  expect(review.at(-1)).toMatchObject({ type: "job.completed" })
  expect(survey.at(-1)).toMatchObject({ type: "job.failed", reason: "aborted" })
  // Each stream is the job's own: seq 0, 1, 2, … per job.
  for (const events of [review, survey]) expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
})

test("the package entries resolve through package.json exports to the sources the repo itself uses", async () => {
  const viaExports = await import("kintsugi-runtime/contract")
  const viaPath = await import("../../src/contract/index.ts")
  expect(viaExports.AgentRuntime).toBe(viaPath.AgentRuntime)
  const kernel = await import("kintsugi-runtime/kernel")
  expect(kernel.AgentRuntime).toBe(viaPath.AgentRuntime)
  expect(Object.keys(kernel).sort()).toEqual(["AgentRuntime", "JobRefused", "KernelLive", "RUNTIME_VERSION", "decodeJob"])
})

test("docs/kernel.md shows this file's orchestrator verbatim", () => {
  const docs = readFileSync(join(import.meta.dir, "..", "..", "docs", "kernel.md"), "utf8")
  const start = docs.indexOf("/** Runs `review` and `survey`")
  const end = docs.indexOf("return { reviewed, surveyed }\n    })", start)
  expect(start).toBeGreaterThan(0)
  expect(end).toBeGreaterThan(start)
  expect(readFileSync(import.meta.path, "utf8")).toContain(docs.slice(start, end))
})
