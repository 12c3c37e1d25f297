/**
 * The kernel as an Effect layer: `AgentRuntime.start` checks a typed job against the environment,
 * builds its per-job services (Workspace, Llm, JobEvents, Limits) and runs it in a fiber forked
 * into the caller's scope: closing the scope or interrupting the fiber awaiting `result` aborts it.
 */
import type { Message } from "@earendil-works/pi-ai"
import { Context, Deferred, Effect, ExecutionStrategy, Exit, Fiber, Layer, Option, Queue, Scope, Stream } from "effect"
import { AgentRuntime, JobRefused, type JobBoundary, type JobHandle, type JobOutcome, type SkillFile } from "../contract/AgentRuntime.ts"
import type { JobEvent } from "../contract/JobEvent.ts"
import type { JobSpec } from "../contract/JobSpec.ts"
import type { Problem } from "../contract/Problem.ts"
import type { ProviderConfig } from "../contract/ProviderConfig.ts"
import { mcpGrantsOf } from "../tools/mcp/mcpGrants.ts"
import type { McpKernelTool } from "../tools/mcp/mcpTools.ts"
import type { ServiceChannelConfig } from "../tools/services/ServiceChannel.ts"
import type { KernelTool } from "../tools/Tool.ts"
import { requestedServiceTools } from "../contract/AgentDefinition.ts"
import { appendFileSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_RESOURCES, jobSessionsFile, jobTmpPrefix, lowerResources } from "../tools/jobResources.ts"
import type { RunnerOptions } from "../tools/ProcessRunner.ts"
import {
  closeMountHandles,
  makeSandbox,
  openMountHandles,
  Sandbox,
  type SandboxConfig,
  sandboxConfig,
  SandboxLive,
  type SandboxShape
} from "../tools/Sandbox.ts"
import type { JobParts } from "./decodeJob.ts"
import { DEFECT_MESSAGE } from "./errors.ts"
import * as JobEvents from "../job/JobEvents.ts"
import * as JobServices from "../job/JobServices.ts"
import * as Transcript from "../job/Transcript.ts"
import type { Limits } from "../job/Limits.ts"
import { Llm, recordingTranscript, type TranscriptStart } from "./Llm.ts"
import { makePiAiLlm } from "./PiAiLlm.ts"
import { makeJobModels, type JobModels } from "./PiAiModels.ts"
import { checkJob, prepareJob, type JobEnvironment, type PreparedJob } from "./prepareJob.ts"
import { Redactor } from "../job/Redactor.ts"
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retryPolicy.ts"
import { historyRefusal, runJob } from "./runJob.ts"
import { materializeSkillFiles } from "./skillFiles.ts"

export { RUNTIME_VERSION } from "./runtimeVersion.ts"

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
  /**
   * The envelope's worker-bound services channel. Absent: no memory or web tool is created, whatever
   * the agent asks for, and no transcript is kept. Its token is a secret (registered in the job's
   * redactor). With `transcript`, each answered model call is handed to the worker as one turn.
   */
  readonly services?: ServiceChannelConfig | undefined
  /** The resource files of the agent's shared skills (the envelope's `skillFiles`), shown read-only at /skills. */
  readonly skillFiles?: ReadonlyArray<SkillFile> | undefined
  /**
   * Gets each event as it is emitted, before the handle's `events` stream has it (the job child writes
   * it to stdout at once: job.started does not wait for the job fiber to yield). Must not throw.
   */
  readonly onEvent?: ((event: JobEvent) => void) | undefined
}

/** What the per-job `Llm` is built from; the live one is pi-ai's. */
interface LlmJob {
  readonly jobId: string
  readonly prepared: PreparedJob
  readonly jobModels: JobModels
  readonly retry: RetryPolicy
}
export type MakeLlm = (job: LlmJob) => Effect.Effect<Llm["Type"], never, JobEvents.JobEvents | Limits>

export const piAiLlm: MakeLlm = ({ jobId, prepared, jobModels, retry }) =>
  makePiAiLlm({ jobId, jobModels, model: prepared.model, thinking: prepared.thinking.effective, retry })

const environment = (config: KernelConfig, sandbox: SandboxShape): Effect.Effect<JobEnvironment> =>
  Effect.map(
    Effect.promise(() => makeJobModels(config.providers)),
    ({ jobModels, problems }) => ({
      jobModels,
      providerProblems: problems,
      boundary: config.boundary,
      sandbox
    })
  )

/**
 * Memory and web tools: only with a channel, and only those the worker left in the job's grants. Their
 * modules are loaded only then (a job child loads what its job's tools need).
 */
const grantedServiceTools = (
  tools: ReadonlyArray<string> | undefined,
  services: ServiceChannelConfig | undefined
): Effect.Effect<ReadonlyArray<KernelTool>> => {
  const requested = requestedServiceTools(tools)
  if (services === undefined || requested.length === 0) return Effect.succeed([])
  return Effect.promise(() =>
    Promise.all([import("../tools/services/serviceTools.ts"), import("../tools/services/ServiceChannel.ts")])
  ).pipe(Effect.map(([{ createServiceTools }, { makeServiceChannel }]) => createServiceTools(requested, makeServiceChannel(services))))
}

/** The config's sandbox, else KINTSUGI_SANDBOX through Config. */
const configuredSandbox = (config: KernelConfig): Effect.Effect<SandboxConfig> =>
  config.sandbox === undefined ? sandboxConfig : Effect.succeed(config.sandbox)

/**
 * Every problem the environment finds with what decoded of a refused job document (the job child
 * lists them beside decodeJob's, so one refusal names everything).
 */
export const jobProblems = (config: KernelConfig, parts: JobParts): Effect.Effect<ReadonlyArray<Problem>> =>
  Effect.flatMap(
    Effect.flatMap(configuredSandbox(config), (sandbox) => environment(config, makeSandbox(sandbox))),
    (env) => Effect.map(checkJob(parts, env), (checked) => checked.problems)
  )

/** Where a resumed job's transcript stands (its last answered turn and the conversation it left); undefined for a new job. */
const transcriptStart = (spec: JobSpec): TranscriptStart | undefined =>
  spec.resume === undefined
    ? undefined
    : {
        turn: spec.resume.turn,
        conversation: (spec.history?.messages ?? []).slice(0, spec.resume.answeredMessages).map((m) => m as unknown as Message)
      }

/** Builds the runtime for one set of provider configs; `llm` builds each job's model service. */
export const makeAgentRuntime = (config: KernelConfig, sandbox: SandboxShape, llm: MakeLlm = piAiLlm): AgentRuntime["Type"] => ({
  start: (spec) =>
    Effect.gen(function* () {
      const env = yield* environment(config, sandbox)
      const checked = yield* prepareJob(spec, env)
      // Written now, removed when the caller's scope closes (after the job's fiber, forked later, has ended).
      const listed = new Set((spec.agent.skills ?? []).map((s) => s.name))
      const skills = yield* materializeSkillFiles(config.skillFiles?.filter((f) => listed.has(f.skill)))
      const prepared: PreparedJob =
        skills === undefined
          ? checked
          : {
              ...checked,
              workspace: { ...checked.workspace, readOnly: [...checked.workspace.readOnly, skills.dir], skills: skills.dir },
              skillFiles: skills.listing
            }
      const jobId = crypto.randomUUID()
      const mcpSecrets = (spec.mcp?.servers ?? []).flatMap((s) => Object.values(s.headers ?? {}))
      const secrets = [...env.jobModels.secrets, ...mcpSecrets, ...(config.services === undefined ? [] : [config.services.token])]
      const serviceTools = yield* grantedServiceTools(spec.agent.tools, config.services)
      const queue = yield* Queue.unbounded<JobEvent>()
      const onEvent = config.onEvent
      const deliver =
        onEvent === undefined ? (e: JobEvent) => Queue.unsafeOffer(queue, e) : (e: JobEvent) => (onEvent(e), Queue.unsafeOffer(queue, e))
      const retry = { ...DEFAULT_RETRY_POLICY, ...config.retry }
      // The per-job services, built one after the other in the job's fiber (a graph of layers would
      // fork a fiber per layer): the events first, the others once job.started is out (runJob).
      const services = Effect.gen(function* () {
        const model = { label: `${prepared.model.provider}/${prepared.model.id}`, contextWindow: prepared.model.contextWindow }
        const base = yield* JobServices.make({
          limits: spec.limits,
          model,
          workspace: prepared.workspace,
          ...(spec.resume === undefined ? {} : { spent: spec.resume.spent })
        })
        const llmService = yield* Effect.provide(llm({ jobId, prepared, jobModels: env.jobModels, retry }), base)
        const channel = config.services
        if (channel?.transcript !== true) return Context.add(base, Llm, llmService)
        // Each answered model call goes to the worker as one transcript turn, over the services channel.
        const { makeTranscriptSender } = yield* Effect.promise(() => import("../tools/services/ServiceChannel.ts"))
        const report = (line: string) => config.diagnostics?.(redactor.redact(`job ${jobId}: ${line}`))
        const transcript = Transcript.make(makeTranscriptSender(channel), report)
        const recording = yield* Effect.provideService(
          recordingTranscript(llmService, transcriptStart(spec)),
          Transcript.Transcript,
          transcript
        )
        return Context.add(base, Llm, recording)
      })
      // The job's MCP connections live in a child of the caller's scope: closed when the job ends, when
      // the caller's scope closes, or at once when the job is refused. Discovery is bounded per server.
      const mcpScope = yield* Effect.flatMap(Effect.scope, (scope) => Scope.fork(scope, ExecutionStrategy.sequential))
      const closeMcp = Scope.close(mcpScope, Exit.void)
      const redactor = new Redactor(secrets)
      // The MCP client (and its SDK) is loaded only for a job that grants an MCP tool.
      const mcpTools: ReadonlyArray<McpKernelTool> =
        mcpGrantsOf(spec.agent.tools).length === 0
          ? []
          : yield* Effect.flatMap(
              Effect.promise(() => import("../tools/mcp/mcpTools.ts")),
              ({ openMcpTools }) =>
                openMcpTools(spec.agent.tools, spec.mcp?.servers ?? [], {
                  diagnostics: (line) => config.diagnostics?.(redactor.redact(`job ${jobId}: ${line}`))
                })
            ).pipe(
              Scope.extend(mcpScope),
              Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : closeMcp))
            )
      const sandboxed = prepared.sandbox?._tag === "Bwrap" ? prepared.sandbox : undefined
      const landlocked = prepared.sandbox?._tag === "Landlock" ? prepared.sandbox : undefined
      // The sandbox binds what was checked now, through handles, whatever the paths name later.
      const handles = sandboxed === undefined && landlocked === undefined ? [] : openMountHandles(prepared.workspace)
      if (handles === undefined) {
        yield* closeMcp
        return yield* Effect.fail(
          new JobRefused({
            problems: [{ path: "workspace", message: "changed while the job was starting (a path was replaced or is now a symbolic link)" }]
          })
        )
      }
      // Only a job that runs processes gets a temporary directory and bounds; removed when the caller's scope closes.
      const tmpDir = prepared.sandbox === undefined ? undefined : yield* jobTmpDir(config.runTokenPrefix)
      const runner: RunnerOptions = {
        ...(sandboxed === undefined ? {} : { sandbox: { bwrap: sandboxed.bwrap, workspace: prepared.workspace, handles } }),
        ...(landlocked === undefined
          ? {}
          : { landlock: { bun: landlocked.bun, script: landlocked.script, workspace: prepared.workspace, handles } }),
        ...(tmpDir === undefined
          ? {}
          : {
              tmpDir,
              outDir: prepared.workspace.outDir,
              resources: lowerResources(sandbox.config.resources ?? DEFAULT_RESOURCES, spec.limits.resources)
            }),
        ...(config.runTokenPrefix === undefined ? {} : { tokenPrefix: config.runTokenPrefix }),
        ...(landlocked === undefined || config.runTokenPrefix === undefined ? {} : { onSession: recordSession(config.runTokenPrefix) })
      }
      // A history must belong to the prompt this job sends (its tools built as the loop builds them).
      const historyProblem = yield* historyRefusal(prepared, { runner, mcpTools, serviceTools })
      if (historyProblem !== undefined) {
        closeMountHandles(handles)
        yield* closeMcp
        return yield* Effect.fail(new JobRefused({ problems: [historyProblem] }))
      }
      const outcome = yield* Deferred.make<JobOutcome>()
      // Forked into the caller's scope: closing it interrupts the job, which then ends as aborted.
      const fiber = yield* Effect.forkScoped(
        Effect.flatMap(JobEvents.make(jobId, redactor, deliver, spec.resume), (events) =>
          Effect.provideService(
            runJob(prepared, { diagnostics: config.diagnostics ?? (() => {}), runner, outcome, mcpTools, serviceTools, services }),
            JobEvents.JobEvents,
            events
          )
        ).pipe(
          Effect.ensuring(
            Effect.zipRight(
              Effect.sync(() => closeMountHandles(handles)),
              closeMcp
            )
          )
        )
      )
      const handle: JobHandle = {
        id: jobId,
        events: Stream.fromQueue(queue).pipe(Stream.takeUntil((e) => e.type === "job.completed" || e.type === "job.failed")),
        result: Fiber.await(fiber).pipe(
          Effect.zipRight(Deferred.poll(outcome)),
          Effect.flatMap((polled) =>
            Option.getOrElse(polled, () => Effect.succeed<JobOutcome>({ _tag: "Failed", reason: "error", message: DEFECT_MESSAGE }))
          ),
          // The awaiting fiber interrupted: the job is aborted, and this waits until it has ended.
          Effect.onInterrupt(() => Fiber.interrupt(fiber))
        ),
        abort: Effect.asVoid(Fiber.interruptFork(fiber))
      }
      return handle
    })
})

/**
 * A private temporary directory for one job's processes (0700), removed with everything in it when the
 * scope closes. Named after the run-token prefix, so the worker removes it too when the job child dies
 * without closing its scope (jobTmpPrefix).
 */
const jobTmpDir = (runPrefix: string | undefined): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), `${jobTmpPrefix(runPrefix ?? "")}-`))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/**
 * Appends each Landlock call's session id to the job's sessions file (created by this process, 0600;
 * a Landlock-confined job cannot write to the temporary directory it lies in), for the worker's sweep.
 */
const recordSession = (runPrefix: string) => (sid: number) => {
  try {
    appendFileSync(join(tmpdir(), jobSessionsFile(runPrefix)), `${sid}\n`, { mode: 0o600 })
  } catch {
    // Nothing to record into: the runner still kills the call's session itself when it ends.
  }
}

/** The kernel layer an orchestrator provides: `AgentRuntime` over the given providers. */
export const KernelLive = (config: KernelConfig): Layer.Layer<AgentRuntime> =>
  Layer.effect(
    AgentRuntime,
    Effect.map(Sandbox, (sandbox) => makeAgentRuntime(config, sandbox))
  ).pipe(Layer.provide(Layer.unwrapEffect(Effect.map(configuredSandbox(config), SandboxLive))))
