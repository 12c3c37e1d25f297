/**
 * The worker: `KINTSUGI_WORKERS` loops per serve process, each claiming the oldest queued job, running
 * it in a job child under a lease renewed by a heartbeat, persisting every event and always settling the
 * job. Several processes on one PostgreSQL share the queue through `FOR UPDATE SKIP LOCKED`; a job whose
 * lease expired (its process died) is settled "worker lost" by the sweep of any of them.
 */
import { Config, Duration, Effect, Fiber, Layer, Queue, Runtime } from "effect"
import { hostname } from "node:os"
import type { AgentStore } from "../agents/AgentStore.ts"
import type { SkillStore } from "../agents/SkillStore.ts"
import type { Bindings } from "../providers/Bindings.ts"
import type { McpServers } from "../providers/McpServers.ts"
import type { ProviderStore } from "../providers/ProviderStore.ts"
import { buildEnvelope } from "./buildEnvelope.ts"
import { commitOutputs, gitLayout } from "./commitOutputs.ts"
import { JobBus } from "./JobBus.ts"
import type { JobRoots } from "./JobRoots.ts"
import { runJobProcess } from "./JobProcess.ts"
import { JobStore, type JobRow } from "./JobStore.ts"

export type WorkerServices = JobStore | JobBus | AgentStore | SkillStore | Bindings | ProviderStore | McpServers | JobRoots

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
const keepLease = (jobId: string, workerId: string, lease: Lease, onLost: () => void, log: (line: string) => void) =>
  Effect.flatMap(JobStore, (store) =>
    Effect.gen(function* () {
      while (true) {
        yield* Effect.sleep(Duration.millis(lease.heartbeatMs))
        const ours = yield* store.heartbeat(jobId, workerId, lease.leaseMs).pipe(
          Effect.catchAllCause((cause) => Effect.sync(() => (log(`job ${jobId}: heartbeat failed: ${String(cause).split("\n")[0]}`), true)))
        )
        if (!ours) {
          log(`job ${jobId}: the job's lease was lost; stopping its process`)
          return onLost()
        }
      }
    })
  )

/**
 * Runs one claimed job to its settlement, renewing its lease meanwhile. Never fails: whatever happens,
 * the job is settled (by us, or — when we lost the lease — by the sweep, and then our child is stopped).
 */
export const runClaimedJob = (job: JobRow, lease: Lease, log: (line: string) => void): Effect.Effect<void, never, WorkerServices> =>
  Effect.gen(function* () {
    const store = yield* JobStore
    const bus = yield* JobBus
    const runtime = yield* Effect.runtime<never>()
    const run = Runtime.runPromise(runtime)
    let lost = false
    const heartbeat = yield* Effect.fork(keepLease(job.id, job.workerId ?? "", lease, () => void (lost = true), log))
    yield* Effect.addFinalizer(() => Fiber.interrupt(heartbeat))
    const setup = yield* Effect.either(buildEnvelope(job))
    if (setup._tag === "Left") {
      yield* store.settle(job.id, { status: "failed", reason: "error", message: setup.left.message }, null)
      return yield* bus.publish({ _tag: "Events", jobId: job.id })
    }
    yield* store.started(job.id, setup.right.agentVersion, setup.right.model)
    const jobRoots = setup.right.envelope.boundary?.jobRoots ?? []
    // Where outputs would be committed, read before the job can change it (it writes outDir).
    const before = yield* Effect.promise(() => gitLayout(job.workspace.outDir, jobRoots))
    const outputs: Array<string> = []
    const settlement = yield* runJobProcess(setup.right.envelope, {
      onEvent: (event) => {
        if (event.type === "output") outputs.push(event.path)
        return run(Effect.zipRight(store.appendEvent(job.id, event), bus.publish({ _tag: "Events", jobId: job.id })))
      },
      abortRequested: () => (lost ? Promise.resolve(true) : run(store.abortRequested(job.id))),
      log: (line) => log(`job ${job.id}: ${line}`)
    })
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
    yield* bus.publish({ _tag: "Events", jobId: job.id })
  }).pipe(
    Effect.scoped,
    // The worker is stopping (serve shut down): the child got SIGTERM; the job must not stay `running`.
    Effect.onInterrupt(() =>
      Effect.flatMap(JobStore, (store) =>
        store.settle(job.id, { status: "failed", reason: "aborted", message: "the worker stopped while the job was running" }, null)
      )
    ),
    // A defect in the worker itself still settles the job.
    Effect.catchAllCause((cause) =>
      Effect.flatMap(JobStore, (store) => {
        log(`job ${job.id}: worker error: ${String(cause).split("\n")[0]}`)
        return store.settle(job.id, { status: "failed", reason: "error", message: "the worker failed while running the job" }, null)
      })
    )
  )

/** One worker loop: claim, run, repeat; sleeps until a job is queued (or a poll interval passes). */
const loop = (workerId: string, lease: Lease, log: (line: string) => void) =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* JobStore
      const signals = yield* (yield* JobBus).subscribe
      while (true) {
        const job = yield* store.claim(workerId, lease.leaseMs)
        if (job !== undefined) {
          yield* runClaimedJob(job, lease, log)
          continue
        }
        // Wait for a "queued" signal from this process, or poll for jobs queued by another one.
        yield* Effect.race(
          Effect.repeat(Queue.take(signals), { until: (s) => s._tag === "Queued" }),
          Effect.sleep(POLL)
        )
      }
    })
  )

/** Settles the jobs whose lease expired (their worker is gone) and wakes their followers in this process. */
const sweep = (log: (line: string) => void) =>
  Effect.gen(function* () {
    const lost = yield* (yield* JobStore).settleExpired
    if (lost.length === 0) return
    log(`kintsugi: settled ${lost.length} job(s) whose worker was lost (lease expired)`)
    const bus = yield* JobBus
    for (const id of lost) yield* bus.publish({ _tag: "Events", jobId: id })
  }).pipe(Effect.catchAllCause((cause) => Effect.sync(() => log(`kintsugi: the lease sweep failed: ${String(cause).split("\n")[0]}`))))

/**
 * The worker loops of this process, as a layer: they stop (killing their job children) with its scope.
 * A sweep at start and every heartbeat settles jobs whose worker was lost, on any host.
 */
export const WorkerLive = (log: (line: string) => void): Layer.Layer<never, never, WorkerServices> =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const count = yield* Config.integer("KINTSUGI_WORKERS").pipe(Config.withDefault(1), Effect.orElseSucceed(() => 1))
      const lease = yield* LeaseConfig
      const base = `${hostname()}:${process.pid}`
      yield* sweep(log)
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(Duration.millis(lease.heartbeatMs)), sweep(log))))
      for (let i = 0; i < Math.max(0, count); i++) yield* Effect.forkScoped(loop(`${base}:${i}`, lease, log))
    })
  )
