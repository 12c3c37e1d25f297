/**
 * The one constructor of a job's services (JobEvents, Limits, Workspace), used by the kernel and by
 * tests alike. It builds them one after the other into a plain Context: a graph of layers would fork
 * a fiber per layer on the way to a cold job's `job.started`.
 */
import { Context, Effect, Layer } from "effect"
import type { JobEvent } from "../contract/JobEvent.ts"
import type { Limits as JobLimits } from "../contract/JobSpec.ts"
import type { ResolvedWorkspace } from "./confinement.ts"
import * as JobEvents from "./JobEvents.ts"
import * as Limits from "./Limits.ts"
import { Redactor } from "./Redactor.ts"
import * as Workspace from "./Workspace.ts"

/** Every per-job service a tool call runs with. */
export type JobServices = JobEvents.JobEvents | Limits.Limits | Workspace.Workspace

/** What a job's services are built from, besides its events. */
export interface JobServicesOptions {
  readonly limits: JobLimits
  readonly model: Limits.MeteredModel
  readonly workspace: ResolvedWorkspace
  /** A resumed job's earlier spending, counted against its limits. */
  readonly spent?: Limits.Spent
}

/** Limits and Workspace of one job, over the job's JobEvents (built first: job.started goes out through it). */
export const make = (
  options: JobServicesOptions
): Effect.Effect<Context.Context<Limits.Limits | Workspace.Workspace>, never, JobEvents.JobEvents> =>
  Effect.map(Limits.make(options.limits, options.model, options.spent), (limits) =>
    Context.make(Limits.Limits, limits).pipe(Context.add(Workspace.Workspace, Workspace.make(options.workspace)))
  )

/** What a test sets of a job's services. */
export interface JobServicesTestOptions {
  /** Gets every event, stamped and unredacted (default: dropped). */
  readonly deliver?: (event: JobEvent) => void
  /** Fixes `Limits.remainingMs` (default: a minute). */
  readonly remainingMs?: number
  /** Counts `Limits.progress` calls instead of feeding the idle watchdog. */
  readonly onProgress?: () => void
  readonly jobId?: string
}

/**
 * A job's services over `workspace` (the live Workspace, real files) for tests, built by `make`: a job
 * with only `timeoutSec` set, `remainingMs` fixed and progress counted in `onProgress`.
 */
export const layerTest = (workspace: ResolvedWorkspace, options: JobServicesTestOptions = {}): Layer.Layer<JobServices> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const deliver = options.deliver ?? (() => {})
      const events = yield* JobEvents.make(options.jobId ?? "00000000-test-job", new Redactor([]), deliver)
      const services = yield* Effect.provideService(
        make({ limits: { timeoutSec: 3600 }, model: { label: "test/model", contextWindow: 100_000 }, workspace }),
        JobEvents.JobEvents,
        events
      )
      const limits = Context.get(services, Limits.Limits)
      return services.pipe(
        Context.add(JobEvents.JobEvents, events),
        Context.add(Limits.Limits, {
          ...limits,
          progress: () => options.onProgress?.(),
          remainingMs: Effect.succeed(options.remainingMs ?? 60_000)
        })
      )
    })
  )
