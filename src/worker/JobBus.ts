/**
 * In-process notifications: "a job was queued" wakes the workers, "job X has new events" wakes the
 * process's JobFeed (its live streams). Across processes the database is the truth: workers poll, and
 * the JobFeed hears a PostgreSQL server's notifications, so another serve process sees everything.
 */
import { Context, Effect, Layer, PubSub, type Queue, type Scope } from "effect"

export type JobSignal = { readonly _tag: "Queued" } | { readonly _tag: "Events"; readonly jobId: string }

export class JobBus extends Context.Tag("worker/JobBus")<
  JobBus,
  {
    readonly publish: (signal: JobSignal) => Effect.Effect<void>
    /** A subscription that lives as long as the scope. */
    readonly subscribe: Effect.Effect<Queue.Dequeue<JobSignal>, never, Scope.Scope>
  }
>() {}

export const JobBusLive = Layer.effect(
  JobBus,
  Effect.map(PubSub.sliding<JobSignal>(1024), (hub) => ({
    publish: (signal: JobSignal) => Effect.asVoid(PubSub.publish(hub, signal)),
    subscribe: PubSub.subscribe(hub)
  }))
)
