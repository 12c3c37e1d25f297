/**
 * The sign-in throttle on its own, on a manual clock: lockouts per (account, client) and per client
 * that double and expire; an account's failures from elsewhere that slow its checks and never refuse a
 * client that has not failed; throttled attempts that never run the password check; at most N checks at
 * once with a bounded queue; a bounded memory.
 */
import { describe, expect, test } from "bun:test"
import { Deferred, Effect, Either, Fiber } from "effect"
import { InvalidCredentials } from "../../src/access/errors.ts"
import { makeSignInThrottle, type SignInThrottleOptions } from "../../src/access/SignInThrottle.ts"
import { manualClock } from "../support/manualClock.ts"

/** A throttle on a manual clock, and a check that counts how often it ran. */
const setup = (options: Partial<SignInThrottleOptions> = {}) => {
  const time = manualClock()
  const throttle = makeSignInThrottle({
    perClientAccount: 3,
    perClient: 5,
    perAccount: 8,
    slowMs: 2_000,
    lockoutMs: 1_000,
    maxLockoutMs: 8_000,
    windowMs: 60_000,
    clock: time.clock,
    ...options
  })
  let checks = 0
  const attempt = (username: string, address: string, ok: boolean) =>
    Effect.runPromise(
      Effect.either(
        throttle.guard(
          username,
          address,
          Effect.suspend(() => (checks++, ok ? Effect.succeed("signed in") : Effect.fail(new InvalidCredentials())))
        )
      )
    )
  const outcome = async (username: string, address: string, ok: boolean) => {
    const r = await attempt(username, address, ok)
    return Either.isRight(r)
      ? "ok"
      : r.left._tag === "InvalidCredentials"
        ? "wrong"
        : `throttled ${r.left.reason} ${r.left.retryAfterSeconds}s`
  }
  return { time, throttle, outcome, checks: () => checks }
}

describe("lockouts of one client", () => {
  test("after N failures on one account from one client: that client is refused without checking; the lockout doubles and expires", async () => {
    const { time, outcome, checks } = setup({ perClient: 1_000 })
    expect([await outcome("alice", "a1", false), await outcome("alice", "a1", false), await outcome("alice", "a1", false)]).toEqual([
      "wrong",
      "wrong",
      "wrong"
    ])
    const ran = checks()
    expect(await outcome("alice", "a1", true)).toBe("throttled client-account 1s")
    expect(checks()).toBe(ran)
    time.advance(1_000)
    expect(await outcome("alice", "a1", true)).toBe("ok")
    // The streak goes on while failures follow the lockout closely: 1 s, then 2 s, 4 s, capped at 8 s.
    const waits: Array<string> = []
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 3; i++) await outcome("alice", "b", false)
      waits.push(await outcome("alice", "b", true))
      time.advance(10_000)
    }
    expect(waits).toEqual([
      "throttled client-account 1s",
      "throttled client-account 2s",
      "throttled client-account 4s",
      "throttled client-account 8s",
      "throttled client-account 8s"
    ])
    // Quiet for a window after the last lockout: the streak is forgotten.
    time.advance(60_000)
    for (let i = 0; i < 3; i++) await outcome("alice", "b", false)
    expect(await outcome("alice", "b", true)).toBe("throttled client-account 1s")
  })

  test("failures older than the window are forgotten; a success clears the pair's count", async () => {
    const { time, outcome } = setup({ perClient: 1_000 })
    await outcome("bob", "a", false)
    await outcome("bob", "a", false)
    time.advance(60_000)
    await outcome("bob", "a", false)
    await outcome("bob", "a", false)
    expect(await outcome("bob", "a", true)).toBe("ok")
    await outcome("bob", "a", false)
    await outcome("bob", "a", false)
    expect(await outcome("bob", "a", false)).toBe("wrong")
    expect(await outcome("bob", "a", false)).toBe("throttled client-account 1s")
  })

  test("one client guessing many usernames is stopped at its own budget; other clients are not", async () => {
    const { outcome } = setup()
    const seen: Array<string> = []
    for (let i = 0; i < 6; i++) seen.push(await outcome(`user${i}`, "10.0.0.1", false))
    expect(seen).toEqual(["wrong", "wrong", "wrong", "wrong", "wrong", "throttled client 1s"])
    expect(await outcome("user0", "10.0.0.2", true)).toBe("ok")
  })

  test("a success does not reset the client's budget (signing in to one's own account between guesses)", async () => {
    const { outcome } = setup()
    for (let i = 0; i < 4; i++) await outcome(`victim${i}`, "10.0.0.9", false)
    expect(await outcome("mallory", "10.0.0.9", true)).toBe("ok")
    expect(await outcome("victim9", "10.0.0.9", false)).toBe("wrong")
    expect(await outcome("victim10", "10.0.0.9", false)).toBe("throttled client 1s")
  })
})

describe("an account under attack from elsewhere", () => {
  test("a hundred failures from other clients never refuse the right password from a client that has not failed", async () => {
    // A window and lockouts longer than the whole attack: each slowed check moves this clock on by its wait.
    const { outcome, time } = setup({ lockoutMs: 3_600_000, maxLockoutMs: 3_600_000, windowMs: 3_600_000 })
    const attackers = Array.from({ length: 25 }, (_, i) => `203.0.113.${i}`)
    const seen = new Set<string>()
    for (let round = 0; round < 4; round++)
      for (const from of attackers) seen.add((await outcome("admin", from, false)).replace(/ \d+s$/, ""))
    // Each attacker is locked out of the account after its own three failures, and only itself.
    expect([...seen].sort()).toEqual(["throttled client-account", "wrong"])
    const slept = time.slept.length
    expect(await outcome("admin", "198.51.100.7", true)).toBe("ok")
    // Past the account's ceiling: the check waited first (slowed), and was not refused.
    expect(time.slept.slice(slept)).toEqual([2_000])
    // An attacker's lockout is its own, whatever the account's state.
    expect(await outcome("admin", "203.0.113.0", true)).toMatch(/^throttled client-account/)
  })

  test("the account's ceiling slows each check, never refuses it; the slowing ends a window after the last failure", async () => {
    const { outcome, time } = setup({ perClientAccount: 100, perClient: 100 })
    for (let i = 0; i < 7; i++) await outcome("carol", `x${i}`, false)
    expect(time.slept).toEqual([])
    expect(await outcome("carol", "x7", false)).toBe("wrong")
    // The eighth failure crossed the ceiling: every check of carol now waits, from anyone.
    expect(await outcome("carol", "fresh", true)).toBe("ok")
    expect(await outcome("carol", "x0", false)).toBe("wrong")
    expect(await outcome("dave", "x0", true)).toBe("ok")
    expect(time.slept).toEqual([2_000, 2_000])
    time.advance(60_000)
    expect(await outcome("carol", "fresh", true)).toBe("ok")
    expect(time.slept).toEqual([2_000, 2_000])
  })

  test("while slowed, clients that failed on the account take turns; a client that has not failed never waits for them", async () => {
    const time = manualClock()
    const throttle = makeSignInThrottle({ perClientAccount: 100, perClient: 100, perAccount: 2, clock: time.clock })
    const wrong = Effect.fail(new InvalidCredentials())
    for (const from of ["m1", "m2"]) await Effect.runPromise(Effect.either(throttle.guard("erin", from, wrong)))
    const release = Effect.runSync(Deferred.make<void>())
    const held = Effect.zipRight(Deferred.await(release), wrong)
    const first = Effect.runFork(Effect.either(throttle.guard("erin", "m1", held)))
    // m1's check is under way: m2, which failed on erin too, is told to come back; a fresh client is not.
    await Effect.runPromise(Effect.yieldNow())
    const second = await Effect.runPromise(Effect.either(throttle.guard("erin", "m2", wrong)))
    expect(Either.isLeft(second) && second.left._tag === "SignInThrottled" && second.left.message).toBe(
      "this username has too many failed sign-ins from several addresses; try again in 1 seconds"
    )
    const fresh = await Effect.runPromise(Effect.either(throttle.guard("erin", "home", Effect.succeed("signed in"))))
    expect(fresh).toEqual(Either.right("signed in"))
    Effect.runSync(Deferred.succeed(release, undefined))
    await Effect.runPromise(Fiber.join(first))
    expect(Either.isLeft(await Effect.runPromise(Effect.either(throttle.guard("erin", "m2", wrong))))).toBe(true)
  })
})

describe("the password check's cost", () => {
  test("at most 2 checks run at once; beyond the queue, attempts are refused at once and never run", async () => {
    const throttle = makeSignInThrottle({ concurrentChecks: 2, queuedChecks: 3, perClientAccount: 100, perClient: 100 })
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
    expect(early.map((r) => (Either.isLeft(r) ? r.left._tag === "SignInThrottled" && r.left.reason : "ran"))).toEqual([
      "busy",
      "busy",
      "busy",
      "busy",
      "busy"
    ])
    expect(ran).toBe(2)
    Effect.runSync(Deferred.succeed(release, undefined))
    const late = await Promise.all(fibers.slice(0, 5).map((f) => Effect.runPromise(Fiber.join(f))))
    expect(late.map((r) => (Either.isLeft(r) ? r.left._tag : "ok"))).toEqual(Array(5).fill("InvalidCredentials"))
    expect({ ran, most }).toEqual({ ran: 5, most: 2 })
  })

  test("one client cannot fill the queue: beyond its own few checks under way it alone is refused", async () => {
    const throttle = makeSignInThrottle({
      concurrentChecks: 1,
      queuedChecks: 16,
      checksPerClient: 3,
      perClientAccount: 100,
      perClient: 100
    })
    const release = Effect.runSync(Deferred.make<void>())
    const held = Effect.zipRight(Deferred.await(release), Effect.fail(new InvalidCredentials()))
    const flood = Array.from({ length: 8 }, (_, i) => Effect.runFork(Effect.either(throttle.guard(`v${i}`, "10.9.9.9", held))))
    const refused = await Promise.all(flood.slice(3).map((f) => Effect.runPromise(Fiber.join(f))))
    expect(refused.every((r) => Either.isLeft(r) && r.left._tag === "SignInThrottled" && r.left.reason === "busy")).toBe(true)
    const other = Effect.runFork(Effect.either(throttle.guard("frank", "10.1.1.1", Effect.succeed("signed in"))))
    Effect.runSync(Deferred.succeed(release, undefined))
    expect(await Effect.runPromise(Fiber.join(other))).toEqual(Either.right("signed in"))
    await Promise.all(flood.slice(0, 3).map((f) => Effect.runPromise(Fiber.join(f))))
  })

  test("parallel guesses from one client cannot overrun its budget for an account: checks under way count against it", async () => {
    const throttle = makeSignInThrottle({ perClientAccount: 3, perClient: 100, checksPerClient: 100, queuedChecks: 100 })
    let ran = 0
    const check = Effect.suspend(() => (ran++, Effect.fail(new InvalidCredentials())))
    const results = await Promise.all(
      Array.from({ length: 20 }, () => Effect.runPromise(Effect.either(throttle.guard("carol", "10.0.0.5", check))))
    )
    expect(ran).toBe(3)
    expect(results.filter((r) => Either.isLeft(r) && r.left._tag === "SignInThrottled").length).toBe(17)
  })

  test("only a wrong password counts: another refusal of the check is no failure", async () => {
    const { throttle } = setup()
    for (let i = 0; i < 10; i++) {
      const r = await Effect.runPromise(Effect.either(throttle.guard("gina", "10.0.0.6", Effect.fail({ _tag: "InvalidUser" as const }))))
      expect(Either.isLeft(r) && r.left._tag).toBe("InvalidUser")
    }
  })
})

test("memory stays bounded: a spray of usernames and addresses keeps at most maxKeys of each", async () => {
  const time = manualClock()
  const throttle = makeSignInThrottle({ maxKeys: 100, clock: time.clock, perClient: 1_000_000 })
  for (let i = 0; i < 1_000; i++) {
    await Effect.runPromise(Effect.either(throttle.guard(`spray${i}`, `10.0.${i >> 8}.${i & 255}`, Effect.fail(new InvalidCredentials()))))
  }
  const tracked = throttle.tracked()
  expect(tracked.pairs).toBeLessThanOrEqual(100)
  expect(tracked.clients).toBeLessThanOrEqual(100)
  expect(tracked.accounts).toBeLessThanOrEqual(100)
})
