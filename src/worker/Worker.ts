/**
 * The worker: `KINTSUGI_WORKERS` loops per serve process, each claiming the oldest queued job, running
 * it in a job child under a lease renewed by a heartbeat, persisting every event and always settling the
 * job. Several processes on one PostgreSQL share the queue through `FOR UPDATE SKIP LOCKED`; a job whose
 * lease expired (its process died) is settled "worker lost" by the sweep of any of them.
 */
import { Cause, Config, Duration, Effect, Fiber, Layer, Option, Queue } from "effect"
import { hostname } from "node:os"
import type { AgentStore } from "../agents/AgentStore.ts"
import type { SkillStore } from "../agents/SkillStore.ts"
import type { Bindings } from "../providers/Bindings.ts"
import type { McpServers } from "../providers/McpServers.ts"
import type { ProviderStore } from "../providers/ProviderStore.ts"
import type { JobEvent } from "../contract/JobEvent.ts"
import { Metrics } from "../telemetry/Metrics.ts"
import { parseTraceParent } from "../telemetry/traceParent.ts"
import { buildEnvelope } from "./buildEnvelope.ts"
import { commitOutputs, gitLayout } from "./commitOutputs.ts"
import { Drain, SERVER_SHUTTING_DOWN } from "./Drain.ts"
import { JobBus } from "./JobBus.ts"
import type { JobRoots } from "./JobRoots.ts"
import { JobChildren } from "./child/JobChildren.ts"
import { CLI_PATH, runJobProcess } from "./child/JobProcess.ts"
import { JobStore, type JobRow, type Settlement } from "./JobStore.ts"
import { exportKernelSpans, toolNameCheck } from "./JobTrace.ts"
import { MemoryStore } from "./memory/MemoryStore.ts"
import type { Projects } from "./Projects.ts"
import type { ServiceHandlers, ServicesEndpoint } from "./Services.ts"
import { ServiceTokens } from "./ServiceTokens.ts"

export type WorkerServices =
  | JobStore
  | JobBus
  | AgentStore
  | SkillStore
  | Bindings
  | ProviderStore
  | McpServers
  | JobRoots
  | Projects
  | Metrics
  | ServiceHandlers
  | ServiceTokens
  | ServicesEndpoint
  | MemoryStore

const POLL = Duration.seconds(1)

/** How long a claimed job stays ours without a heartbeat, and how often the heartbeat renews it. */
export interface Lease {
  readonly leaseMs: number
  readonly heartbeatMs: number
}

/**
 * `KINTSUGI_JOB_LEASE` (default 15 s) and `KINTSUGI_JOB_HEARTBEAT` (default 5 s), in seconds; the
 * heartbeat is kept well inside the lease (at most a third of it).
 */
export const LeaseConfig: Effect.Effect<Lease> = Effect.map(
  Config.all({
    lease: Config.number("KINTSUGI_JOB_LEASE").pipe(Config.withDefault(15)),
    heartbeat: Config.number("KINTSUGI_JOB_HEARTBEAT").pipe(Config.withDefault(5))
  }).pipe(Effect.orElseSucceed(() => ({ lease: 15, heartbeat: 5 }))),
  ({ lease, heartbeat }) => {
    const leaseMs = (lease > 0 ? lease : 15) * 1000
    return { leaseMs, heartbeatMs: Math.min(heartbeat > 0 ? heartbeat * 1000 : 5000, leaseMs / 3) }
  }
)

/**
 * Renews the job's lease every heartbeat until interrupted; `onLost` is called once when the job is no
 * longer running under `workerId` (settled "worker lost" after a stall), so the child is stopped.
 */
const keepLease = (jobId: string, workerId: string, lease: Lease, onLost: () => void) =>
  Effect.flatMap(JobStore, (store) =>
    Effect.gen(function* () {
      while (true) {
        yield* Effect.sleep(Duration.millis(lease.heartbeatMs))
        const ours = yield* store.heartbeat(jobId, workerId, lease.leaseMs).pipe(
          Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("job heartbeat failed", cause), true))
        )
        if (!ours) {
          yield* Effect.logWarning("the job's lease was lost; stopping its process")
          return onLost()
        }
      }
    })
  ).pipe(Effect.withTracerEnabled(false))

type UsageTotals = Extract<JobEvent, { type: "usage" }>
type KernelSpan = Extract<JobEvent, { type: "span" }>

/** A failed job: its span ends in error (a fixed message, no stack). */
class JobFailedStatus extends Error {
  constructor() {
    super("the job failed")
    this.name = "JobFailed"
    this.stack = `${this.name}: ${this.message}`
  }
}

/**
 * Runs one claimed job to its settlement, renewing its lease meanwhile. Never fails: whatever happens,
 * the job is settled (by us, or — when we lost the lease — by the sweep, and then our child is stopped).
 * It runs in a `kintsugi.worker.job` span under the span that queued it (its `traceParent`), with the
 * job child's spans exported beneath; its lines carry `jobId`. Once `stopping` is true (the server's
 * drain is over) the job is aborted, and an aborted end is recorded as "server shutting down".
 */
export const runClaimedJob = (
  job: JobRow & { readonly traceParent?: string | null },
  lease: Lease,
  stopping: Effect.Effect<boolean> = Effect.succeed(false)
): Effect.Effect<void, never, WorkerServices> => {
  const started = Date.now()
  const kernelSpans: Array<KernelSpan> = []
  let usage: UsageTotals | undefined
  let grounding: Extract<JobEvent, { type: "grounding" }> | undefined
  let grants: ReadonlyArray<string> = []

  /** Metrics, the settled line and the span's outcome: once per job, however it ended. */
  const settled = (outcome: Settlement) =>
    Effect.gen(function* () {
      const seconds = (Date.now() - started) / 1000
      const reason = outcome.status === "failed" ? outcome.reason : null
      yield* (yield* Metrics).jobSettled({
        status: outcome.status,
        reason,
        seconds,
        ...(usage === undefined ? {} : { usage }),
        ...(grounding === undefined ? {} : { grounding })
      })
      const span = yield* Effect.option(Effect.currentSpan)
      if (span._tag === "Some") {
        span.value.attribute("kintsugi.job.status", outcome.status)
        if (reason !== null) span.value.attribute("error.type", reason)
        if (usage !== undefined) {
          span.value.attribute("gen_ai.usage.input_tokens", usage.inputTokens)
          span.value.attribute("gen_ai.usage.output_tokens", usage.outputTokens)
          span.value.attribute("gen_ai.usage.cache_read.input_tokens", usage.cacheReadTokens)
          span.value.attribute("gen_ai.usage.cache_creation.input_tokens", usage.cacheWriteTokens)
          span.value.attribute("kintsugi.job.cost_usd", usage.costUsd)
          span.value.attribute("kintsugi.job.turns", usage.turns)
        }
        if (grounding !== undefined) {
          // Counts only: a citation names a source path, which is the project's, not the trace's.
          span.value.attribute("kintsugi.grounding.grounded", grounding.grounded)
          span.value.attribute("kintsugi.grounding.ungrounded", grounding.ungrounded)
          span.value.attribute("kintsugi.grounding.unknown", grounding.unknown)
        }
        yield* exportKernelSpans(kernelSpans, span.value, toolNameCheck(grants))
      }
      const line = outcome.status === "completed" ? Effect.logInfo("job settled") : Effect.logWarning("job settled")
      yield* line.pipe(
        Effect.annotateLogs({
          status: outcome.status,
          ...(reason === null ? {} : { reason }),
          durationMs: Date.now() - started,
          ...(usage === undefined ? {} : { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, costUsd: usage.costUsd })
        })
      )
      if (outcome.status === "failed") return yield* Effect.fail(new JobFailedStatus())
    })

  const settleAs = (outcome: Settlement & { readonly status: "failed" }) =>
    Effect.zipRight(Effect.flatMap(JobStore, (store) => store.settle(job.id, outcome, null)), settled(outcome))

  const body = Effect.gen(function* () {
    const store = yield* JobStore
    const bus = yield* JobBus
    let lost = false
    const heartbeat = yield* Effect.fork(keepLease(job.id, job.workerId ?? "", lease, () => void (lost = true)))
    yield* Effect.addFinalizer(() => Fiber.interrupt(heartbeat))
    const setup = yield* Effect.either(buildEnvelope(job))
    if (setup._tag === "Left") {
      const outcome = { status: "failed", reason: "error", message: setup.left.message } as const
      yield* store.settle(job.id, outcome, null)
      yield* bus.publish({ _tag: "Events", jobId: job.id })
      return yield* settled(outcome)
    }
    yield* store.started(job.id, setup.right.agentVersion, setup.right.model)
    const memory = yield* MemoryStore
    // The project's daily log (when its memory is on): this job started, and later how it ended.
    yield* memory.log(job.projectId, { kind: "job.started", jobId: job.id, agentId: job.agentName, noteId: null, summary: `${job.agentName} v${setup.right.agentVersion} started: ${job.task.slice(0, 200)}` })
    grants = [...setup.right.tools, ...setup.right.serviceTools]
    const span = yield* Effect.option(Effect.currentSpan)
    if (span._tag === "Some") {
      const slash = setup.right.model.indexOf("/")
      span.value.attribute("gen_ai.provider.name", setup.right.model.slice(0, slash))
      span.value.attribute("gen_ai.request.model", setup.right.model.slice(slash + 1))
      span.value.attribute("kintsugi.agent.version", setup.right.agentVersion)
    }
    yield* Effect.logInfo("job started").pipe(Effect.annotateLogs({ agent: job.agentName, agentVersion: setup.right.agentVersion, model: setup.right.model }))
    const jobRoots = setup.right.envelope.boundary?.jobRoots ?? []
    // Where outputs would be committed, read before the job can change it (it writes outDir).
    const before = yield* Effect.promise(() => gitLayout(job.workspace.outDir, jobRoots))
    const outputs: Array<string> = []
    // One database write per event: untraced, or they would drown the job's trace.
    const persist = (event: JobEvent) =>
      Effect.zipRight(store.appendEvent(job.id, event), bus.publish({ _tag: "Events", jobId: job.id })).pipe(Effect.withTracerEnabled(false))
    // The pre-started child (JobChildren) when this runtime keeps one, else a child started now.
    const children = yield* Effect.serviceOption(JobChildren)
    // Set when the server's drain asked the job to stop: its aborted end then says why.
    let shuttingDown = false
    const ended = yield* runJobProcess(setup.right.envelope, {
      onEvent: (event) => {
        if (event.type === "output") outputs.push(event.path)
        if (event.type === "span") kernelSpans.push(event)
        if (event.type === "usage") usage = event
        if (event.type === "grounding") grounding = event
        return persist(shuttingDown && event.type === "job.failed" && event.reason === "aborted" ? { ...event, message: SERVER_SHUTTING_DOWN } : event)
      },
      abortRequested: Effect.suspend(() =>
        lost
          ? Effect.succeed(true)
          : Effect.flatMap(stopping, (stop) => (stop ? Effect.sync(() => (shuttingDown = true)) : Effect.withTracerEnabled(store.abortRequested(job.id), false)))
      ),
      log: (line) => Effect.logWarning(line)
    }, Option.match(children, { onNone: () => CLI_PATH, onSome: (c) => c.take }))
    const settlement: Settlement =
      shuttingDown && ended.status === "failed" && ended.reason === "aborted" ? { ...ended, message: SERVER_SHUTTING_DOWN } : ended
    const committed =
      settlement.status === "completed"
        ? yield* Effect.promise(() =>
            commitOutputs({
              outDir: job.workspace.outDir,
              jobRoots,
              paths: outputs,
              before,
              message: `kintsugi: ${job.agentName} v${setup.right.agentVersion} (job ${job.id})`
            })
          )
        : outputs.length > 0
          ? "not committed: the job failed (outputs left in place)"
          : "no outputs"
    yield* store.settle(job.id, settlement, committed)
    // Dead already (its job is no longer running); deleted so no hash of it outlives the job.
    if (setup.right.serviceTools.length > 0) yield* (yield* ServiceTokens).revoke(job.id)
    yield* memory.log(job.projectId, {
      kind: "job.finished",
      jobId: job.id,
      agentId: job.agentName,
      noteId: null,
      summary: `${job.agentName} ${settlement.status}${settlement.status === "completed" ? `: ${settlement.summary.slice(0, 300)}` : ` (${settlement.reason}): ${settlement.message.slice(0, 300)}`}`
    })
    yield* bus.publish({ _tag: "Events", jobId: job.id })
    yield* settled(settlement)
  }).pipe(
    Effect.scoped,
    // The worker is stopping (serve shut down): the child got SIGTERM; the job must not stay `running`.
    Effect.onInterrupt(() => Effect.ignore(settleAs({ status: "failed", reason: "aborted", message: "the worker stopped while the job was running" }))),
    // A defect in the worker itself still settles the job.
    Effect.catchAllCause((cause) =>
      Cause.isFailType(cause) && cause.error instanceof JobFailedStatus
        ? Effect.fail(cause.error)
        : Effect.zipRight(
            Effect.logError("worker error", cause),
            settleAs({ status: "failed", reason: "error", message: "the worker failed while running the job" })
          )
    )
  )

  const parent = parseTraceParent(job.traceParent)
  return body.pipe(
    Effect.withSpan("kintsugi.worker.job", {
      kind: "consumer",
      captureStackTrace: false,
      ...(parent === undefined ? { root: true } : { parent }),
      attributes: { "kintsugi.job.id": job.id, "gen_ai.agent.name": job.agentName, "gen_ai.operation.name": "invoke_agent" }
    }),
    Effect.catchAll(() => Effect.void),
    Effect.annotateLogs({ jobId: job.id })
  )
}

/**
 * One worker loop: claim, run, repeat; sleeps until a job is queued (or a poll interval passes). It
 * ends when the drain begins: a claim and its job run as one piece of admitted work, so the drain
 * waits for both and no job is claimed after it began.
 */
const loop = (workerId: string, lease: Lease) =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* JobStore
      const drain = yield* Drain
      const signals = yield* (yield* JobBus).subscribe
      while (true) {
        const ran = yield* drain.admit(
          Effect.gen(function* () {
            // The idle poll is untraced: a span per second of an idle worker would be noise.
            const job = yield* Effect.withTracerEnabled(store.claim(workerId, lease.leaseMs), false)
            if (job === undefined) return false
            yield* runClaimedJob(job, lease, drain.stopping)
            return true
          })
        )
        if (Option.isNone(ran)) return
        if (ran.value) continue
        // Wait for a "queued" signal from this process, or poll for jobs queued by another one.
        yield* Effect.race(
          Effect.repeat(Queue.take(signals), { until: (s) => s._tag === "Queued" }),
          Effect.sleep(POLL)
        )
      }
    })
  )

/** Settles the jobs whose lease expired (their worker is gone) and wakes their followers in this process. */
const sweep = Effect.gen(function* () {
  const lost = yield* (yield* JobStore).settleExpired
  if (lost.length === 0) return
  yield* Effect.logWarning("settled jobs whose worker was lost (lease expired)").pipe(Effect.annotateLogs({ jobIds: lost }))
  const bus = yield* JobBus
  for (const id of lost) yield* bus.publish({ _tag: "Events", jobId: id })
}).pipe(
  Effect.catchAllCause((cause) => Effect.logError("the lease sweep failed", cause)),
  Effect.withTracerEnabled(false)
)

/**
 * The worker loops of this process, as a layer: they stop claiming when the drain begins, and stop
 * (killing their job children) with its scope. A sweep at start and every heartbeat settles jobs
 * whose worker was lost, on any host.
 */
export const WorkerLive: Layer.Layer<never, never, WorkerServices | Drain> = Layer.scopedDiscard(
  Effect.gen(function* () {
    const count = yield* Config.integer("KINTSUGI_WORKERS").pipe(Config.withDefault(1), Effect.orElseSucceed(() => 1))
    const lease = yield* LeaseConfig
    const base = `${hostname()}:${process.pid}`
    yield* sweep
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(Duration.millis(lease.heartbeatMs)), sweep)))
    for (let i = 0; i < Math.max(0, count); i++) yield* Effect.forkScoped(loop(`${base}:${i}`, lease))
  })
)
