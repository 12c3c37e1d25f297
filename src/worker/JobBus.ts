/**
 * In-process notifications: "a job was queued" wakes the workers, "job X has new events" wakes the
 * process's JobFeed (its live streams). On a PostgreSQL server jobs queued by another process arrive
 * as "queued" too (DbWrites.jobsQueued), so idle workers of every process wake at once (their poll
 * covers a notification missed); the JobFeed hears the server's event notifications itself.
 */
import { Context, Effect, Layer, PubSub, Queue, type Scope } from "effect"
import { DbWrites } from "../db/DbWrites.ts"

export type JobSignal = { readonly _tag: "Queued" } | { readonly _tag: "Events"; readonly jobId: string }

export class JobBus extends Context.Tag("worker/JobBus")<
  JobBus,
  {
    readonly publish: (signal: JobSignal) => Effect.Effect<void>
    /** A subscription that lives as long as the scope. */
    readonly subscribe: Effect.Effect<Queue.Dequeue<JobSignal>, never, Scope.Scope>
  }
>() {}

const QUEUED: JobSignal = { _tag: "Queued" }

export const JobBusLive: Layer.Layer<JobBus, never, DbWrites> = Layer.scoped(
  JobBus,
  Effect.gen(function* () {
    const hub = yield* PubSub.sliding<JobSignal>(1024)
    const queuedElsewhere = yield* (yield* DbWrites).jobsQueued
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Queue.take(queuedElsewhere), PubSub.publish(hub, QUEUED))))
    return {
      publish: (signal: JobSignal) => Effect.asVoid(PubSub.publish(hub, signal)),
      subscribe: PubSub.subscribe(hub)
    }
  })
)
