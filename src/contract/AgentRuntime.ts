/**
 * The runtime's public face: start a job, watch its events, await its one outcome, abort it.
 * An orchestrator gets an `AgentRuntime` from the kernel layer; the job child is one consumer.
 */
import { Context, Effect, Schema, type Scope, Stream } from "effect"
import type { FailureReason, JobEvent } from "./JobEvent.ts"
import { SKILL_NAME } from "./AgentDefinition.ts"
import { JobSpec } from "./JobSpec.ts"
import { Problem } from "./Problem.ts"
import { ProviderConfig } from "./ProviderConfig.ts"

/** The job was not started: every problem of the spec at once. */
export class JobRefused extends Schema.TaggedError<JobRefused>()("JobRefused", {
  problems: Schema.Array(Problem)
}) {
  override get message(): string {
    return this.problems.map((p) => `${p.path}: ${p.message}`).join("; ")
  }
}

export type JobOutcome =
  | { readonly _tag: "Completed"; readonly summary: string; readonly answer?: unknown }
  | { readonly _tag: "Failed"; readonly reason: FailureReason; readonly message: string }

export interface JobHandle {
  readonly id: string
  /** Every event of the job in `seq` order, ending with the terminal event. Single consumer. */
  readonly events: Stream.Stream<JobEvent>
  /**
   * Completes once, after the terminal event was emitted and every child process is dead. Interrupting
   * the fiber that awaits it aborts the job; the interruption completes once the job has ended.
   */
  readonly result: Effect.Effect<JobOutcome>
  /** Ends the job as `aborted` (idempotent; no effect once the job has ended). Does not wait for the end. */
  readonly abort: Effect.Effect<void>
}

const AbsolutePath = Schema.String.pipe(
  Schema.filter((p) =>
    p.startsWith("/") && !/[\u0000-\u001f]/.test(p) ? undefined : "must be an absolute path without control characters"
  )
)

/**
 * Where the job's workspace may lie (ARCHITECTURE §10): every path must resolve inside one of
 * `jobRoots` and never inside or above a `forbidden` path (a root inside a forbidden path carves out
 * that subtree). Set by the worker; a standalone caller may leave it out.
 */
export const JobBoundary = Schema.Struct({
  jobRoots: Schema.Array(AbsolutePath),
  forbidden: Schema.Array(AbsolutePath)
})
export type JobBoundary = typeof JobBoundary.Type

/**
 * One resource file of a shared skill the agent lists (stored with an imported Agent Skill). The job
 * child shows it read-only at `/skills/<skill>/<path>`; it checks the path again before writing it.
 */
export const SkillFile = Schema.Struct({
  skill: Schema.String.pipe(Schema.pattern(SKILL_NAME, { message: () => "skill name must match [a-z][a-z0-9-]*" }), Schema.maxLength(64)),
  path: Schema.String,
  contentBase64: Schema.String
})
export type SkillFile = typeof SkillFile.Type

/** The job child's stdin document (ARCHITECTURE §5). */
export const JobEnvelope = Schema.Struct({
  job: Schema.Unknown,
  providers: Schema.Array(ProviderConfig),
  skillFiles: Schema.optionalWith(Schema.Array(SkillFile), { exact: true }),
  /** The worker-bound services channel; `transcript`: hand each model turn to its `transcript` endpoint. */
  services: Schema.optionalWith(
    Schema.Struct({ url: Schema.String, token: Schema.String, transcript: Schema.optionalWith(Schema.Boolean, { exact: true }) }),
    { exact: true }
  ),
  boundary: Schema.optionalWith(JobBoundary, { exact: true })
})
export type JobEnvelope = typeof JobEnvelope.Type

export class AgentRuntime extends Context.Tag("contract/AgentRuntime")<
  AgentRuntime,
  {
    /**
     * Starts a typed job (untrusted documents go through the kernel's `decodeJob` first, once).
     * Refuses with every problem the environment finds at once: workspace paths that are missing,
     * overlap or lie outside the boundary, an unknown provider or model, tools this runtime cannot
     * create, shell or git without the sandbox they need.
     *
     * The job runs in a fiber forked into the caller's `Scope`: closing the scope, interrupting the
     * fiber awaiting `result`, or `abort` ends it as `aborted` (terminal event emitted, every process
     * of the job dead, spans settled). It is never a detached daemon.
     */
    readonly start: (spec: JobSpec) => Effect.Effect<JobHandle, JobRefused, Scope.Scope>
  }
>() {}

export { JobSpec }
