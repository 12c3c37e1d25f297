/**
 * The kernel as an Effect layer: `AgentRuntime.start` validates a job, then runs it in its own
 * fiber under the job's limits (timeoutSec, idleTimeoutSec, abort). Every process the job started
 * is dead and every span settled before the one terminal event is emitted.
 */
import { cleanupSessionResources } from "@earendil-works/pi-ai"
import { Cause, Deferred, Duration, Effect, Exit, Layer, Option, Queue, Scope, Stream } from "effect"
import { AgentRuntime, JobRefused, type JobBoundary, type JobHandle, type JobOutcome } from "../contract/AgentRuntime.ts"
import type { JobEvent } from "../contract/JobEvent.ts"
import type { ProviderConfig } from "../contract/ProviderConfig.ts"
import { ProcessRunner, processRunnerLayer, type RunnerOptions } from "../tools/ProcessRunner.ts"
import { openMcpTools } from "../tools/mcp/mcpTools.ts"
import { createKernelTools } from "../tools/registry.ts"
import type { KernelTool } from "../tools/Tool.ts"
import { Sandbox, type SandboxConfig, sandboxConfigFromEnv, SandboxLive, type SandboxShape } from "../tools/Sandbox.ts"
import { agentLoop } from "./agentLoop.ts"
import { DEFECT_MESSAGE, failureReason, JobAborted, JobTimedOut, type KernelError } from "./errors.ts"
import { EventSink } from "./EventSink.ts"
import { makeJobModels, type JobModels } from "./PiAiModels.ts"
import { prepareJob, processToolGrants, type PreparedJob } from "./prepareJob.ts"
import { Redactor } from "./Redactor.ts"
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retryPolicy.ts"
import { Spans } from "./Spans.ts"

export const RUNTIME_VERSION = "0.1.0"

export interface KernelConfig {
  /** Provider configs with their keys; held in memory only. */
  readonly providers: ReadonlyArray<ProviderConfig>
  /** Diagnostics (never secrets: passed through the job's redactor). Default: dropped. */
  readonly diagnostics?: (line: string) => void
  /** Where the workspace may lie (the envelope's `boundary`); absent = the caller is trusted with its paths. */
  readonly boundary?: JobBoundary | undefined
  /** How shell and git are confined. Default: KINTSUGI_SANDBOX from the environment. */
  readonly sandbox?: SandboxConfig
  /** Prefix of every process run token (set by the worker, so it can sweep leftovers). */
  readonly runTokenPrefix?: string
  /** How failed model calls are retried (docs/kernel.md "Retries"). Default: `DEFAULT_RETRY_POLICY`. */
  readonly retry?: Partial<RetryPolicy>
}

/** Longest `job.failed` message: a provider's error body can be kilobytes. */
const MAX_FAILURE_MESSAGE = 1000

/** Redacted first, then cut, so no cut can leave half a secret that the redactor no longer recognises. */
const failureText = (redactor: Redactor, message: string): string => {
  const text = redactor.redact(message)
  return text.length > MAX_FAILURE_MESSAGE ? `${text.slice(0, MAX_FAILURE_MESSAGE)}…` : text
}

const isTerminal = (e: JobEvent) => e.type === "job.completed" || e.type === "job.failed"

/** The idle watchdog: fails once nothing made progress for `idleMs` outside planned waits. Never succeeds. */
const watchdog = (idleMs: number, lastProgress: () => number, paused: () => boolean, seconds: number) =>
  Effect.gen(function* () {
    const tick = Duration.millis(Math.min(1000, Math.max(10, idleMs / 4)))
    while (true) {
      yield* Effect.sleep(tick)
      if (!paused() && Date.now() - lastProgress() > idleMs) {
        return yield* Effect.fail(new JobTimedOut({ limit: "idleTimeoutSec", seconds }))
      }
    }
  })

const runPrepared = (
  jobId: string,
  prepared: PreparedJob,
  jobModels: JobModels,
  sink: EventSink,
  redactor: Redactor,
  abort: Deferred.Deferred<void>,
  diagnostics: (line: string) => void,
  runner: RunnerOptions,
  retry: RetryPolicy,
  mcpTools: ReadonlyArray<KernelTool> = [] // [mcp] issue 11
): Effect.Effect<JobOutcome> =>
  Effect.gen(function* () {
    const { spec } = prepared
    const spans = new Spans(sink, jobId)
    const jobSpanId = spans.newId()
    const startedAt = new Date()
    const t0 = performance.now()
    sink.emit({
      type: "job.started",
      runtimeVersion: RUNTIME_VERSION,
      agentId: spec.agent.id,
      agentVersion: spec.agent.version,
      metadata: spec.metadata ?? {}
    })
    const timeoutMs = spec.limits.timeoutSec * 1000
    const deadline = Date.now() + timeoutMs
    let last = Date.now()
    const progress = () => {
      last = Date.now()
    }
    // A planned retry wait is progress-neutral: the watchdog skips it and the idle clock restarts after it.
    let waiting = 0
    const plannedWait = <A, E, R>(wait: Effect.Effect<A, E, R>) =>
      Effect.acquireUseRelease(
        Effect.sync(() => waiting++),
        () => wait,
        () =>
          Effect.sync(() => {
            waiting--
            progress()
          })
      )
    const loop = Effect.gen(function* () {
      const runner = yield* ProcessRunner
      return yield* agentLoop({
        jobId,
        job: prepared,
        jobModels,
        tools: [...createKernelTools(prepared.toolNames, runner), ...mcpTools], // [mcp] issue 11
        deny: prepared.deny,
        sink,
        spans,
        jobSpanId,
        progress,
        plannedWait,
        remainingMs: () => Math.max(0, deadline - Date.now()),
        retry
      })
      // The runner's scope ends with the loop: every process it started is killed before we go on.
    }).pipe(Effect.provide(processRunnerLayer(runner)))

    const idleSec = spec.limits.idleTimeoutSec ?? 0
    const guarded: Effect.Effect<string, KernelError> = loop.pipe(
      Effect.raceFirst(idleSec > 0 ? watchdog(idleSec * 1000, () => last, () => waiting > 0, idleSec) : Effect.never),
      Effect.raceFirst(Deferred.await(abort).pipe(Effect.zipRight(Effect.fail(new JobAborted())))),
      Effect.timeoutFail({
        duration: Duration.millis(timeoutMs),
        onTimeout: () => new JobTimedOut({ limit: "timeoutSec", seconds: spec.limits.timeoutSec })
      })
    )
    const exit = yield* Effect.exit(guarded)
    cleanupSessionResources(jobId)
    const outcome: JobOutcome = Exit.match(exit, {
      onSuccess: (summary) => ({ _tag: "Completed", summary }),
      onFailure: (cause) => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) {
          return { _tag: "Failed", reason: failureReason(failure.value), message: failureText(redactor, failure.value.message) }
        }
        if (Cause.isInterruptedOnly(cause)) return { _tag: "Failed", reason: "aborted", message: new JobAborted().message }
        diagnostics(redactor.redact(`job ${jobId}: defect: ${Cause.pretty(cause)}`))
        return { _tag: "Failed", reason: "error", message: DEFECT_MESSAGE }
      }
    })
    sink.emit({
      type: "span",
      name: "kintsugi.job",
      spanId: jobSpanId,
      start: startedAt.toISOString(),
      durationMs: Math.round((performance.now() - t0) * 1000) / 1000,
      status: outcome._tag === "Completed" ? "ok" : "error",
      attributes: {
        agentId: spec.agent.id,
        model: `${prepared.model.provider}/${prepared.model.id}`,
        "thinking.requested": prepared.thinking.requested,
        "thinking.effective": prepared.thinking.effective,
        "thinking.clamped": prepared.thinking.clamped,
        ...(outcome._tag === "Failed" ? { reason: outcome.reason } : {})
      }
    })
    sink.emit(
      outcome._tag === "Completed"
        ? { type: "job.completed", summary: outcome.summary }
        : { type: "job.failed", reason: outcome.reason, message: outcome.message }
    )
    return outcome
  })

/** Builds the runtime for one set of provider configs. */
export const makeAgentRuntime = (config: KernelConfig, sandbox: SandboxShape): AgentRuntime["Type"] => ({
  start: (job) =>
    Effect.gen(function* () {
      const { jobModels, problems } = yield* Effect.promise(() => makeJobModels(config.providers))
      // Only a job granting shell or git needs the sandbox (and pays for the one-time probe).
      const grants = processToolGrants(job)
      const refusal = grants.length === 0 ? undefined : yield* sandbox.refusal
      const sandboxProblems = refusal === undefined ? [] : grants.map((g) => ({ path: g.path, message: `${g.name} ${refusal}` }))
      const prepared = yield* prepareJob(job, jobModels, config.boundary, sandboxProblems).pipe(
        Effect.mapError((refused) => new JobRefused({ problems: [...problems, ...refused.problems] }))
      )
      if (problems.length > 0) return yield* Effect.fail(new JobRefused({ problems }))
      const jobId = crypto.randomUUID()
      const mcpSecrets = (prepared.spec.mcp?.servers ?? []).flatMap((s) => Object.values(s.headers ?? {}))
      const redactor = new Redactor([...jobModels.secrets, ...mcpSecrets])
      const queue = yield* Queue.unbounded<JobEvent>()
      const sink = new EventSink(redactor, (e) => Queue.unsafeOffer(queue, e))
      const abort = yield* Deferred.make<void>()
      // [mcp] issue 11: connect to the granted servers and list their tools (bounded); closed when the job's fiber ends.
      const mcpScope = yield* Scope.make()
      const mcpTools = yield* openMcpTools(prepared.spec.agent.tools, prepared.spec.mcp?.servers ?? [], {
        redact: (text) => redactor.redact(text),
        diagnostics: (line) => config.diagnostics?.(redactor.redact(`job ${jobId}: ${line}`))
      }).pipe(Scope.extend(mcpScope), Effect.onError(() => Scope.close(mcpScope, Exit.void)))
      // [/mcp]
      const status = grants.length === 0 ? undefined : yield* sandbox.status
      const runner: RunnerOptions = {
        ...(status?._tag === "Bwrap" ? { sandbox: { bwrap: status.bwrap, workspace: prepared.workspace } } : {}),
        ...(config.runTokenPrefix === undefined ? {} : { tokenPrefix: config.runTokenPrefix })
      }
      const fiber = yield* Effect.forkDaemon(
        runPrepared(jobId, prepared, jobModels, sink, redactor, abort, config.diagnostics ?? (() => {}), runner, {
          ...DEFAULT_RETRY_POLICY,
          ...config.retry
        }, mcpTools).pipe(Effect.ensuring(Scope.close(mcpScope, Exit.void))) // [mcp] issue 11
      )
      const handle: JobHandle = {
        id: jobId,
        events: Stream.fromQueue(queue).pipe(Stream.takeUntil(isTerminal)),
        result: fiber.await.pipe(
          Effect.map((exit) =>
            Exit.isSuccess(exit) ? exit.value : ({ _tag: "Failed", reason: "error", message: DEFECT_MESSAGE } as const)
          )
        ),
        abort: Deferred.succeed(abort, undefined).pipe(Effect.asVoid)
      }
      return handle
    })
})

/** The kernel layer an orchestrator provides: `AgentRuntime` over the given providers. */
export const KernelLive = (config: KernelConfig): Layer.Layer<AgentRuntime> =>
  Layer.effect(AgentRuntime, Effect.map(Sandbox, (sandbox) => makeAgentRuntime(config, sandbox))).pipe(
    Layer.provide(SandboxLive(config.sandbox ?? sandboxConfigFromEnv(process.env)))
  )
