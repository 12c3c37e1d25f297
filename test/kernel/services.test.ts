/**
 * The per-job services through their test layers, on the TestClock: the Limits watchdog and
 * timeout, and the Llm retry loop over a scripted answer function (no HTTP at all).
 */
import { describe, expect, test } from "bun:test"
import type { Api, AssistantMessage, Model } from "@earendil-works/pi-ai"
import { Effect, Either, Fiber, Layer, TestClock, TestContext } from "effect"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import * as JobEvents from "../../src/job/JobEvents.ts"
import * as Limits from "../../src/job/Limits.ts"
import { Llm, LlmTest } from "../../src/kernel/Llm.ts"

const model = { id: "m", provider: "p", api: "openai-completions", contextWindow: 1000, maxTokens: 100 } as unknown as Model<Api>

const answer = (text: string, error?: string): AssistantMessage => ({
  role: "assistant",
  content: error === undefined ? [{ type: "text", text }] : [],
  api: model.api,
  provider: model.provider,
  model: model.id,
  usage: {
    input: 10,
    output: 2,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 12,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.001 }
  },
  stopReason: error === undefined ? "stop" : "error",
  ...(error === undefined ? {} : { errorMessage: error }),
  timestamp: 0
})

const run = <A, E>(effect: Effect.Effect<A, E, Limits.Limits | Llm>, answers: ReadonlyArray<AssistantMessage> = []) => {
  const events: Array<JobEvent> = []
  let n = 0
  const llm = LlmTest(model, () => Effect.succeed(answers[n++] ?? answer("unscripted")), {
    baseDelayMs: 1000,
    maxDelayMs: 30_000,
    maxRetries: 8
  })
  const limits = Layer.effect(
    Limits.Limits,
    Limits.make({ timeoutSec: 100, idleTimeoutSec: 10, maxCostUsd: 1 }, { label: "p/m", contextWindow: 1000 })
  )
  const layer = llm.pipe(Layer.provideMerge(limits), Layer.provideMerge(JobEvents.layerTest(events)))
  return Effect.runPromise(Effect.either(effect).pipe(Effect.provide(layer), Effect.provide(TestContext.TestContext))).then((r) => ({
    r,
    events
  }))
}

describe("Limits on the TestClock", () => {
  test("the idle watchdog fires after idleTimeoutSec without progress", async () => {
    const { r } = await run(
      Effect.gen(function* () {
        const limits = yield* Limits.Limits
        const idle = yield* Effect.fork(limits.enforce(Effect.never))
        yield* TestClock.adjust("10 seconds")
        return yield* Fiber.join(idle)
      })
    )
    expect(Either.isLeft(r) && r.left.message).toBe("no model or tool progress for idleTimeoutSec (10 s)")
  })

  test("a planned wait longer than idleTimeoutSec passes; progress restarts the count after it", async () => {
    const { r } = await run(
      Effect.gen(function* () {
        const limits = yield* Limits.Limits
        const work = Effect.zipRight(limits.plannedWait(Effect.sleep("60 seconds")), Effect.never)
        const job = yield* Effect.fork(limits.enforce(work))
        yield* TestClock.adjust("69 seconds")
        expect(job.unsafePoll()).toBeNull()
        yield* TestClock.adjust("1 second")
        return yield* Fiber.join(job)
      })
    )
    expect(Either.isLeft(r) && r.left.message).toBe("no model or tool progress for idleTimeoutSec (10 s)")
  })

  test("timeoutSec counts planned waits too", async () => {
    const { r } = await run(
      Effect.gen(function* () {
        const limits = yield* Limits.Limits
        const job = yield* Effect.fork(limits.enforce(limits.plannedWait(Effect.never)))
        yield* TestClock.adjust("100 seconds")
        return yield* Fiber.join(job)
      })
    )
    expect(Either.isLeft(r) && r.left.message).toBe("the job exceeded timeoutSec (100 s)")
  })
})

describe("Llm retries over the test layer", () => {
  test("an overloaded answer is retried after a backoff span; every attempt is charged", async () => {
    const { r, events } = await run(
      Effect.gen(function* () {
        const llm = yield* Llm
        const call = yield* Effect.fork(llm.complete({ systemPrompt: "s", messages: [], tools: [] }))
        yield* TestClock.adjust("1 second")
        return yield* Fiber.join(call)
      }),
      [answer("", "Overloaded"), answer("fine")]
    )
    expect(Either.isRight(r) && r.right.message.content).toEqual([{ type: "text", text: "fine" }])
    const retry = events.find((e) => e.type === "span" && e.name === "kintsugi.retry")
    expect(retry).toMatchObject({ attributes: { attempt: 1, cause: "overloaded" }, status: "ok" })
    expect(events.filter((e) => e.type === "usage").map((e) => e.type === "usage" && e.inputTokens)).toEqual([10, 20])
  })
})
