/**
 * The worker: `KINTSUGI_WORKERS` loops per serve process, each claiming the oldest queued job, running
 * it in a job child under a lease renewed by a heartbeat, persisting every event and always settling the
 * job. Several processes on one PostgreSQL share the queue through `FOR UPDATE SKIP LOCKED`; a job whose
 * lease expired (its process died) is put back in the queue by the sweep of any of them when it kept a
 * transcript (and is then resumed from its last answered turn, at most KINTSUGI_JOB_RESUMES times), and
 * settled "worker lost" otherwise.
 */
import { Cause, Chunk, Clock, Config, Duration, Effect, Fiber, Layer, Option, Queue, Ref } from "effect"
import { hostname } from "node:os"
import type { JobEvent } from "../contract/JobEvent.ts"
import { isTransient, retryTransient, StoreUnavailable } from "../db/StoreError.ts"
import { Metrics } from "../telemetry/Metrics.ts"
import { parseTraceParent } from "../telemetry/traceParent.ts"
import { buildEnvelope, type EnvelopeServices, type ResolvedJob } from "./buildEnvelope.ts"
import { commitOutputs, type GitLayout, gitLayout } from "./commitOutputs.ts"
import { Drain, SERVER_SHUTTING_DOWN } from "./Drain.ts"
import { JobBus } from "./JobBus.ts"
import { JobChildren } from "./child/JobChildren.ts"
import { CLI_PATH, runJobProcess } from "./child/JobProcess.ts"
import { JobStore, type JobRow, type Settlement } from "./JobStore.ts"
import { exportKernelSpans, toolNameCheck } from "./JobTrace.ts"
import { MemoryStore } from "./memory/MemoryStore.ts"
import { ServiceTokens } from "./ServiceTokens.ts"
import { MaxResumesConfig } from "./transcripts/resume.ts"

/** What the worker runs with: what a job's envelope is built from, and the bus, metrics and memory its runs report to. */
export type WorkerServices = EnvelopeServices | JobBus | Metrics | MemoryStore

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
 * Renews the job's lease every heartbeat until interrupted; `onLost` runs once when the job is no
 * longer running under `workerId` (settled "worker lost" after a stall), so the child is stopped.
 */
const keepLease = (jobId: string, workerId: string, lease: Lease, onLost: Effect.Effect<void>) =>
  Effect.flatMap(JobStore, (store) =>
    Effect.gen(function* () {
      while (true) {
        yield* Effect.sleep(Duration.millis(lease.heartbeatMs))
        // Retried within the lease: a database back before it expires keeps the job ours.
        const ours = yield* store.heartbeat(jobId, workerId, lease.leaseMs).pipe(
          retryTransient(lease.leaseMs),
          Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("job heartbeat failed", cause), true))
        )
        if (!ours) {
          yield* Effect.logWarning("the job's lease was lost; stopping its process")
          return yield* onLost
        }
      }
    })
  ).pipe(Effect.withTracerEnabled(false))

type UsageTotals = Extract<JobEvent, { type: "usage" }>
type KernelSpan = Extract<JobEvent, { type: "span" }>
type Grounding = Extract<JobEvent, { type: "grounding" }>

/** A failed job: its span ends in error (a fixed message, no stack). */
class JobFailedStatus extends Error {
  constructor() {
    super("the job failed")
    this.name = "JobFailed"
    this.stack = `${this.name}: ${this.message}`
  }
}

/** What the job's settlement reports, gathered from its setup and its events as they arrive. */
interface Tally {
  /** The agent's grants, once its envelope is built: the kernel spans' tool names are checked against them. */
  readonly grants: ReadonlyArray<string>
  readonly outputs: Chunk.Chunk<string>
  readonly kernelSpans: Chunk.Chunk<KernelSpan>
  readonly usage: UsageTotals | undefined
  readonly grounding: Grounding | undefined
}

const emptyTally: Tally = { grants: [], outputs: Chunk.empty(), kernelSpans: Chunk.empty(), usage: undefined, grounding: undefined }

const tallied = (tally: Tally, event: JobEvent): Tally => {
  switch (event.type) {
    case "output":
      return { ...tally, outputs: Chunk.append(tally.outputs, event.path) }
    case "span":
      return { ...tally, kernelSpans: Chunk.append(tally.kernelSpans, event) }
    case "usage":
      return { ...tally, usage: event }
    case "grounding":
      return { ...tally, grounding: event }
    default:
      return tally
  }
}

/** The running job's own state: when it started, its tally, and whether it lost its lease or was asked to stop by the drain. */
interface JobRun {
  readonly job: JobRow
  /** The lease: how long the database may stay away before a write of the job gives up. */
  readonly leaseMs: number
  readonly started: number
  readonly tally: Ref.Ref<Tally>
  readonly lost: Ref.Ref<boolean>
  readonly shuttingDown: Ref.Ref<boolean>
}

/** Metrics, the settled line and the span's outcome: once per job, however it ended. Fails (JobFailedStatus) for a failed job. */
const reportSettled = (run: JobRun, outcome: Settlement) =>
  Effect.gen(function* () {
    const { usage, grounding, kernelSpans, grants } = yield* Ref.get(run.tally)
    const durationMs = (yield* Clock.currentTimeMillis) - run.started
    const reason = outcome.status === "failed" ? outcome.reason : null
    yield* (yield* Metrics).jobSettled({
      status: outcome.status,
      reason,
      seconds: durationMs / 1000,
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
      yield* exportKernelSpans(Chunk.toReadonlyArray(kernelSpans), span.value, toolNameCheck(grants))
    }
    const line = outcome.status === "completed" ? Effect.logInfo("job settled") : Effect.logWarning("job settled")
    yield* line.pipe(
      Effect.annotateLogs({
        status: outcome.status,
        ...(reason === null ? {} : { reason }),
        durationMs,
        ...(usage === undefined ? {} : { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, costUsd: usage.costUsd })
      })
    )
    if (outcome.status === "failed") return yield* Effect.fail(new JobFailedStatus())
  })

/**
 * Settles the job (idempotent: only a job still running under this worker moves — one whose lease was
 * lost may be running elsewhere, resumed), tried again within the lease while the database is away.
 */
const settleJob = (run: JobRun, outcome: Settlement, outputs: string | null) =>
  Effect.flatMap(JobStore, (store) =>
    retryTransient(run.leaseMs)(store.settle(run.job.id, outcome, outputs, run.job.workerId ?? undefined))
  )

/** Settles the job as failed by the worker itself (stopped, or a defect), and reports it. */
const settleFailed = (run: JobRun, outcome: Settlement & { readonly status: "failed" }) =>
  Effect.zipRight(settleJob(run, outcome, null), reportSettled(run, outcome))

/**
 * A line in the project's daily log, tried again within the lease while the database is away; a log
 * line that cannot be written is a warning, never the job's failure.
 */
const logDaily = (run: JobRun, entry: Parameters<MemoryStore["Type"]["log"]>[1]) =>
  Effect.flatMap(MemoryStore, (memory) =>
    memory.log(run.job.projectId, entry).pipe(
      retryTransient(run.leaseMs),
      Effect.catchAll((e) => Effect.logWarning("cannot write the job's line in its project's daily log", e))
    )
  )

/**
 * The job's envelope (agent, binding, provider, workspace), with the job marked started, logged in its
 * project's daily log and its span named after the model; None when it cannot be built, the job then
 * settled failed and reported.
 */
const startJob = (run: JobRun) =>
  Effect.gen(function* () {
    const { job } = run
    const store = yield* JobStore
    const setup = yield* Effect.either(buildEnvelope(job))
    if (setup._tag === "Left") {
      const outcome = { status: "failed", reason: "error", message: setup.left.message } as const
      yield* settleJob(run, outcome, null)
      yield* (yield* JobBus).publish({ _tag: "Events", jobId: job.id })
      yield* reportSettled(run, outcome)
      return Option.none<ResolvedJob>()
    }
    const resolved = setup.right
    yield* retryTransient(run.leaseMs)(store.started(job.id, resolved.agentVersion, resolved.model))
    const resume = resolved.resume
    // The project's daily log (when its memory is on): this job started (or was resumed), and later how it ended.
    yield* logDaily(run, {
      kind: "job.started",
      jobId: job.id,
      agentId: job.agentName,
      noteId: null,
      summary:
        resume === undefined
          ? `${job.agentName} v${resolved.agentVersion} started: ${job.task.slice(0, 200)}`
          : `${job.agentName} v${resolved.agentVersion} resumed after turn ${resume.turn} (resume ${resume.resume}): ${job.task.slice(0, 200)}`
    })
    // A resumed job's outputs include those its earlier runs reported: all of them are committed at its end.
    yield* Ref.update(run.tally, (t) => ({
      ...t,
      grants: [...resolved.tools, ...resolved.serviceTools],
      outputs: Chunk.fromIterable(resume?.outputs ?? [])
    }))
    const span = yield* Effect.option(Effect.currentSpan)
    if (span._tag === "Some") {
      const slash = resolved.model.indexOf("/")
      span.value.attribute("gen_ai.provider.name", resolved.model.slice(0, slash))
      span.value.attribute("gen_ai.request.model", resolved.model.slice(slash + 1))
      span.value.attribute("kintsugi.agent.version", resolved.agentVersion)
    }
    yield* Effect.logInfo(resume === undefined ? "job started" : "job resumed").pipe(
      Effect.annotateLogs({
        agent: job.agentName,
        agentVersion: resolved.agentVersion,
        model: resolved.model,
        ...(resume === undefined ? {} : { resume: resume.resume, afterTurn: resume.turn, nextSeq: resume.nextSeq })
      })
    )
    return Option.some(resolved)
  })

/**
 * Runs the job child to the job's end: every event persisted (and tallied) as it arrives; the job is
 * aborted when its lease is lost, when it is asked to abort, or once `stopping` (the drain is over), and
 * an aborted end is then recorded as "server shutting down".
 */
const runChild = (run: JobRun, resolved: ResolvedJob, stopping: Effect.Effect<boolean>) =>
  Effect.gen(function* () {
    const store = yield* JobStore
    const bus = yield* JobBus
    const { job } = run
    // One database write per batch, tried again while the database is away (a seq is stored once):
    // untraced, or they would drown the job's trace.
    const persist = (events: ReadonlyArray<JobEvent>) =>
      Effect.zipRight(
        retryTransient(run.leaseMs)(store.appendEvents(job.id, events, job.workerId ?? undefined)),
        bus.publish({ _tag: "Events", jobId: job.id })
      ).pipe(Effect.withTracerEnabled(false))
    const shutdownMessage = (down: boolean) => (event: JobEvent) =>
      down && event.type === "job.failed" && event.reason === "aborted" ? { ...event, message: SERVER_SHUTTING_DOWN } : event
    // The pre-started child (JobChildren) when this runtime keeps one, else a child started now.
    const children = yield* Effect.serviceOption(JobChildren)
    const ended = yield* runJobProcess(
      resolved.envelope,
      {
        onEvents: (events) =>
          Effect.zipRight(
            Ref.update(run.tally, (t) => events.reduce(tallied, t)),
            Effect.flatMap(Ref.get(run.shuttingDown), (down) => persist(events.map(shutdownMessage(down))))
          ),
        abortRequested: Effect.flatMap(Ref.get(run.lost), (lost) =>
          lost
            ? Effect.succeed(true)
            : Effect.flatMap(stopping, (stop) =>
                stop ? Ref.setAndGet(run.shuttingDown, true) : Effect.withTracerEnabled(store.abortRequested(job.id), false)
              )
        ),
        log: (line) => Effect.logWarning(line)
      },
      Option.match(children, { onNone: () => CLI_PATH, onSome: (c) => c.take })
    )
    const down = yield* Ref.get(run.shuttingDown)
    return down && ended.status === "failed" && ended.reason === "aborted" ? { ...ended, message: SERVER_SHUTTING_DOWN } : ended
  })

/**
 * Commits a completed job's outputs (`before`: the outputs' git layout read before the job ran), settles
 * the job, revokes its services token, logs its end in the project's daily log and reports it.
 */
const finishJob = (
  run: JobRun,
  resolved: ResolvedJob,
  settlement: Settlement,
  before: GitLayout | string,
  jobRoots: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const { job } = run
    // The lease was lost: the job was settled "worker lost" or put back in the queue to be resumed
    // elsewhere (its tokens and outputs are that run's now); nothing of this run's end is recorded.
    if (yield* Ref.get(run.lost)) {
      return yield* Effect.logWarning("the job's lease was lost while it ran: its end here is not recorded")
    }
    const outputs = Chunk.toReadonlyArray((yield* Ref.get(run.tally)).outputs)
    const committed =
      settlement.status === "completed"
        ? yield* Effect.promise(() =>
            commitOutputs({
              outDir: job.workspace.outDir,
              jobRoots,
              paths: [...outputs],
              before,
              message: `kintsugi: ${job.agentName} v${resolved.agentVersion} (job ${job.id})`
            })
          )
        : outputs.length > 0
          ? "not committed: the job failed (outputs left in place)"
          : "no outputs"
    yield* settleJob(run, settlement, committed)
    // Dead already (its job is no longer running); deleted so no hash of it outlives the job (a token
    // minted for its memory or web tools, or for its transcript alone).
    if (resolved.envelope.services !== undefined) yield* (yield* ServiceTokens).revoke(job.id)
    yield* logDaily(run, {
      kind: "job.finished",
      jobId: job.id,
      agentId: job.agentName,
      noteId: null,
      summary: `${job.agentName} ${settlement.status}${settlement.status === "completed" ? `: ${settlement.summary.slice(0, 300)}` : ` (${settlement.reason}): ${settlement.message.slice(0, 300)}`}`
    })
    yield* (yield* JobBus).publish({ _tag: "Events", jobId: job.id })
    yield* reportSettled(run, settlement)
  })

/**
 * What a job that the worker could not run to its end is told: the database's own message when a
 * statement of it failed (a full disk named), else that the worker failed (a defect: its cause is logged).
 */
const workerFailure = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  return Option.isSome(failure) && failure.value instanceof StoreUnavailable
    ? `the worker could not record the job: ${failure.value.message}`
    : "the worker failed while running the job"
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
): Effect.Effect<void, never, WorkerServices> =>
  Effect.gen(function* () {
    const run: JobRun = {
      job,
      leaseMs: lease.leaseMs,
      started: yield* Clock.currentTimeMillis,
      tally: yield* Ref.make(emptyTally),
      lost: yield* Ref.make(false),
      shuttingDown: yield* Ref.make(false)
    }
    const body = Effect.gen(function* () {
      const heartbeat = yield* Effect.fork(keepLease(job.id, job.workerId ?? "", lease, Ref.set(run.lost, true)))
      yield* Effect.addFinalizer(() => Fiber.interrupt(heartbeat))
      const resolved = yield* startJob(run)
      if (Option.isNone(resolved)) return
      const jobRoots = resolved.value.envelope.boundary?.jobRoots ?? []
      // Where outputs would be committed, read before the job can change it (it writes outDir).
      const before = yield* Effect.promise(() => gitLayout(job.workspace.outDir, jobRoots))
      const settlement = yield* runChild(run, resolved.value, stopping)
      yield* finishJob(run, resolved.value, settlement, before, jobRoots)
    }).pipe(
      Effect.scoped,
      // The worker is stopping (serve shut down): the child got SIGTERM; the job must not stay `running`.
      Effect.onInterrupt(() =>
        Effect.ignore(settleFailed(run, { status: "failed", reason: "aborted", message: "the worker stopped while the job was running" }))
      ),
      // A database that stayed away past the lease, or a defect in the worker itself, still settles the job.
      Effect.catchAllCause((cause) =>
        Cause.isFailType(cause) && cause.error instanceof JobFailedStatus
          ? Effect.fail(cause.error)
          : Effect.zipRight(
              Effect.logError("worker error", cause),
              settleFailed(run, { status: "failed", reason: "error", message: workerFailure(cause) })
            )
      )
    )
    const parent = parseTraceParent(job.traceParent)
    return yield* body.pipe(
      Effect.withSpan("kintsugi.worker.job", {
        kind: "consumer",
        captureStackTrace: false,
        ...(parent === undefined ? { root: true } : { parent }),
        attributes: { "kintsugi.job.id": job.id, "gen_ai.agent.name": job.agentName, "gen_ai.operation.name": "invoke_agent" }
      }),
      Effect.catchAll(() => Effect.void),
      Effect.annotateLogs({ jobId: job.id })
    )
  })

/**
 * The next job for `workerId`, or none. A claim whose answer was lost may have committed: while the
 * database is away it is tried again, each time first taking back the job this worker claimed and has
 * not started (JobStore.reclaim). Still away after a lease, or another failure: none this time (logged).
 */
const claimJob = (store: JobStore["Type"], workerId: string, lease: Lease) =>
  store.claim(workerId, lease.leaseMs).pipe(
    Effect.catchIf(isTransient, () =>
      retryTransient(lease.leaseMs)(
        Effect.flatMap(store.reclaim(workerId, lease.leaseMs), (job) =>
          job === undefined ? store.claim(workerId, lease.leaseMs) : Effect.succeed(job)
        )
      )
    ),
    Effect.catchAll((e) => Effect.as(Effect.logWarning("cannot claim a job", e), undefined))
  )

/**
 * How the process's idle worker loops hear that a job may be queued: one wake-up at a time (a sliding
 * queue of one), each waking one idle loop. A "queued" signal (this process's, or another's its
 * listener heard) and the process's poll (KINTSUGI_WORKER_POLL, for a notification missed) each offer
 * one; a loop that claimed a job offers one while another loop waits, since more may be queued. So one
 * queued job costs this process one claim, not one per idle loop, and an idle process claims once per
 * poll, not once per loop.
 */
interface WakeUps {
  /** Waits for a wake-up, counted as an idle loop meanwhile (the process's waiting job child starts while one waits). */
  readonly idle: Effect.Effect<void>
  /** Drops the wake-ups that came before a claim: the claim answers them. */
  readonly beforeClaim: Effect.Effect<void>
  /** After a claim that found a job: wakes another idle loop, if one waits, to look for the next. */
  readonly claimed: Effect.Effect<void>
}

const makeWakeUps = Effect.gen(function* () {
  const pending = yield* Queue.sliding<void>(1)
  const waiting = yield* Ref.make(0)
  const signals = yield* (yield* JobBus).subscribe
  const children = yield* Effect.serviceOption(JobChildren)
  const seconds = yield* Config.number("KINTSUGI_WORKER_POLL").pipe(
    Config.withDefault(Duration.toSeconds(POLL)),
    Effect.orElseSucceed(() => Duration.toSeconds(POLL))
  )
  const poll = seconds > 0 ? Duration.seconds(seconds) : POLL
  yield* Effect.forkScoped(
    Effect.forever(Effect.flatMap(Queue.take(signals), (s) => (s._tag === "Queued" ? Queue.offer(pending, undefined) : Effect.void)))
  )
  yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(poll), Queue.offer(pending, undefined))))
  const take = Effect.acquireUseRelease(
    Ref.update(waiting, (n) => n + 1),
    () => Queue.take(pending),
    () => Ref.update(waiting, (n) => n - 1)
  )
  return {
    idle: Option.match(children, { onNone: () => take, onSome: (c) => c.whileIdle(take) }),
    beforeClaim: Effect.asVoid(Queue.takeAll(pending)),
    claimed: Effect.flatMap(Ref.get(waiting), (n) => (n > 0 ? Effect.asVoid(Queue.offer(pending, undefined)) : Effect.void))
  } satisfies WakeUps
})

/**
 * One worker loop: claim, run, repeat; idle until woken (WakeUps). It ends when the drain begins: a
 * claim and its job run as one piece of admitted work, so the drain waits for both and no job is
 * claimed after it began.
 */
const loop = (workerId: string, lease: Lease, wakeUps: WakeUps) =>
  Effect.gen(function* () {
    const store = yield* JobStore
    const drain = yield* Drain
    while (true) {
      yield* wakeUps.beforeClaim
      const ran = yield* drain.admit(
        Effect.gen(function* () {
          // The idle poll is untraced: a span per second of an idle worker would be noise.
          const job = yield* Effect.withTracerEnabled(claimJob(store, workerId, lease), false)
          if (job === undefined) return false
          yield* wakeUps.claimed
          yield* runClaimedJob(job, lease, drain.stopping)
          return true
        })
      )
      if (Option.isNone(ran)) return
      if (ran.value) continue
      yield* wakeUps.idle
    }
  })

/**
 * The jobs whose lease expired (their worker is gone): those with a transcript back in the queue to be
 * resumed (at most `maxResumes` times each), the others settled "worker lost"; wakes this process's
 * workers and the jobs' followers.
 */
const sweep = (maxResumes: number) =>
  Effect.gen(function* () {
    const { lost, resumed } = yield* (yield* JobStore).sweepExpired(maxResumes)
    const bus = yield* JobBus
    if (lost.length > 0) {
      yield* Effect.logWarning("settled jobs whose worker was lost (lease expired)").pipe(Effect.annotateLogs({ jobIds: lost }))
    }
    if (resumed.length > 0) {
      yield* Effect.logWarning("queued jobs whose worker was lost to be resumed from their transcript").pipe(
        Effect.annotateLogs({ jobIds: resumed })
      )
      yield* bus.publish({ _tag: "Queued" })
    }
    for (const id of [...lost, ...resumed]) yield* bus.publish({ _tag: "Events", jobId: id })
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
    const count = yield* Config.integer("KINTSUGI_WORKERS").pipe(
      Config.withDefault(1),
      Effect.orElseSucceed(() => 1)
    )
    const lease = yield* LeaseConfig
    const maxResumes = yield* MaxResumesConfig
    const base = `${hostname()}:${process.pid}`
    yield* sweep(maxResumes)
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(Duration.millis(lease.heartbeatMs)), sweep(maxResumes))))
    const wakeUps = yield* makeWakeUps
    for (let i = 0; i < Math.max(0, count); i++) yield* Effect.forkScoped(loop(`${base}:${i}`, lease, wakeUps))
  })
)
