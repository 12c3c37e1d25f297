/**
 * The job's limits on Effect's Clock, driven by TestClock against real scripted model servers:
 * timeoutSec, idleTimeoutSec, and a planned retry wait that the idle watchdog does not count. No test
 * here waits for wall-clock time to pass.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test"
import { Chunk, Clock, Deferred, Effect, Fiber, Stream, TestClock, TestContext } from "effect"
import { AgentRuntime, type JobOutcome } from "../../src/contract/AgentRuntime.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { KernelLive } from "../../src/kernel/Kernel.ts"
import { createJobDirs, createJobSpec, createProvider, type JobOverrides } from "../support/jobChild.ts"
import { testSandboxConfig } from "../support/sandbox.ts"
import { startOpenAIServer, type Step } from "../support/scriptedServers.ts"

setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

/** Lets real I/O (the HTTP round trips) run between checks. */
const yieldToIo = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Waits until some fiber sleeps on the TestClock until exactly `ms` from now. */
const untilSleeping = (ms: number) =>
  Effect.gen(function* () {
    while (true) {
      const now = yield* Clock.currentTimeMillis
      if (Chunk.some(yield* TestClock.sleeps(), (t) => t === now + ms)) return
      yield* yieldToIo
    }
  })

/**
 * Runs one job on the TestClock; `drive` gets the job's events so far and moves the clock once the
 * job is where it wants it.
 */
const runOnTestClock = async (
  steps: ReadonlyArray<Step>,
  overrides: JobOverrides,
  drive: (seen: Deferred.Deferred<JobEvent>) => Effect.Effect<void>,
  watch: JobEvent["type"]
) => {
  const server = await startOpenAIServer(steps)
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const program = Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const handle = yield* runtime.start(createJobSpec(dirs, { ...overrides, agent: { tools: ["read"] } }))
    const seen = yield* Deferred.make<JobEvent>()
    const events = yield* Effect.fork(
      Stream.runCollect(Stream.tap(handle.events, (e) => (e.type === watch ? Deferred.succeed(seen, e) : Effect.void)))
    )
    const result = yield* Effect.fork(handle.result)
    yield* drive(seen)
    const outcome: JobOutcome = yield* Fiber.join(result)
    return { outcome, events: Chunk.toArray(yield* Fiber.join(events)) }
  })
  const layer = KernelLive({ providers: [createProvider(server, "openai-completions")], sandbox: testSandboxConfig() })
  const r = await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer), Effect.provide(TestContext.TestContext)))
  return { ...r, requests: server.requests }
}

test("timeoutSec: a model that never answers is stopped when the TestClock passes the limit", async () => {
  const asked = Effect.runSync(Deferred.make<void>())
  const stall: Step = {
    kind: "fn",
    respond: () => {
      Effect.runSync(Deferred.succeed(asked, undefined))
      return { kind: "stall" }
    }
  }
  const r = await runOnTestClock(
    [stall],
    { limits: { timeoutSec: 600, idleTimeoutSec: 0 } },
    () =>
      Effect.gen(function* () {
        yield* Deferred.await(asked)
        yield* TestClock.adjust("599 seconds")
        yield* TestClock.adjust("1 second")
      }),
    "job.started"
  )
  expect(r.outcome).toEqual({ _tag: "Failed", reason: "timeout", message: "the job exceeded timeoutSec (600 s)" })
  expect(r.events[r.events.length - 1]).toMatchObject({ type: "job.failed", reason: "timeout" })
  // The job span's duration is the TestClock's, not the wall clock's.
  const jobSpan = r.events.find((e) => e.type === "span" && e.name === "kintsugi.job")
  expect(jobSpan?.type === "span" && jobSpan.durationMs).toBe(600_000)
})

test("idleTimeoutSec: a stream that goes silent after some text trips the watchdog, not timeoutSec", async () => {
  const r = await runOnTestClock(
    [{ kind: "stall", afterText: "thinking it over" }],
    { limits: { timeoutSec: 600, idleTimeoutSec: 30 } },
    (seen) =>
      Effect.gen(function* () {
        yield* Deferred.await(seen)
        yield* TestClock.adjust("30 seconds")
      }),
    "message.delta"
  )
  expect(r.outcome).toEqual({ _tag: "Failed", reason: "timeout", message: "no model or tool progress for idleTimeoutSec (30 s)" })
})

test("a planned retry wait (Retry-After: 120) longer than idleTimeoutSec (30) does not trip the watchdog", async () => {
  const steps: ReadonlyArray<Step> = [
    { kind: "http-error", status: 429, body: { error: { message: "slow down", type: "scripted" } }, headers: { "retry-after": "120" } },
    { kind: "turn", text: "done" }
  ]
  const r = await runOnTestClock(
    steps,
    { limits: { timeoutSec: 600, idleTimeoutSec: 30 } },
    () =>
      Effect.gen(function* () {
        yield* untilSleeping(120_000)
        yield* TestClock.adjust("120 seconds")
      }),
    "job.started"
  )
  expect(r.outcome).toEqual({ _tag: "Completed", summary: "done" })
  expect(r.requests.length).toBe(2)
  const retry = r.events.find((e) => e.type === "span" && e.name === "kintsugi.retry")
  expect(retry).toMatchObject({ status: "ok", durationMs: 120_000, attributes: { waitMs: 120_000, serverRequested: true } })
})
