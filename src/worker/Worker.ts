/**
 * The worker: `KINTSUGI_WORKERS` loops per serve process, each claiming the oldest queued job, running
 * it in a job child, persisting every event and always settling the job. Several processes on one
 * PostgreSQL share the queue through `FOR UPDATE SKIP LOCKED`; nothing else coordinates them.
 */
import { Config, Duration, Effect, Layer, Queue, Runtime } from "effect"
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

/** Runs one claimed job to its settlement. Never fails: whatever happens, the job is settled. */
export const runClaimedJob = (job: JobRow, log: (line: string) => void): Effect.Effect<void, never, WorkerServices> =>
  Effect.gen(function* () {
    const store = yield* JobStore
    const bus = yield* JobBus
    const runtime = yield* Effect.runtime<never>()
    const run = Runtime.runPromise(runtime)
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
      abortRequested: () => run(store.abortRequested(job.id)),
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
const loop = (workerId: string, log: (line: string) => void) =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* JobStore
      const signals = yield* (yield* JobBus).subscribe
      while (true) {
        const job = yield* store.claim(workerId)
        if (job !== undefined) {
          yield* runClaimedJob(job, log)
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

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The worker loops of this process, as a layer: they stop (killing their job children) with its scope. */
export const WorkerLive = (log: (line: string) => void): Layer.Layer<never, never, WorkerServices> =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const count = yield* Config.integer("KINTSUGI_WORKERS").pipe(Config.withDefault(1), Effect.orElseSucceed(() => 1))
      const base = `${hostname()}:${process.pid}`
      // Jobs left running by a serve process of this host that died (SIGKILL, OOM) are settled now.
      const orphaned = yield* (yield* JobStore).settleOrphans(hostname(), (pid) => pid !== process.pid && !alive(pid))
      if (orphaned > 0) log(`kintsugi: settled ${orphaned} job(s) left running by a worker process that died`)
      for (let i = 0; i < Math.max(0, count); i++) yield* Effect.forkScoped(loop(`${base}:${i}`, log))
    })
  )
