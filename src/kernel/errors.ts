/**
 * The kernel's own typed errors (the model, the context window, the output contract, abort) and the
 * one exhaustive map from every error a job can fail with (these and the job's, ../job/errors.ts) to
 * the spec's `job.failed` reason. A new tag without a case here is a compile error.
 */
import { Schema } from "effect"
import type { FailureReason } from "../contract/JobEvent.ts"
import type { BudgetExceeded, JobTimedOut, LoopDetected, TurnLimitReached } from "../job/errors.ts"

/** The model provider failed (HTTP error, bad stream), or answered with nothing usable. */
export class LlmFailed extends Schema.TaggedError<LlmFailed>()("LlmFailed", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}
/** The conversation no longer fits the model's context window. */
export class ContextOverflow extends Schema.TaggedError<ContextOverflow>()("ContextOverflow", {
  message: Schema.String
}) {}
/** The agent's output contract (`outputs:`) was still violated after the model's one chance to fix it. */
export class OutputContractViolated extends Schema.TaggedError<OutputContractViolated>()("OutputContractViolated", {
  problems: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `the outputs violate the agent's contract: ${this.problems.join("; ")}`
  }
}
/** `abort()`, SIGTERM or SIGINT. */
export class JobAborted extends Schema.TaggedError<JobAborted>()("JobAborted", {}) {
  override get message(): string {
    return "the job was aborted"
  }
}

export type KernelError =
  | LlmFailed
  | ContextOverflow
  | JobTimedOut
  | TurnLimitReached
  | BudgetExceeded
  | LoopDetected
  | OutputContractViolated
  | JobAborted

export const failureReason = (e: KernelError): FailureReason => {
  switch (e._tag) {
    case "LlmFailed":
      return "error"
    case "ContextOverflow":
      return "context-overflow"
    case "JobTimedOut":
      return "timeout"
    case "TurnLimitReached":
      return "max-turns"
    case "BudgetExceeded":
      return "budget"
    case "LoopDetected":
      return "loop"
    case "OutputContractViolated":
      return "error"
    case "JobAborted":
      return "aborted"
  }
}

/** What a defect (a bug, not a failure) tells the outside: nothing about the inside. */
export const DEFECT_MESSAGE = "internal kernel error"
