/**
 * The errors a job's own services fail with, shared by the kernel and the tools: the limits (time,
 * turns, budget) and the loop guard. The kernel maps them to `job.failed` reasons (kernel/errors.ts).
 */
import { Schema } from "effect"

/** `timeoutSec` passed, or nothing made progress for `idleTimeoutSec`. */
export class JobTimedOut extends Schema.TaggedError<JobTimedOut>()("JobTimedOut", {
  limit: Schema.Literal("timeoutSec", "idleTimeoutSec"),
  seconds: Schema.Number
}) {
  override get message(): string {
    return this.limit === "timeoutSec"
      ? `the job exceeded timeoutSec (${this.seconds} s)`
      : `no model or tool progress for idleTimeoutSec (${this.seconds} s)`
  }
}
export class TurnLimitReached extends Schema.TaggedError<TurnLimitReached>()("TurnLimitReached", {
  maxTurns: Schema.Number
}) {
  override get message(): string {
    return `the job reached maxTurns (${this.maxTurns}) before the model finished`
  }
}
export class BudgetExceeded extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
  costUsd: Schema.Number,
  maxCostUsd: Schema.Number
}) {
  override get message(): string {
    return `the job spent $${this.costUsd.toFixed(6)}, over maxCostUsd ($${this.maxCostUsd})`
  }
}
/** The loop guard stopped the job; `message` is the spec's "stopped: …" sentence. */
export class LoopDetected extends Schema.TaggedError<LoopDetected>()("LoopDetected", { message: Schema.String }) {}
