/**
 * The Drain service on the TestClock: no work admitted once it began, running work given
 * KINTSUGI_DRAIN_SEC and then told to stop, a second signal's cut, and the setting's validation.
 * No test waits for wall-clock time.
 */
import { describe, expect, test } from "bun:test"
import { Chunk, Clock, ConfigProvider, Deferred, Effect, Fiber, Layer, Logger, Option, TestClock, TestContext } from "effect"
import { Drain, DrainConfigInvalid, DrainLive, SERVER_SHUTTING_DOWN } from "../../src/worker/Drain.ts"

const withConfig = (values: Record<string, string>) => Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(values))))

const run = <A, E>(program: Effect.Effect<A, E, Drain>, config: Record<string, string> = {}) =>
  Effect.runPromise(
    Effect.provide(
      program,
      Layer.provideMerge(
        DrainLive,
        Layer.mergeAll(withConfig(config), TestContext.TestContext, Logger.replace(Logger.defaultLogger, Logger.none))
      )
    )
  )

/** Waits until some fiber sleeps on the TestClock until exactly `ms` from now. */
const untilSleeping = (ms: number) =>
  Effect.gen(function* () {
    while (true) {
      const now = yield* Clock.currentTimeMillis
      if (Chunk.some(yield* TestClock.sleeps(), (t) => t === now + ms)) return
      yield* Effect.yieldNow()
    }
  })

/** Admitted work that runs until `release` and reports `stopping` when polled. */
const createJob = Effect.gen(function* () {
  const drain = yield* Drain
  const started = yield* Deferred.make<void>()
  const release = yield* Deferred.make<void>()
  const fiber = yield* Effect.fork(drain.admit(Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(release))))
  yield* Deferred.await(started)
  return { fiber, release: Deferred.succeed(release, undefined) }
})

describe("Drain", () => {
  test("work is admitted until the drain begins, then none; a drain with nothing running ends at once", async () => {
    const result = await run(
      Effect.gen(function* () {
        const drain = yield* Drain
        const before = yield* drain.admit(Effect.succeed("ran"))
        yield* drain.drain
        let ranAfter = false
        const after = yield* drain.admit(Effect.sync(() => (ranAfter = true)))
        return { before, after, ranAfter, draining: yield* drain.draining, stopping: yield* drain.stopping }
      })
    )
    expect(result).toEqual({ before: Option.some("ran"), after: Option.none(), ranAfter: false, draining: true, stopping: false })
  })

  test("a job that finishes within KINTSUGI_DRAIN_SEC ends the drain; nothing is told to stop", async () => {
    const result = await run(
      Effect.gen(function* () {
        const drain = yield* Drain
        const job = yield* createJob
        const draining = yield* Effect.fork(drain.drain)
        yield* untilSleeping(20_000)
        yield* TestClock.adjust("19 seconds")
        const stillDraining = Option.isNone(yield* Fiber.poll(draining))
        yield* job.release
        yield* Fiber.join(draining)
        return { stillDraining, stopping: yield* drain.stopping, job: yield* Fiber.join(job.fiber) }
      }),
      { KINTSUGI_DRAIN_SEC: "20" }
    )
    expect(result).toEqual({ stillDraining: true, stopping: false, job: Option.some(undefined) })
  })

  test("a job outlasting KINTSUGI_DRAIN_SEC is told to stop when the time is up; the drain waits for its end", async () => {
    const result = await run(
      Effect.gen(function* () {
        const drain = yield* Drain
        const job = yield* createJob
        const draining = yield* Effect.fork(drain.drain)
        yield* untilSleeping(5_000)
        const stoppingBefore = yield* drain.stopping
        yield* TestClock.adjust("5 seconds")
        while (!(yield* drain.stopping)) yield* Effect.yieldNow()
        const waitsForTheJob = Option.isNone(yield* Fiber.poll(draining))
        // The worker's abort ends the job; then the drain is over.
        yield* job.release
        yield* Fiber.join(draining)
        return { stoppingBefore, waitsForTheJob }
      }),
      { KINTSUGI_DRAIN_SEC: "5" }
    )
    expect(result).toEqual({ stoppingBefore: false, waitsForTheJob: true })
  })

  test("cut short (a second signal), running jobs are told to stop at once", async () => {
    const stopping = await run(
      Effect.gen(function* () {
        const drain = yield* Drain
        const job = yield* createJob
        const draining = yield* Effect.fork(drain.drain)
        yield* untilSleeping(30_000)
        yield* drain.cutShort
        while (!(yield* drain.stopping)) yield* Effect.yieldNow()
        yield* job.release
        yield* Fiber.join(draining)
        return yield* drain.stopping
      })
    )
    expect(stopping).toBe(true)
    expect(SERVER_SHUTTING_DOWN).toBe("server shutting down")
  })

  test("KINTSUGI_DRAIN_SEC must be a whole number of seconds; unset or empty is 30, 0 is allowed", async () => {
    for (const value of ["-1", "soon", "1.5", "1e3", "30s"]) {
      const failure = await Effect.runPromise(
        Effect.flip(Effect.provide(Drain, Layer.provide(DrainLive, withConfig({ KINTSUGI_DRAIN_SEC: value }))))
      )
      expect(failure).toBeInstanceOf(DrainConfigInvalid)
      expect(failure.message).toBe(`KINTSUGI_DRAIN_SEC must be a whole number of seconds (0 or more), not "${value}"`)
    }
    const defaults = await run(
      Effect.gen(function* () {
        const drain = yield* Drain
        yield* createJob
        yield* Effect.fork(drain.drain)
        yield* untilSleeping(30_000)
        return "sleeps 30 s"
      }),
      { KINTSUGI_DRAIN_SEC: "" }
    )
    expect(defaults).toBe("sleeps 30 s")
    const zero = await run(
      Effect.gen(function* () {
        const drain = yield* Drain
        yield* createJob
        const draining = yield* Effect.fork(drain.drain)
        while (!(yield* drain.stopping)) yield* Effect.yieldNow()
        return Option.isNone(yield* Fiber.poll(draining))
      }),
      { KINTSUGI_DRAIN_SEC: "0" }
    )
    expect(zero).toBe(true)
  })
})
