/**
 * When a failed model call is tried again, and after how long (ARCHITECTURE §4): pure functions of
 * the failure, the attempt number and the time left, plus `waitPlanned`, the one Effect that sleeps.
 */
import { Duration, Effect } from "effect"

/** What one failed model call looked like, as far as retrying is concerned. Never content. */
export interface AttemptFailure {
  /** The provider's HTTP status; undefined when no HTTP answer came (connection failure). */
  readonly status: number | undefined
  /** Headers of the provider's answer (`retry-after`, `retry-after-ms`, `x-should-retry`). */
  readonly headers: Headers | undefined
  /** The request never got an HTTP answer, or the answer's stream broke off (a connection reset). */
  readonly connectionLost: boolean
  /** The provider's error text (pi-ai's `errorMessage`). */
  readonly message: string
  /** Some of the failed answer already went out as `message.delta` events: a retry would repeat it. */
  readonly streamed: boolean
}

export interface RetryPolicy {
  /** First backoff wait; doubled each retry, then jittered down by up to 25 %. */
  readonly baseDelayMs: number
  /** Cap of one backoff wait. A provider's `Retry-After` is not capped: only the deadline bounds it. */
  readonly maxDelayMs: number
  /** Retries of one model call at most (the deadline usually ends them first). */
  readonly maxRetries: number
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseDelayMs: 1000, maxDelayMs: 30_000, maxRetries: 8 }

/** Why a failure is retried; a `kintsugi.retry` span attribute. */
export type RetryCause = "status" | "overloaded" | "connection"

export type RetryDecision =
  | { readonly _tag: "Retry"; readonly waitMs: number; readonly cause: RetryCause; readonly serverRequested: boolean }
  | { readonly _tag: "GiveUp"; readonly why: GiveUpReason }

/**
 * - `final`: the failure is not one that a retry can fix (4xx other than 408/429, a refusal …);
 * - `streamed`: text of the failed answer was already emitted;
 * - `attempts`: `maxRetries` used up; `deadline`: the wait would pass `timeoutSec`.
 */
export type GiveUpReason = "final" | "streamed" | "attempts" | "deadline"

const OVERLOADED = /overloaded/i

const isErrorStatus = (status: number | undefined): status is number => status !== undefined && status >= 300

/** Why this failure may be retried, or undefined when it may not. `x-should-retry` wins when sent. */
export const retryCause = (f: AttemptFailure): RetryCause | undefined => {
  const should = f.headers?.get("x-should-retry")
  if (should === "false") return undefined
  if (isErrorStatus(f.status)) {
    if (f.status === 408 || f.status === 429 || f.status >= 500) return "status"
    return should === "true" ? "status" : undefined
  }
  // No error status: a failure inside a 2xx stream (an `overloaded_error` event) or no answer at all.
  if (OVERLOADED.test(f.message)) return "overloaded"
  if (f.connectionLost) return "connection"
  return should === "true" ? "status" : undefined
}

/** The wait the provider asked for (`retry-after-ms`, or `retry-after` in seconds or as an HTTP date). */
export const serverDelayMs = (headers: Headers | undefined, nowMs: number): number | undefined => {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "")
  if (Number.isFinite(ms) && ms >= 0) return ms
  const after = headers?.get("retry-after")?.trim()
  if (after === undefined || after === "") return undefined
  if (/^\d+(\.\d+)?$/.test(after)) return Number.parseFloat(after) * 1000
  const date = Date.parse(after)
  return Number.isFinite(date) ? Math.max(0, date - nowMs) : undefined
}

/** Exponential backoff for retry number `retryIndex` (0-based), `random` in [0, 1) for the jitter. */
export const backoffMs = (policy: RetryPolicy, retryIndex: number, random: number): number => {
  const exponential = Math.min(policy.baseDelayMs * 2 ** retryIndex, policy.maxDelayMs)
  return Math.round(exponential * (1 - random * 0.25))
}

/**
 * Retry or give up after the failure of retry number `retryIndex` (0 = the first attempt failed).
 * A wait that would reach the deadline is not started.
 */
export const decideRetry = (
  policy: RetryPolicy,
  failure: AttemptFailure,
  retryIndex: number,
  remainingMs: number,
  nowMs: number,
  random: number
): RetryDecision => {
  const cause = retryCause(failure)
  if (cause === undefined) return { _tag: "GiveUp", why: "final" }
  if (failure.streamed) return { _tag: "GiveUp", why: "streamed" }
  if (retryIndex >= policy.maxRetries) return { _tag: "GiveUp", why: "attempts" }
  const requested = serverDelayMs(failure.headers, nowMs)
  const waitMs = requested ?? backoffMs(policy, retryIndex, random)
  if (waitMs >= remainingMs) return { _tag: "GiveUp", why: "deadline" }
  return { _tag: "Retry", waitMs, cause, serverRequested: requested !== undefined }
}

/** The planned wait itself, on Effect's Clock (so `TestClock` drives it in tests). */
export const waitPlanned = (waitMs: number): Effect.Effect<void> => Effect.sleep(Duration.millis(waitMs))
