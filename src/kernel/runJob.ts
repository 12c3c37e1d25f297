/**
 * One job from `job.started` to its terminal event: its per-job services built once job.started is
 * out (all but its events, which job.started goes out through), the loop under the job's limits, the
 * outcome from its exit (interruption = aborted), then the `kintsugi.job` span and the terminal
 * event, after every process of the job is dead and every span settled.
 */
import { cleanupSessionResources } from "@earendil-works/pi-ai/session-resources"
import { Cause, Clock, Context, Deferred, Effect, Exit, Option } from "effect"
import type { JobOutcome } from "../contract/AgentRuntime.ts"
import type { Problem } from "../contract/Problem.ts"
import type { ProcessRunner, RunnerOptions } from "../tools/ProcessRunner.ts"
import type { McpKernelTool } from "../tools/mcp/mcpTools.ts"
import type { KernelTool } from "../tools/Tool.ts"
import { createKernelTools } from "../tools/registry.ts"
import type { Workspace } from "../job/Workspace.ts"
import { agentLoop, historyProblem, type LoopJob } from "./agentLoop.ts"
import { DEFECT_MESSAGE, failureReason, JobAborted } from "./errors.ts"
import { checkGrounding, groundingFailure } from "./grounding.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import type { Llm } from "./Llm.ts"
import type { PreparedJob } from "./prepareJob.ts"
import { RUNTIME_VERSION } from "./runtimeVersion.ts"

/** Longest `job.failed` message: a provider's error body can be kilobytes. */
const MAX_FAILURE_MESSAGE = 1000
const cut = (text: string) => (text.length > MAX_FAILURE_MESSAGE ? `${text.slice(0, MAX_FAILURE_MESSAGE)}…` : text)

/** What a job runs with besides its services. */
export interface JobRunOptions {
  /** Gets defects, redacted. */
  readonly diagnostics: (line: string) => void
  /** How the job's processes run (sandbox, run token prefix). */
  readonly runner: RunnerOptions
  /** Completed with the outcome right after the terminal event (an interrupted fiber returns no value). */
  readonly outcome: Deferred.Deferred<JobOutcome>
  /** The offered tools of the job's MCP servers, connected at job start (after the kernel tools). */
  readonly mcpTools?: ReadonlyArray<McpKernelTool>
  /** The memory and web tools the job got (served through the services channel), after the kernel tools. */
  readonly serviceTools?: ReadonlyArray<KernelTool>
  /** The job's other services, built once job.started is out (it waits for none of them). */
  readonly services: Effect.Effect<Context.Context<Limits | Llm | Workspace>, never, JobEvents>
}

/**
 * The spec: MCP tools are callable from codemode scripts when the agent has codemode (only the
 * read-only ones: a script may not change anything), declared to the model otherwise.
 */
const mcpSplit = (prepared: PreparedJob, mcpTools: ReadonlyArray<McpKernelTool> | undefined) => {
  const mcp = mcpTools ?? []
  const viaCodemode = prepared.toolNames.includes("codemode") ? mcp.filter((t) => t.readOnly) : []
  return { viaCodemode, declared: mcp.filter((t) => !viaCodemode.includes(t)) }
}

type ToolOptions = Pick<JobRunOptions, "runner" | "mcpTools" | "serviceTools">

/**
 * `use` with the loop's job: the kernel tools (created over the job's process runner), the service
 * tools, the declared MCP tools, in prompt order. The runner's scope ends with `use`: every process
 * it started is dead before this returns.
 */
const withLoopJob = <A, E, R>(
  prepared: PreparedJob,
  options: ToolOptions,
  use: (job: LoopJob) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, ProcessRunner>> => {
  const { viaCodemode, declared } = mcpSplit(prepared, options.mcpTools)
  return Effect.flatMap(
    Effect.promise(() => import("../tools/ProcessRunner.ts")),
    ({ ProcessRunner, processRunnerLayer }) =>
      Effect.flatMap(ProcessRunner, (runner) =>
        Effect.flatMap(createKernelTools(prepared.toolNames, runner, viaCodemode), (kernelTools) =>
          use({
            spec: prepared.spec,
            tools: [...kernelTools, ...(options.serviceTools ?? []), ...declared],
            deny: prepared.deny,
            ...(prepared.skillFiles === undefined ? {} : { skillFiles: prepared.skillFiles })
          })
        )
      ).pipe(Effect.provide(processRunnerLayer(options.runner)))
  )
}

/**
 * The problem of a job's `history` that belongs to another prompt than the one this job sends
 * (historyProblem), its tools built as the loop builds them; undefined without a history or when it fits.
 */
export const historyRefusal = (prepared: PreparedJob, options: ToolOptions): Effect.Effect<Problem | undefined> =>
  prepared.spec.history === undefined
    ? Effect.succeed(undefined)
    : withLoopJob(prepared, options, (job) => Effect.succeed(historyProblem(job)))

/**
 * Runs the job and returns its outcome; never fails.
 * Interrupting the fiber running it ends the job as `aborted`: the loop is interrupted (its
 * processes killed by the runner's finalizer, its spans settled), then the job span and the terminal
 * event are emitted all the same.
 */
export const runJob = (prepared: PreparedJob, options: JobRunOptions): Effect.Effect<JobOutcome, never, JobEvents> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const events = yield* JobEvents
      const { spec, model, thinking } = prepared
      const jobSpanId = events.newSpanId()
      const start = yield* Clock.currentTimeMillis
      const t0 = yield* Clock.currentTimeNanos
      const { declared } = mcpSplit(prepared, options.mcpTools)
      const serviceTools = options.serviceTools ?? []
      // A resumed job started once already: its events go on from the earlier runs' (JobResume).
      if (spec.resume === undefined)
        yield* events.emit({
          type: "job.started",
          runtimeVersion: RUNTIME_VERSION,
          agentId: spec.agent.id,
          agentVersion: spec.agent.version,
          metadata: spec.metadata ?? {},
          // What the job got, in prompt order: a tool asked for and not granted (memory off, say) is not silent.
          tools: [...prepared.toolNames, ...serviceTools.map((t) => t.name), ...declared.map((t) => t.name)]
        })
      // The process runner and the tools are loaded after job.started (a cold child emits it sooner).
      const loop = withLoopJob(prepared, options, agentLoop)
      // Built inside the job's run: a defect while building them ends the job like any other (job.failed).
      let services: Context.Context<Limits | Llm | Workspace> | undefined
      const exit = yield* Effect.exit(
        restore(
          Effect.flatMap(options.services, (built) => {
            services = built
            return events.withParent(jobSpanId, Effect.provide(Context.get(built, Limits).enforce(loop), built))
          })
        )
      )
      cleanupSessionResources(events.jobId)
      const ended: JobOutcome = Exit.match(exit, {
        onSuccess: ({ summary, answer }) => ({ _tag: "Completed", summary, ...(answer === undefined ? {} : { answer }) }),
        onFailure: (cause) => {
          const failure = Cause.failureOption(cause)
          if (Option.isSome(failure)) {
            // Redacted first, then cut, so no cut leaves half a secret the redactor no longer recognises.
            return { _tag: "Failed", reason: failureReason(failure.value), message: cut(events.redact(failure.value.message)) }
          }
          if (Cause.isInterruptedOnly(cause)) return { _tag: "Failed", reason: "aborted", message: new JobAborted().message }
          options.diagnostics(events.redact(`job ${events.jobId}: defect: ${Cause.pretty(cause)}`))
          return { _tag: "Failed", reason: "error", message: DEFECT_MESSAGE }
        }
      })
      // The grounding check of a completed job (docs/grounding.md): its citations against its reads.
      const grounding =
        ended._tag === "Completed" && services !== undefined
          ? yield* Effect.provide(checkGrounding(events.outputs(), ended.summary, events.shown()), services)
          : undefined
      const required = spec.agent.grounding === "required"
      if (grounding !== undefined) yield* events.emit({ type: "grounding", ...grounding, required })
      const outcome: JobOutcome =
        grounding !== undefined && required && grounding.ungrounded > 0
          ? { _tag: "Failed", reason: "error", message: cut(events.redact(groundingFailure(grounding))) }
          : ended
      const t1 = yield* Clock.currentTimeNanos
      yield* events.emit({
        type: "span",
        name: "kintsugi.job",
        spanId: jobSpanId,
        start: new Date(start).toISOString(),
        durationMs: Math.round(Number(t1 - t0) / 1000) / 1000,
        status: outcome._tag === "Completed" ? "ok" : "error",
        attributes: {
          agentId: spec.agent.id,
          model: `${model.provider}/${model.id}`,
          "thinking.requested": thinking.requested,
          "thinking.effective": thinking.effective,
          "thinking.clamped": thinking.clamped,
          ...(outcome._tag === "Failed" ? { reason: outcome.reason } : {}),
          // Counts only: the citations themselves are in the grounding event.
          ...(grounding === undefined
            ? {}
            : {
                "grounding.grounded": grounding.grounded,
                "grounding.ungrounded": grounding.ungrounded,
                "grounding.unknown": grounding.unknown
              })
        }
      })
      yield* events.emit(
        outcome._tag === "Completed"
          ? { type: "job.completed", summary: outcome.summary, ...(outcome.answer === undefined ? {} : { answer: outcome.answer }) }
          : { type: "job.failed", reason: outcome.reason, message: outcome.message }
      )
      yield* Deferred.succeed(options.outcome, outcome)
      return outcome
    })
  )
