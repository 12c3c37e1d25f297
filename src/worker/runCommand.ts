/**
 * The job of `kintsugi run <agent> --task … --read <dir> --out <dir>` (src/cli/run.ts wires it): one job
 * run in this process against the configured database (the agent's current version, its binding, the
 * provider), reported live on the command's RunIo (written by src/cli/runOutput.ts).
 */
import type { JobEvent } from "../contract/JobEvent.ts"
import { Config, Effect, Either, Fiber } from "effect"
import { JobRoots } from "./JobRoots.ts"
import { JobStore } from "./JobStore.ts"
import { LeaseConfig, runClaimedJob } from "./Worker.ts"

/** One job of `kintsugi run`, as its options gave it (paths absolute, the root resolved). */
export interface RunArgs {
  readonly agent: string
  readonly task: string
  readonly read: ReadonlyArray<string>
  readonly out: string
  readonly root: string
  readonly project?: string
  readonly timeoutSec: number
  readonly maxCostUsd?: number
}

/** How a job run reports, locally (src/worker/runCommand.ts) or through a server (runRemote.ts). */
export interface RunIo {
  /** One event of the job, in order. */
  readonly event: (e: JobEvent) => void
  /** Diagnostics, on stderr. */
  readonly log: (line: string) => void
  /** The job is queued with this id: Ctrl-C from now on aborts it. */
  readonly started: (jobId: string) => void
  /** Ctrl-C after the job started: says so before the job is asked to abort. */
  readonly aborting: () => void
  /** The settled job's row: the summary, the last thing written. */
  readonly settled: (job: unknown) => void
  /** No job was started: why, and every problem. */
  readonly refused: (message: string, problems?: ReadonlyArray<{ readonly path: string; readonly message: string }>) => void
}

/**
 * Runs one job in this process, reporting on `io` (events, then the summary from the settled row);
 * the exit code: 0 completed, 1 failed, 2 when the workspace is refused (every problem listed).
 * Interrupted (Ctrl-C), it says so, asks the job to abort, waits for it to end and reports that end.
 * The job is queued and claimed uninterruptibly: Ctrl-C never leaves a queued job behind.
 */
export const runLocalJob = (parsed: RunArgs, io: RunIo) =>
  Effect.gen(function* () {
    const store = yield* JobStore
    // The same checks as POST /api/jobs, before anything is queued: every problem, then exit 2.
    const decoded = yield* (yield* JobRoots).decodeJob({
      agent: parsed.agent,
      task: parsed.task,
      workspace: { root: parsed.root, readOnly: parsed.read, outDir: parsed.out },
      limits: { timeoutSec: parsed.timeoutSec, ...(parsed.maxCostUsd === undefined ? {} : { maxCostUsd: parsed.maxCostUsd }) },
      ...(parsed.project === undefined ? {} : { project: parsed.project })
    })
    if (Either.isLeft(decoded)) {
      io.refused("the job was not started", decoded.left)
      return 2
    }
    const user = yield* Config.string("USER").pipe(
      Config.withDefault("cli"),
      Effect.orElseSucceed(() => "cli")
    )
    const lease = yield* LeaseConfig
    return yield* Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const job = yield* store.enqueue(decoded.right, user)
        io.started(job.id)
        const claimed = yield* store.claim(`cli:${process.pid}`, lease.leaseMs, job.id)
        // The job was enqueued by this command a moment ago for itself: another claimer is a defect.
        if (claimed === undefined) return yield* Effect.die(new Error("the job was claimed by another worker"))
        const running = yield* Effect.fork(restore(runClaimedJob(claimed, lease)))
        let last = -1
        const drain = Effect.gen(function* () {
          for (const e of yield* store.events(job.id, last)) {
            io.event(e)
            last = e.seq
          }
        })
        // The job is this command's own: reading its end can only fail on a broken database, reported as a defect.
        const settle = Effect.tap(Effect.orDie(store.get(job.id)), (done) => Effect.sync(() => io.settled(done)))
        // Ctrl-C: the job ends as aborted (the worker's abort poll stops its child), then its end is reported.
        const abort = Effect.sync(() => io.aborting()).pipe(
          Effect.zipRight(Effect.either(store.requestAbort(job.id, job.createdBy))),
          Effect.zipRight(Fiber.await(running)),
          Effect.zipRight(Effect.either(drain)),
          Effect.zipRight(settle)
        )
        const follow = Effect.gen(function* () {
          while (!running.unsafePoll()) {
            yield* drain
            yield* Effect.sleep("100 millis")
          }
          yield* Fiber.join(running)
          yield* drain
        })
        yield* restore(follow).pipe(Effect.onInterrupt(() => abort))
        const done = yield* settle
        return done.status === "completed" ? 0 : 1
      })
    )
  })
