/**
 * The sign-in throttle on its own: lockouts per username and per address that double and expire on a
 * test clock, throttled attempts that never run the password check, at most N checks at once with a
 * bounded queue, and a bounded memory.
 */
import { describe, expect, test } from "bun:test"
import { Deferred, Effect, Either, Fiber } from "effect"
import { InvalidCredentials } from "../../src/access/Access.ts"
import { makeSignInThrottle, type SignInThrottleOptions } from "../../src/access/SignInThrottle.ts"

const clock = () => {
  let now = 1_000_000
  return { now: () => now, advance: (ms: number) => void (now += ms) }
}

/** A throttle on a test clock, and a check that counts how often it ran. */
const setup = (options: Partial<SignInThrottleOptions> = {}) => {
  const time = clock()
  const throttle = makeSignInThrottle({ perUsername: 3, perAddress: 5, lockoutMs: 1_000, maxLockoutMs: 8_000, windowMs: 60_000, now: time.now, ...options })
  let checks = 0
  const attempt = (username: string, address: string, ok: boolean) =>
    Effect.runPromise(
      Effect.either(throttle.guard(username, address, Effect.suspend(() => (checks++, ok ? Effect.succeed("signed in") : Effect.fail(new InvalidCredentials())))))
    )
  const outcome = async (username: string, address: string, ok: boolean) => {
    const r = await attempt(username, address, ok)
    return Either.isRight(r) ? "ok" : r.left._tag === "InvalidCredentials" ? "wrong" : `throttled ${r.left.reason} ${r.left.retryAfterSeconds}s`
  }
  return { time, throttle, outcome, checks: () => checks }
}

describe("lockouts", () => {
  test("after N failures of one username: refused without checking, with the wait; the lockout doubles and expires", async () => {
    const { time, outcome, checks } = setup()
    expect([await outcome("alice", "a1", false), await outcome("alice", "a2", false), await outcome("alice", "a3", false)]).toEqual(["wrong", "wrong", "wrong"])
    const ran = checks()
    expect(await outcome("alice", "a4", true)).toBe("throttled username 1s")
    expect(checks()).toBe(ran)
    time.advance(1_000)
    expect(await outcome("alice", "a5", true)).toBe("ok")
    // The streak goes on while failures follow the lockout closely: 1 s, then 2 s, 4 s, capped at 8 s.
    const waits: Array<string> = []
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 3; i++) await outcome("alice", `b${round}${i}`, false)
      waits.push(await outcome("alice", "b", true))
      time.advance(10_000)
    }
    expect(waits).toEqual(["throttled username 1s", "throttled username 2s", "throttled username 4s", "throttled username 8s", "throttled username 8s"])
    // Quiet for a window after the last lockout: the streak is forgotten.
    time.advance(60_000)
    for (let i = 0; i < 3; i++) await outcome("alice", `c${i}`, false)
    expect(await outcome("alice", "c", true)).toBe("throttled username 1s")
  })

  test("failures older than the window are forgotten; a success clears the username's count", async () => {
    const { time, outcome } = setup()
    await outcome("bob", "a", false)
    await outcome("bob", "a", false)
    time.advance(60_000)
    await outcome("bob", "b", false)
    await outcome("bob", "c", false)
    expect(await outcome("bob", "d", true)).toBe("ok")
    await outcome("bob", "e", false)
    await outcome("bob", "f", false)
    expect(await outcome("bob", "g", false)).toBe("wrong")
    expect(await outcome("bob", "h", false)).toBe("throttled username 1s")
  })

  test("one address guessing many usernames is stopped at its own budget; other addresses are not", async () => {
    const { outcome } = setup()
    const seen: Array<string> = []
    for (let i = 0; i < 6; i++) seen.push(await outcome(`user${i}`, "10.0.0.1", false))
    expect(seen).toEqual(["wrong", "wrong", "wrong", "wrong", "wrong", "throttled address 1s"])
    expect(await outcome("user0", "10.0.0.2", true)).toBe("ok")
  })

  test("a success does not reset the address's budget (signing in to one's own account between guesses)", async () => {
    const { outcome } = setup()
    for (let i = 0; i < 4; i++) await outcome(`victim${i}`, "10.0.0.9", false)
    expect(await outcome("mallory", "10.0.0.9", true)).toBe("ok")
    expect(await outcome("victim9", "10.0.0.9", false)).toBe("wrong")
    expect(await outcome("victim10", "10.0.0.9", false)).toBe("throttled address 1s")
  })
})

describe("the password check's cost", () => {
  test("at most 2 checks run at once; beyond the queue, attempts are refused at once and never run", async () => {
    const throttle = makeSignInThrottle({ concurrentChecks: 2, queuedChecks: 3, perUsername: 100, perAddress: 100 })
    const release = Effect.runSync(Deferred.make<void>())
    let running = 0
    let most = 0
    let ran = 0
    const check = Effect.acquireUseRelease(
      Effect.sync(() => {
        ran++
        most = Math.max(most, ++running)
      }),
      () => Effect.zipRight(Deferred.await(release), Effect.fail(new InvalidCredentials())),
      () => Effect.sync(() => void running--)
    )
    const fibers = Array.from({ length: 10 }, (_, i) => Effect.runFork(Effect.either(throttle.guard(`u${i}`, `a${i}`, check))))
    // The five refused ones are already done; the others wait on the release.
    const early = await Promise.all(fibers.slice(5).map((f) => Effect.runPromise(Fiber.join(f))))
    expect(early.map((r) => (Either.isLeft(r) ? r.left._tag === "SignInThrottled" && r.left.reason : "ran"))).toEqual(["busy", "busy", "busy", "busy", "busy"])
    expect(ran).toBe(2)
    Effect.runSync(Deferred.succeed(release, undefined))
    const late = await Promise.all(fibers.slice(0, 5).map((f) => Effect.runPromise(Fiber.join(f))))
    expect(late.map((r) => (Either.isLeft(r) ? r.left._tag : "ok"))).toEqual(Array(5).fill("InvalidCredentials"))
    expect({ ran, most }).toEqual({ ran: 5, most: 2 })
  })

  test("parallel guesses cannot overrun a username's budget: checks under way count against it", async () => {
    const throttle = makeSignInThrottle({ perUsername: 3, perAddress: 100 })
    let ran = 0
    const check = Effect.suspend(() => (ran++, Effect.fail(new InvalidCredentials())))
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => Effect.runPromise(Effect.either(throttle.guard("carol", `a${i}`, check)))))
    expect(ran).toBe(3)
    expect(results.filter((r) => Either.isLeft(r) && r.left._tag === "SignInThrottled").length).toBe(17)
  })
})

test("memory stays bounded: a spray of usernames and addresses keeps at most maxKeys of each", async () => {
  const time = clock()
  const throttle = makeSignInThrottle({ maxKeys: 100, now: time.now, perAddress: 1_000_000 })
  for (let i = 0; i < 1_000; i++) {
    await Effect.runPromise(Effect.either(throttle.guard(`spray${i}`, `10.0.${i >> 8}.${i & 255}`, Effect.fail(new InvalidCredentials()))))
  }
  const tracked = throttle.tracked()
  expect(tracked.usernames).toBeLessThanOrEqual(100)
  expect(tracked.addresses).toBeLessThanOrEqual(100)
})
