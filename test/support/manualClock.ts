/**
 * A clock that moves only when told: `advance(ms)` moves it, and `sleep(d)` returns at once having
 * moved it by `d` (recorded in `slept`), so code that waits can be tested without waiting.
 */
import { Clock, Duration, Effect } from "effect"

export interface ManualClock {
  readonly clock: Clock.Clock
  readonly advance: (ms: number) => void
  /** Every wait asked of the clock, in milliseconds, in order. */
  readonly slept: ReadonlyArray<number>
}

export const manualClock = (start = 1_000_000): ManualClock => {
  let now = start
  const slept: Array<number> = []
  const clock: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => now,
    currentTimeMillis: Effect.sync(() => now),
    unsafeCurrentTimeNanos: () => BigInt(now) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(now) * 1_000_000n),
    sleep: (d) =>
      Effect.sync(() => {
        const ms = Duration.toMillis(d)
        slept.push(ms)
        now += ms
      })
  }
  return { clock, advance: (ms) => void (now += ms), slept }
}
