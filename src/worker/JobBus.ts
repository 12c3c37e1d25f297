/**
 * In-process notifications: "a job was queued" wakes the workers, "job X has new events" wakes its
 * SSE subscribers. Across processes the database is the truth: both sides also poll, so a worker or
 * subscriber in another serve process sees everything, only a little later.
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
