/**
 * The retry policy as pure functions (what is retried, how long to wait, when to give up), the
 * provider-failure text, and the planned wait on Effect's Clock driven by TestClock.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Fiber, TestClock, TestContext } from "effect"
import { providerText } from "../../src/kernel/providerFailure.ts"
import {
  backoffMs,
  decideRetry,
  retryCause,
  serverDelayMs,
  waitPlanned,
  type AttemptFailure,
  type RetryPolicy
} from "../../src/kernel/retryPolicy.ts"

const policy: RetryPolicy = { baseDelayMs: 1000, maxDelayMs: 30_000, maxRetries: 8 }

const failure = (f: Partial<AttemptFailure>): AttemptFailure => ({
  status: undefined,
  headers: undefined,
  connectionLost: false,
  message: "boom",
  streamed: false,
  ...f
})

describe("retryCause", () => {
  test("429, 408 and 5xx are retried; other 4xx are not", () => {
    for (const status of [408, 429, 500, 502, 503, 504, 529]) expect(retryCause(failure({ status }))).toBe("status")
    for (const status of [400, 401, 403, 404, 409, 413, 422]) expect(retryCause(failure({ status }))).toBeUndefined()
  })

  test("overloaded inside a 2xx stream and lost connections are retried; other stream errors are not", () => {
    expect(retryCause(failure({ status: 200, message: '{"type":"overloaded_error","message":"Overloaded"}' }))).toBe("overloaded")
    expect(retryCause(failure({ connectionLost: true }))).toBe("connection")
    expect(retryCause(failure({ status: 200, message: "Provider finish_reason: content_filter" }))).toBeUndefined()
    expect(retryCause(failure({ status: 400, message: "overloaded" }))).toBeUndefined()
  })

  test("x-should-retry from the provider wins", () => {
    expect(retryCause(failure({ status: 503, headers: new Headers({ "x-should-retry": "false" }) }))).toBeUndefined()
    expect(retryCause(failure({ status: 409, headers: new Headers({ "x-should-retry": "true" }) }))).toBe("status")
  })
})

describe("serverDelayMs", () => {
  const now = Date.parse("2026-01-01T00:00:00Z")
  test("retry-after in seconds or as an HTTP date, retry-after-ms first", () => {
    expect(serverDelayMs(new Headers({ "retry-after": "2" }), now)).toBe(2000)
    expect(serverDelayMs(new Headers({ "retry-after": "0.5" }), now)).toBe(500)
    expect(serverDelayMs(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:07 GMT" }), now)).toBe(7000)
    expect(serverDelayMs(new Headers({ "retry-after": "Wed, 31 Dec 2025 23:00:00 GMT" }), now)).toBe(0)
    expect(serverDelayMs(new Headers({ "retry-after": "2", "retry-after-ms": "1234" }), now)).toBe(1234)
    expect(serverDelayMs(new Headers({ "retry-after": "soon" }), now)).toBeUndefined()
    expect(serverDelayMs(undefined, now)).toBeUndefined()
  })
})

describe("decideRetry", () => {
  test("exponential backoff with up to 25 % jitter, capped", () => {
    expect([0, 1, 2, 3].map((i) => backoffMs(policy, i, 0))).toEqual([1000, 2000, 4000, 8000])
    expect(backoffMs(policy, 0, 0.9999)).toBe(750)
    expect(backoffMs(policy, 10, 0)).toBe(30_000)
  })

  test("the provider's Retry-After is the wait; a wait reaching the deadline is not started", () => {
    const limited = failure({ status: 429, headers: new Headers({ "retry-after": "2" }) })
    expect(decideRetry(policy, limited, 0, 10_000, 0, 0.5)).toEqual({ _tag: "Retry", waitMs: 2000, cause: "status", serverRequested: true })
    expect(decideRetry(policy, limited, 0, 2000, 0, 0.5)).toEqual({ _tag: "GiveUp", why: "deadline" })
    expect(decideRetry(policy, failure({ status: 503 }), 3, 7000, 0, 0)).toEqual({ _tag: "GiveUp", why: "deadline" })
  })

  test("gives up on final failures, streamed answers and used-up retries", () => {
    expect(decideRetry(policy, failure({ status: 401 }), 0, 60_000, 0, 0)).toEqual({ _tag: "GiveUp", why: "final" })
    expect(decideRetry(policy, failure({ status: 503, streamed: true }), 0, 60_000, 0, 0)).toEqual({ _tag: "GiveUp", why: "streamed" })
    expect(decideRetry(policy, failure({ status: 503 }), 8, 600_000, 0, 0)).toEqual({ _tag: "GiveUp", why: "attempts" })
  })
})

describe("providerText", () => {
  test("keeps the provider's message and type, without pi-ai's status prefix", () => {
    expect(providerText('429: {"message":"slow down","type":"rate_limit"}', 429)).toBe("slow down (rate_limit)")
    expect(providerText('401 {"type":"error","error":{"type":"authentication_error","message":"bad key"}}', 401)).toBe(
      "bad key (authentication_error)"
    )
    expect(providerText("503 upstream unavailable", 503)).toBe("upstream unavailable")
    expect(providerText("Connection error.: ECONNREFUSED", undefined)).toBe("Connection error.: ECONNREFUSED")
  })
})

test("the planned wait runs on Effect's Clock (TestClock drives it)", async () => {
  const program = Effect.gen(function* () {
    const fiber = yield* Effect.fork(waitPlanned(2000))
    yield* TestClock.adjust("1999 millis")
    const early = yield* Fiber.poll(fiber)
    yield* TestClock.adjust("1 millis")
    const late = yield* Fiber.poll(fiber)
    return { early: early._tag, late: late._tag }
  })
  expect(await Effect.runPromise(program.pipe(Effect.provide(TestContext.TestContext)))).toEqual({ early: "None", late: "Some" })
})
