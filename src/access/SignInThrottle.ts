/**
 * Sign-in throttling: failed sign-ins counted per username and per client address in memory (one
 * process), a lockout that doubles while failures go on and is forgotten once they stop, and at most a
 * few password checks at a time so argon2 cannot be used to saturate the CPU.
 */
import { Context, Effect, Schema } from "effect"
import type { InvalidCredentials } from "./Access.ts"

export interface SignInThrottleOptions {
  /** Failures of one username within `windowMs` that lock it. */
  readonly perUsername: number
  /** Failures from one client address (any usernames) within `windowMs` that lock it. */
  readonly perAddress: number
  /** Failures older than this are forgotten; so is the lockout streak after this long without a failure. */
  readonly windowMs: number
  /** The first lockout; each further one of the same key doubles, up to `maxLockoutMs`. */
  readonly lockoutMs: number
  readonly maxLockoutMs: number
  /** Password checks running at once, and waiting beyond those; more are refused at once. */
  readonly concurrentChecks: number
  readonly queuedChecks: number
  /** Keys remembered per kind (username, address); the oldest idle ones make room. */
  readonly maxKeys: number
  readonly now: () => number
}

export const DEFAULT_SIGN_IN_THROTTLE: SignInThrottleOptions = {
  perUsername: 10,
  perAddress: 50,
  windowMs: 15 * 60_000,
  lockoutMs: 60_000,
  maxLockoutMs: 60 * 60_000,
  concurrentChecks: 2,
  queuedChecks: 16,
  maxKeys: 10_000,
  now: () => Date.now()
}

export class SignInThrottled extends Schema.TaggedError<SignInThrottled>()("SignInThrottled", {
  retryAfterSeconds: Schema.Number,
  reason: Schema.Literal("username", "address", "busy")
}) {
  override get message(): string {
    return this.reason === "busy"
      ? "too many sign-ins at once; try again in a moment"
      : `too many failed sign-ins ${this.reason === "username" ? "for this username" : "from this address"}; try again in ${this.retryAfterSeconds} seconds`
  }
}

export class SignInThrottle extends Context.Tag("access/SignInThrottle")<
  SignInThrottle,
  {
    /**
     * Runs `signIn` (which checks a password) unless the username or the address is locked out or too
     * many checks are already waiting: then fails with SignInThrottled at once, without running it.
     * An InvalidCredentials outcome counts as a failure for both keys; success clears the username's
     * count (never the address's: signing in to one's own account must not reset a guessing budget).
     */
    readonly guard: <A, R>(
      username: string,
      address: string,
      signIn: Effect.Effect<A, InvalidCredentials, R>
    ) => Effect.Effect<A, InvalidCredentials | SignInThrottled, R>
    /** How many usernames and addresses are remembered (each at most `maxKeys`). */
    readonly tracked: () => { readonly usernames: number; readonly addresses: number }
  }
>() {}

interface Entry {
  failures: number
  windowStart: number
  /** Checks under way: they count against the budget, so parallel guesses cannot overrun it. */
  pending: number
  lockedUntil: number
  lockouts: number
}

/** One kind of key (usernames or addresses): a bounded map of entries. */
const keyedCounts = (limit: number, o: SignInThrottleOptions) => {
  const entries = new Map<string, Entry>()
  const idle = (e: Entry, now: number) => e.pending === 0 && e.lockedUntil <= now && now - e.windowStart >= o.windowMs
  const entry = (key: string, now: number): Entry => {
    const found = entries.get(key)
    if (found !== undefined) {
      if (now - found.windowStart >= o.windowMs) {
        found.failures = 0
        found.windowStart = now
      }
      if (found.lockouts > 0 && found.lockedUntil <= now && now - found.lockedUntil >= o.windowMs) found.lockouts = 0
      return found
    }
    if (entries.size >= o.maxKeys) {
      for (const [k, e] of entries) if (idle(e, now)) entries.delete(k)
      // Still full (a spray of keys): drop the oldest; its owner merely gets a fresh budget.
      for (const k of entries.keys()) {
        if (entries.size < o.maxKeys) break
        entries.delete(k)
      }
    }
    const made: Entry = { failures: 0, windowStart: now, pending: 0, lockedUntil: 0, lockouts: 0 }
    entries.set(key, made)
    return made
  }
  return {
    entry,
    /** Milliseconds until `e` may try again (0 = now). */
    wait: (e: Entry, now: number): number => (e.lockedUntil > now ? e.lockedUntil - now : e.failures + e.pending >= limit ? o.lockoutMs : 0),
    fail: (e: Entry, now: number) => {
      e.failures++
      if (e.failures >= limit) {
        e.lockouts++
        e.lockedUntil = now + Math.min(o.maxLockoutMs, o.lockoutMs * 2 ** Math.min(30, e.lockouts - 1))
        e.failures = 0
        e.windowStart = now
      }
    },
    forget: (key: string) => entries.delete(key),
    size: () => entries.size
  }
}

export const makeSignInThrottle = (options: Partial<SignInThrottleOptions> = {}): SignInThrottle["Type"] => {
  const o = { ...DEFAULT_SIGN_IN_THROTTLE, ...options }
  const usernames = keyedCounts(o.perUsername, o)
  const addresses = keyedCounts(o.perAddress, o)
  const checks = Effect.unsafeMakeSemaphore(o.concurrentChecks)
  let admitted = 0

  return {
    guard: <A, R>(username: string, address: string, signIn: Effect.Effect<A, InvalidCredentials, R>) =>
      Effect.suspend((): Effect.Effect<A, InvalidCredentials | SignInThrottled, R> => {
        const now = o.now()
        const userKey = username.trim().toLowerCase().slice(0, 128)
        const user = usernames.entry(userKey, now)
        const from = addresses.entry(address, now)
        const userWait = usernames.wait(user, now)
        const fromWait = addresses.wait(from, now)
        if (userWait > 0 || fromWait > 0) {
          return Effect.fail(
            new SignInThrottled({ retryAfterSeconds: Math.ceil(Math.max(userWait, fromWait) / 1000), reason: fromWait >= userWait ? "address" : "username" })
          )
        }
        if (admitted >= o.concurrentChecks + o.queuedChecks) return Effect.fail(new SignInThrottled({ retryAfterSeconds: 1, reason: "busy" }))
        admitted++
        user.pending++
        from.pending++
        return checks.withPermits(1)(signIn).pipe(
          Effect.tapBoth({
            onFailure: () =>
              Effect.sync(() => {
                const at = o.now()
                usernames.fail(user, at)
                addresses.fail(from, at)
              }),
            onSuccess: () => Effect.sync(() => usernames.forget(userKey))
          }),
          Effect.ensuring(
            Effect.sync(() => {
              admitted--
              user.pending--
              from.pending--
            })
          )
        )
      }),
    tracked: () => ({ usernames: usernames.size(), addresses: addresses.size() })
  }
}
