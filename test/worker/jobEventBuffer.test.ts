/**
 * How a job child's events reach the worker: read on into a buffer while the worker stores them, so a
 * child is not held up by a slow store below the high-water mark; handed over in batches, in seq order,
 * each once, all of them before the run returns.
 */
import { expect, setDefaultTimeout, test } from "bun:test"
import { Cause, Deferred, Effect, Exit, Option } from "effect"
import { join } from "node:path"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { EVENT_BUFFER, runJobProcess } from "../../src/worker/child/JobProcess.ts"

setDefaultTimeout(60_000)

const CHILD = join(import.meta.dir, "firehoseJobChild.ts")
const envelope = (count: number) => ({ job: { count: String(count) }, providers: [] })

test("a child's output is read on while the first batch is held: the child finishes writing before any event is stored", async () => {
  // ~150 KB of events: more than a pipe holds, so a child that waited for each store could not finish writing.
  const count = Math.min(1500, EVENT_BUFFER - 1)
  const batches: Array<ReadonlyArray<JobEvent>> = []
  const program = Effect.gen(function* () {
    const written = yield* Deferred.make<void>()
    const settlement = yield* runJobProcess(
      envelope(count),
      {
        onEvents: (events) =>
          Effect.zipRight(
            Deferred.await(written),
            Effect.sync(() => void batches.push(events))
          ),
        abortRequested: Effect.succeed(false),
        log: (line) => (line === "written" ? Deferred.succeed(written, undefined) : Effect.void)
      },
      CHILD
    )
    return settlement
  })
  const settlement = await Effect.runPromise(program)
  expect(settlement).toEqual({ status: "completed", summary: "done" })
  const seqs = batches.flat().map((e) => e.seq)
  expect(seqs).toEqual(Array.from({ length: count + 1 }, (_, i) => i))
  expect(batches.at(-1)?.at(-1)?.type).toBe("job.completed")
  // In batches: far fewer hand-overs than events, none empty and none over the batch bound.
  expect(batches.length).toBeLessThan(count / 4)
  expect(batches.every((b) => b.length > 0 && b.length <= 500)).toBe(true)
})

test("past the high-water mark the child waits; a hook handling one event at a time still gets every event once, in order", async () => {
  const count = EVENT_BUFFER * 3
  const seen: Array<number> = []
  const settlement = await Effect.runPromise(
    runJobProcess(
      envelope(count),
      { onEvent: (e) => Effect.sync(() => void seen.push(e.seq)), abortRequested: Effect.succeed(false), log: () => Effect.void },
      CHILD
    )
  )
  expect(settlement).toEqual({ status: "completed", summary: "done" })
  expect(seen).toEqual(Array.from({ length: count + 1 }, (_, i) => i))
})

test("a failing hook ends the run with its failure", async () => {
  const exit = await Effect.runPromiseExit(
    runJobProcess(
      envelope(EVENT_BUFFER * 3),
      { onEvents: () => Effect.fail("store refused" as const), abortRequested: Effect.succeed(false), log: () => Effect.void },
      CHILD
    )
  )
  expect(Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined).toBe("store refused")
})
