/**
 * The per-job limits service: timeoutSec and the idle watchdog on Effect's Clock, maxTurns, the
 * budget (with the usage totals it is measured on, reported as `usage` events) and the loop guard.
 */
import type { Usage } from "@earendil-works/pi-ai"
import { Clock, Context, Duration, Effect } from "effect"
import type { Limits as JobLimits, JobResume } from "../contract/JobSpec.ts"
import { BudgetExceeded, JobTimedOut, TurnLimitReached } from "./errors.ts"
import { JobEvents } from "./JobEvents.ts"
import { RepeatGuard, StreamGuard, type RepeatVerdict } from "./LoopGuard.ts"

export class Limits extends Context.Tag("job/Limits")<
  Limits,
  {
    /** Notes model or tool progress for the idle watchdog. Callable from any callback; never fails. */
    readonly progress: () => void
    /** Milliseconds left before timeoutSec (never negative), on the job's Clock. */
    readonly remainingMs: Effect.Effect<number>
    /** Runs a planned wait (a retry backoff): the watchdog ignores it, and the idle count restarts after it. */
    readonly plannedWait: <A, E, R>(wait: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    /** Runs the job's work under timeoutSec (counted from the job's start) and the idle watchdog. */
    readonly enforce: <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.Effect<A, E | JobTimedOut, R>
    /** Starts a turn and returns its number; fails at maxTurns or once the budget is spent. */
    readonly beginTurn: Effect.Effect<number, TurnLimitReached | BudgetExceeded>
    /**
     * Adds one model call's usage to the totals, emits the `usage` event, and fails when the cost
     * now passes maxCostUsd. Every call counts: failed attempts and compaction summaries too.
     */
    readonly charge: (usage: Usage) => Effect.Effect<void, BudgetExceeded>
    /** Counts one compaction, and whether it made a summary request (usage fields). */
    readonly compacted: (summarised: boolean) => void
    /** The loop guard's verdict on one finished tool call (blocked calls included). */
    readonly toolCall: (tool: string, args: unknown, success: boolean, answer: string) => RepeatVerdict
    /** A fresh streaming guard for one model call. */
    readonly streamGuard: () => StreamGuard
  }
>() {}

/** The model the totals are for: its label on `usage` events and its window (contextPeakPercent). */
export interface MeteredModel {
  readonly label: string
  readonly contextWindow: number
}

/** What earlier runs of a resumed job spent (JobResume's `spent`): the totals start from it. */
export type Spent = JobResume["spent"]

/**
 * The service for one job; the deadline starts now, less what `spent` says the job took before (a
 * resumed job: its limits count the whole job). Needs JobEvents for the `usage` events.
 */
export const make = (limits: JobLimits, model: MeteredModel, spent?: Spent): Effect.Effect<Limits["Type"], never, JobEvents> =>
  Effect.gen(function* () {
    const events = yield* JobEvents
    const clock = yield* Effect.clock
    const timeoutMs = limits.timeoutSec * 1000
    const deadline = clock.unsafeCurrentTimeMillis() + timeoutMs - (spent?.elapsedMs ?? 0)
    const idleSec = limits.idleTimeoutSec ?? 0
    const idleMs = idleSec * 1000
    let last = clock.unsafeCurrentTimeMillis()
    let waiting = 0
    const progress = () => {
      last = clock.unsafeCurrentTimeMillis()
    }
    const watchdog = Effect.gen(function* () {
      while (true) {
        const now = yield* Clock.currentTimeMillis
        if (waiting === 0 && now - last >= idleMs) {
          return yield* Effect.fail(new JobTimedOut({ limit: "idleTimeoutSec", seconds: idleSec }))
        }
        yield* Effect.sleep(Duration.millis(waiting > 0 ? idleMs : last + idleMs - now))
      }
    })
    const totals = {
      input: spent?.inputTokens ?? 0,
      output: spent?.outputTokens ?? 0,
      cacheRead: spent?.cacheReadTokens ?? 0,
      cacheWrite: spent?.cacheWriteTokens ?? 0,
      costUsd: spent?.costUsd ?? 0,
      turns: spent?.turns ?? 0,
      peak: spent?.contextPeakPercent ?? 0,
      compactions: spent?.compactions ?? 0,
      summaries: spent?.compactionSummaries ?? 0
    }
    const overBudget = (strict: boolean) => {
      const max = limits.maxCostUsd
      return max !== undefined && (strict ? totals.costUsd > max : totals.costUsd > 0 && totals.costUsd >= max)
        ? Effect.fail(new BudgetExceeded({ costUsd: totals.costUsd, maxCostUsd: max }))
        : Effect.void
    }
    const repeats = new RepeatGuard()
    return {
      progress,
      remainingMs: Effect.map(Clock.currentTimeMillis, (now) => Math.max(0, deadline - now)),
      plannedWait: (wait) =>
        Effect.acquireUseRelease(
          Effect.sync(() => waiting++),
          () => wait,
          () =>
            Effect.sync(() => {
              waiting--
              progress()
            })
        ),
      enforce: (work) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          work.pipe(
            Effect.raceFirst(idleMs > 0 ? watchdog : Effect.never),
            Effect.timeoutFail({
              duration: Duration.millis(Math.max(0, deadline - now)),
              onTimeout: () => new JobTimedOut({ limit: "timeoutSec", seconds: limits.timeoutSec })
            })
          )
        ),
      beginTurn: Effect.suspend((): Effect.Effect<number, TurnLimitReached | BudgetExceeded> => {
        const maxTurns = limits.maxTurns ?? 0
        if (maxTurns > 0 && totals.turns >= maxTurns) return Effect.fail(new TurnLimitReached({ maxTurns }))
        return Effect.zipRight(
          overBudget(false),
          Effect.sync(() => ++totals.turns)
        )
      }),
      charge: (u) =>
        Effect.suspend(() => {
          totals.input += u.input
          totals.output += u.output
          totals.cacheRead += u.cacheRead
          totals.cacheWrite += u.cacheWrite
          totals.costUsd += u.cost.total
          const context = u.input + u.cacheRead + u.cacheWrite + u.output
          totals.peak = Math.max(totals.peak, Math.round((context / model.contextWindow) * 10000) / 100)
          events.emitNow({
            type: "usage",
            model: model.label,
            inputTokens: totals.input,
            outputTokens: totals.output,
            cacheReadTokens: totals.cacheRead,
            cacheWriteTokens: totals.cacheWrite,
            costUsd: totals.costUsd,
            turns: totals.turns,
            compactions: totals.compactions,
            contextPeakPercent: totals.peak,
            compactionSummaries: totals.summaries
          })
          return overBudget(true)
        }),
      compacted: (summarised) => {
        totals.compactions += 1
        if (summarised) totals.summaries += 1
      },
      toolCall: (tool, args, success, answer) => repeats.record(tool, args, success, answer),
      streamGuard: () => new StreamGuard()
    }
  })
