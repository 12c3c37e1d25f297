/**
 * The live events of jobs for every stream of this process: one subscription to "job J has news" (the
 * in-process JobBus, and on a PostgreSQL server its `kintsugi_events` notifications, any process's)
 * and one read per wake-up of a job for all of its followers, each handed the slice after its own
 * cursor. A follower that waits costs no query; one re-check per process at a modest interval covers
 * a notification missed (the listener reconnecting, a job settled without one).
 */
import { SqlClient } from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Context, Duration, Effect, Layer, Queue, Schema, type Scope } from "effect"
import type { JobEvent } from "../contract/JobEvent.ts"
import { DbWrites } from "../db/DbWrites.ts"
import { JobBus } from "./JobBus.ts"
import { JobStore, type JobRow } from "./JobStore.ts"

/** What a follower is handed: events after its cursor, in order; the job's row at the end. */
export type FeedItem =
  | { readonly _tag: "Events"; readonly events: ReadonlyArray<JobEvent> }
  | { readonly _tag: "Row"; readonly job: JobRow }

export class JobFeed extends Context.Tag("worker/JobFeed")<
  JobFeed,
  {
    /**
     * Follows job `jobId` from seq `after` for as long as the scope: the stored events after it, then
     * each new one, never twice and never out of order; the job's row whenever it was read after the
     * terminal event or once the job is settled (after every event stored before). Never fails.
     */
    readonly follow: (jobId: string, after: number) => Effect.Effect<Queue.Dequeue<FeedItem>, never, Scope.Scope>
  }
>() {}

/** How often the followed jobs are re-checked in one query while the database's notifications are heard; without them. */
const RECHECK = Duration.seconds(2)
const RECHECK_UNHEARD = Duration.millis(500)

const isTerminal = (e: JobEvent) => e.type === "job.completed" || e.type === "job.failed"
const isSettled = (job: JobRow) => job.status === "completed" || job.status === "failed"

interface Follower {
  cursor: number
  readonly queue: Queue.Queue<FeedItem>
}

interface Followed {
  readonly followers: Set<Follower>
  /** A read is under way; `again`: wake-ups came meanwhile, read once more after it. */
  reading: boolean
  again: boolean
  /** The highest seq read, and whether the terminal event was among what was read. */
  last: number
  terminal: boolean
}

const Progress = Schema.Struct({ id: Schema.String, settled: Schema.Boolean, last: Schema.Number })

export const make = Effect.gen(function* () {
  const store = yield* JobStore
  const sql = yield* SqlClient
  const writes = yield* DbWrites
  const jobs = new Map<string, Followed>()

  const progress = SqlSchema.findAll({
    Request: Schema.Array(Schema.String),
    Result: Progress,
    execute: (ids) =>
      sql`SELECT j.id, j.status IN ('completed', 'failed') AS settled,
            coalesce((SELECT max(e.seq) FROM runtime.job_event e WHERE e.job_id = j.id), -1)::int AS last
          FROM runtime.job j WHERE j.id IN ${sql.in(ids)}`
  })

  /** Hands every follower whose cursor the read covered (`from`) its slice of `events`, then `row`. */
  const deliver = (followed: Followed, from: number, events: ReadonlyArray<JobEvent>, row: JobRow | undefined) =>
    Effect.forEach(
      [...followed.followers].filter((f) => f.cursor >= from),
      (follower) =>
        Effect.gen(function* () {
          const slice = events.filter((e) => e.seq > follower.cursor)
          const last = slice[slice.length - 1]
          if (last !== undefined) {
            follower.cursor = last.seq
            yield* Queue.offer(follower.queue, { _tag: "Events", events: slice })
          }
          if (row !== undefined) yield* Queue.offer(follower.queue, { _tag: "Row", job: row })
        }),
      { discard: true }
    )

  /**
   * One read for all followers of the job: its events after the lowest cursor; its row too when
   * nothing new came or the terminal event was read (and, once it is settled, the events stored
   * before the settlement that the first read may have missed).
   */
  const readOnce = (jobId: string, followed: Followed) =>
    Effect.gen(function* () {
      if (followed.followers.size === 0) return
      const from = Math.min(...[...followed.followers].map((f) => f.cursor))
      let events = yield* store.events(jobId, from)
      let terminal = followed.terminal || events.some(isTerminal)
      let row: JobRow | undefined
      if (events.length === 0 || terminal) {
        row = yield* store.get(jobId)
        if (isSettled(row) && !terminal) {
          const more = yield* store.events(jobId, events[events.length - 1]?.seq ?? from)
          events = [...events, ...more]
          terminal = more.some(isTerminal)
        }
      }
      const end = events.findIndex(isTerminal)
      const kept = end < 0 ? events : events.slice(0, end + 1)
      followed.last = Math.max(followed.last, kept[kept.length - 1]?.seq ?? -1)
      followed.terminal = terminal
      // The row says something only at the end: after the terminal event, or once the job is settled.
      yield* deliver(followed, from, kept, row !== undefined && (terminal || isSettled(row)) ? row : undefined)
    })

  /** Reads the job now, or once more after the read under way; one read at a time per job. */
  const wake = (jobId: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      const followed = jobs.get(jobId)
      if (followed === undefined) return Effect.void
      if (followed.reading) {
        followed.again = true
        return Effect.void
      }
      followed.reading = true
      const loop: Effect.Effect<void> = Effect.suspend(() => {
        followed.again = false
        return readOnce(jobId, followed).pipe(
          Effect.catchAllCause((cause) => Effect.logWarning("reading a followed job's events failed; the next wake-up reads again", cause)),
          Effect.zipRight(Effect.suspend(() => (followed.again ? loop : Effect.sync(() => void (followed.reading = false)))))
        )
      })
      return Effect.asVoid(Effect.forkDaemon(loop))
    })

  /** One query for every followed job: those with events past what was read, or settled, are read. */
  const recheck = Effect.gen(function* () {
    if (jobs.size === 0) return
    const ids = [...jobs.keys()]
    const rows = yield* progress(ids)
    const seen = new Set(rows.map((r) => r.id))
    for (const r of rows) {
      const followed = jobs.get(r.id)
      if (followed !== undefined && (r.last > followed.last || r.settled)) yield* wake(r.id)
    }
    // A job gone from the table (deleted): its read fails and says so; its followers keep waiting.
    for (const id of ids) if (!seen.has(id)) yield* wake(id)
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("re-checking followed jobs failed", cause)))

  const bus = yield* JobBus
  const signals = yield* bus.subscribe
  // While the server's notifications are heard (this process's writes included), the bus would only wake a job twice.
  yield* Effect.forkScoped(
    Effect.forever(Effect.flatMap(Queue.take(signals), (s) => (s._tag === "Events" && !writes.jobsHeard() ? wake(s.jobId) : Effect.void)))
  )
  const heard = yield* writes.jobsWritten
  yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(heard), wake)))
  yield* Effect.forkScoped(
    Effect.forever(
      Effect.zipRight(
        Effect.suspend(() => Effect.sleep(writes.epoch() === undefined ? RECHECK_UNHEARD : RECHECK)),
        recheck
      )
    )
  )

  const follow = (jobId: string, after: number) =>
    Effect.gen(function* () {
      const queue = yield* Effect.acquireRelease(Queue.unbounded<FeedItem>(), (q) => Queue.shutdown(q))
      const follower: Follower = { cursor: after, queue }
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const followed = jobs.get(jobId) ?? { followers: new Set<Follower>(), reading: false, again: false, last: -1, terminal: false }
          followed.followers.add(follower)
          jobs.set(jobId, followed)
        }),
        () =>
          Effect.sync(() => {
            const followed = jobs.get(jobId)
            followed?.followers.delete(follower)
            if (followed?.followers.size === 0) jobs.delete(jobId)
          })
      )
      yield* wake(jobId)
      return queue as Queue.Dequeue<FeedItem>
    })

  return JobFeed.of({ follow })
})

export const layer: Layer.Layer<JobFeed, never, JobStore | JobBus | SqlClient | DbWrites> = Layer.scoped(JobFeed, make)
