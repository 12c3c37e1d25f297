/**
 * Sign-in throttling that cannot be turned against users: failed password checks are counted per
 * (account, client address) and per client address in memory (one process), each with a lockout that
 * doubles while failures go on and is forgotten once they stop. An account's failures from every client
 * together only slow its checks (a wait before each, one check at a time from clients that failed on
 * it), never refuse them: the right password from a client that has not failed always gets through. At
 * most a few password checks run at a time, so argon2 cannot be used to saturate the CPU.
 */
import { Clock, Context, Duration, Effect, Schema } from "effect"

export interface SignInThrottleOptions {
  /** Failures of one account from one client within `windowMs` that lock that client out of that account. */
  readonly perClientAccount: number
  /** Failures from one client (any accounts) within `windowMs` that lock the client out. */
  readonly perClient: number
  /** Failures of one account from all clients within `windowMs` past which its checks are slowed. */
  readonly perAccount: number
  /** How long each check of a slowed account waits before it runs. */
  readonly slowMs: number
  /** Failures older than this are forgotten; so is a lockout streak, and an account's slowing, after this long without a failure. */
  readonly windowMs: number
  /** The first lockout; each further one of the same key doubles, up to `maxLockoutMs`. */
  readonly lockoutMs: number
  readonly maxLockoutMs: number
  /** Password checks running at once, and waiting beyond those; more are refused at once. */
  readonly concurrentChecks: number
  readonly queuedChecks: number
  /** Checks one client may have under way at once: no client fills the queue alone. */
  readonly checksPerClient: number
  /** Keys remembered per kind (pair, client, account); the oldest idle ones make room. */
  readonly maxKeys: number
  /** Measures the windows and lockouts and makes the slowing wait. */
  readonly clock: Clock.Clock
}

const DEFAULT_SIGN_IN_THROTTLE: SignInThrottleOptions = {
  perClientAccount: 10,
  perClient: 50,
  perAccount: 20,
  slowMs: 1_000,
  windowMs: 15 * 60_000,
  lockoutMs: 60_000,
  maxLockoutMs: 60 * 60_000,
  concurrentChecks: 2,
  queuedChecks: 16,
  checksPerClient: 4,
  maxKeys: 10_000,
  clock: Clock.make()
}

/**
 * `client-account`: this client failed too often on this account; `client`: this client failed too often
 * on any accounts; `account`: this client failed on an account that is under attack and already has a
 * check from such a client under way; `busy`: too many checks at once (everywhere, or from this client).
 */
export class SignInThrottled extends Schema.TaggedError<SignInThrottled>()("SignInThrottled", {
  retryAfterSeconds: Schema.Number,
  reason: Schema.Literal("client-account", "client", "account", "busy")
}) {
  override get message(): string {
    switch (this.reason) {
      case "busy":
        return "too many sign-ins at once; try again in a moment"
      case "client-account":
        return `too many failed sign-ins for this username from this address; try again in ${this.retryAfterSeconds} seconds`
      case "client":
        return `too many failed sign-ins from this address; try again in ${this.retryAfterSeconds} seconds`
      case "account":
        return `this username has too many failed sign-ins from several addresses; try again in ${this.retryAfterSeconds} seconds`
    }
  }
}

export class SignInThrottle extends Context.Tag("access/SignInThrottle")<
  SignInThrottle,
  {
    /**
     * Runs `check` (a password check of `username`'s account) unless this client is locked out of the
     * account or altogether, or too many checks are under way: then fails with SignInThrottled at once,
     * without running it. An InvalidCredentials outcome counts as a failure for the pair, the client and
     * the account; success forgets the pair's count (never the client's or the account's: signing in
     * to one's own account must not reset a guessing budget).
     */
    readonly guard: <A, E extends { readonly _tag: string }, R>(
      username: string,
      address: string,
      check: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | SignInThrottled, R>
    /** How many pairs, clients and accounts are remembered (each at most `maxKeys`). */
    readonly tracked: () => { readonly pairs: number; readonly clients: number; readonly accounts: number }
  }
>() {}

interface Entry {
  failures: number
  windowStart: number
  /** Checks under way: they count against the budget, so parallel guesses cannot overrun it. */
  pending: number
  lockedUntil: number
  lockouts: number
  /** Accounts: slowed until then. */
  slowUntil: number
  /** Accounts: checks under way from clients that failed on it. */
  suspectPending: number
}

/** One kind of key: a bounded map of entries. */
const keyedCounts = (limit: number, o: SignInThrottleOptions) => {
  const entries = new Map<string, Entry>()
  const idle = (e: Entry, now: number) => e.pending === 0 && e.lockedUntil <= now && e.slowUntil <= now && now - e.windowStart >= o.windowMs
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
    const made: Entry = { failures: 0, windowStart: now, pending: 0, lockedUntil: 0, lockouts: 0, slowUntil: 0, suspectPending: 0 }
    entries.set(key, made)
    return made
  }
  return {
    entry,
    /** Milliseconds until `e` may try again (0 = now). */
    wait: (e: Entry, now: number): number =>
      e.lockedUntil > now ? e.lockedUntil - now : e.failures + e.pending >= limit ? o.lockoutMs : 0,
    /** A failure that locks the key once `limit` is reached. */
    fail: (e: Entry, now: number) => {
      e.failures++
      if (e.failures >= limit) {
        e.lockouts++
        e.lockedUntil = now + Math.min(o.maxLockoutMs, o.lockoutMs * 2 ** Math.min(30, e.lockouts - 1))
        e.failures = 0
        e.windowStart = now
      }
    },
    /** A failure that slows the key (never locks it) for a window once `limit` is reached. */
    slow: (e: Entry, now: number) => {
      e.failures++
      if (e.failures >= limit || e.slowUntil > now) e.slowUntil = now + o.windowMs
    },
    forget: (key: string) => entries.delete(key),
    size: () => entries.size
  }
}

export const makeSignInThrottle = (options: Partial<SignInThrottleOptions> = {}): SignInThrottle["Type"] => {
  const o = { ...DEFAULT_SIGN_IN_THROTTLE, ...options }
  const pairs = keyedCounts(o.perClientAccount, o)
  const clients = keyedCounts(o.perClient, o)
  const accounts = keyedCounts(o.perAccount, o)
  const checks = Effect.unsafeMakeSemaphore(o.concurrentChecks)
  const now = () => o.clock.unsafeCurrentTimeMillis()
  let admitted = 0
  const refuse = (reason: SignInThrottled["reason"], waitMs: number) =>
    Effect.fail(new SignInThrottled({ reason, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) }))

  return {
    guard: <A, E extends { readonly _tag: string }, R>(username: string, address: string, check: Effect.Effect<A, E, R>) =>
      Effect.suspend((): Effect.Effect<A, E | SignInThrottled, R> => {
        const at = now()
        const account = username.trim().toLowerCase().slice(0, 128)
        const pairKey = `${account}\u0000${address}`
        const pair = pairs.entry(pairKey, at)
        const from = clients.entry(address, at)
        const target = accounts.entry(account, at)
        const pairWait = pairs.wait(pair, at)
        const fromWait = clients.wait(from, at)
        if (pairWait > 0 || fromWait > 0) return fromWait >= pairWait ? refuse("client", fromWait) : refuse("client-account", pairWait)
        if (from.pending >= o.checksPerClient) return refuse("busy", 1_000)
        const slowed = target.slowUntil > at
        // A client that failed on this account; while it is slowed, such clients take turns, one check at a time.
        const suspect = pair.failures > 0 || pair.lockouts > 0
        if (slowed && suspect && target.suspectPending > 0) return refuse("account", o.slowMs)
        pair.pending++
        from.pending++
        if (suspect) target.suspectPending++
        const admit = Effect.suspend((): Effect.Effect<A, E | SignInThrottled, R> => {
          if (admitted >= o.concurrentChecks + o.queuedChecks) return refuse("busy", 1_000)
          admitted++
          return checks
            .withPermits(1)(check)
            .pipe(
              Effect.tapBoth({
                onFailure: (e) =>
                  Effect.sync(() => {
                    if (e._tag !== "InvalidCredentials") return
                    const failedAt = now()
                    pairs.fail(pair, failedAt)
                    clients.fail(from, failedAt)
                    accounts.slow(target, failedAt)
                  }),
                onSuccess: () => Effect.sync(() => void pairs.forget(pairKey))
              }),
              Effect.ensuring(Effect.sync(() => void admitted--))
            )
        })
        return (slowed ? Effect.zipRight(o.clock.sleep(Duration.millis(o.slowMs)), admit) : admit).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              pair.pending--
              from.pending--
              if (suspect) target.suspectPending--
            })
          )
        )
      }),
    tracked: () => ({ pairs: pairs.size(), clients: clients.size(), accounts: accounts.size() })
  }
}
