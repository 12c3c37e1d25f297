/**
 * How the worker settles a job child's end: refusals name every problem, a child dying without a
 * terminal event is failed/error, an abort request and an interruption both SIGTERM the child, which
 * still reports its own end.
 */
import { expect, setDefaultTimeout, test } from "bun:test"
import { Deferred, Effect, Fiber } from "effect"
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { runJobProcess } from "../../src/worker/child/JobProcess.ts"

setDefaultTimeout(30_000)

const CHILD = join(import.meta.dir, "..", "support", "scriptedJobChild.ts")
const envelope = (job: Record<string, string>) => ({ job, providers: [] })
const quiet = { onEvent: () => Effect.void, abortRequested: Effect.succeed(false), log: () => Effect.void }

test("a refusal line → failed/error naming every problem", async () => {
  const settlement = await Effect.runPromise(runJobProcess(envelope({ mode: "refuse" }), quiet, CHILD))
  expect(settlement).toEqual({
    status: "failed",
    reason: "error",
    message: "the job was refused: task: must not be empty; model: is unknown"
  })
})

test("the child starts with the job child's JIT settings (JOB_CHILD_JIT_ENV)", async () => {
  const settlement = await Effect.runPromise(runJobProcess(envelope({ mode: "report-jit" }), quiet, CHILD))
  expect(settlement).toEqual({
    status: "failed",
    reason: "error",
    message: "the job was refused: env: BUN_JSC_thresholdForJITAfterWarmUp=20000 BUN_JSC_thresholdForJITSoon=20000"
  })
})

test("a line that is not an event is logged and ignored; an end without a terminal event is failed/error", async () => {
  const logs: Array<string> = []
  const settlement = await Effect.runPromise(
    runJobProcess(envelope({ mode: "garbage-then-exit" }), { ...quiet, log: (l) => Effect.sync(() => void logs.push(l)) }, CHILD)
  )
  expect(settlement).toEqual({ status: "failed", reason: "error", message: "the job process exited with code 3 before the job ended" })
  expect(logs).toContain("job child printed a line that is not an event (ignored)")
})

test("an abort request → SIGTERM; the child's own `aborted` end is handed over and settles the job", async () => {
  const events: Array<JobEvent> = []
  const program = Effect.gen(function* () {
    const ready = yield* Deferred.make<void>()
    return yield* runJobProcess(
      envelope({ mode: "wait-for-sigterm" }),
      {
        onEvent: (e) => Effect.sync(() => void events.push(e)),
        abortRequested: Deferred.isDone(ready),
        log: (l) => (l === "ready" ? Deferred.succeed(ready, undefined) : Effect.void)
      },
      CHILD
    )
  })
  const settlement = await Effect.runPromise(program)
  expect(settlement).toEqual({ status: "failed", reason: "aborted", message: "the job was aborted" })
  expect(events.map((e) => e.type)).toEqual(["job.failed"])
})

test("interrupted (the worker stops) → the child gets SIGTERM and is waited for before the interruption completes", async () => {
  const marker = join(mkdtempSync(join(tmpdir(), "kintsugi-jobprocess-")), "sigterm")
  const program = Effect.gen(function* () {
    const ready = yield* Deferred.make<void>()
    const fiber = yield* Effect.fork(
      runJobProcess(
        envelope({ mode: "wait-for-sigterm", marker }),
        { ...quiet, log: (l) => (l === "ready" ? Deferred.succeed(ready, undefined) : Effect.void) },
        CHILD
      )
    )
    yield* Deferred.await(ready)
    yield* Fiber.interrupt(fiber)
    return existsSync(marker)
  })
  expect(await Effect.runPromise(program)).toBe(true)
})
