/**
 * The live streams' one reader per process (src/worker/JobFeed.ts): followers of a job share one read
 * per wake-up and each gets only what follows its own cursor; a waiting follower costs no query (the
 * clock is a TestClock that moves only when told); a notification missed is covered by the
 * per-process re-check; on a PostgreSQL server another process's events wake the followers through
 * its notification alone.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Layer, ManagedRuntime, Queue, TestClock, TestContext } from "effect"
import { randomBytes } from "node:crypto"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { type Db, makeDbLayer } from "../../src/db/Db.ts"
import { JobBus, JobBusLive } from "../../src/worker/JobBus.ts"
import { type FeedItem, JobFeed, layer as JobFeedLayer, make as makeJobFeed } from "../../src/worker/JobFeed.ts"
import { type JobInput, JobStore, JobStoreLive, makeJobStore } from "../../src/worker/JobStore.ts"
import { adminStatement, usingServer, useTestDb, withDatabase } from "../support/db.ts"

setDefaultTimeout(60_000)

const INPUT: JobInput = {
  agent: "codebase-inventory",
  task: "t",
  workspace: { root: "/r", readOnly: ["/r/src"], outDir: "/r/out" },
  limits: { timeoutSec: 60 }
}
const at = () => new Date().toISOString()
const delta = (seq: number): JobEvent => ({ type: "message.delta", seq, at: at(), text: `d${seq}` })

/** The job store with its event and row reads counted. */
const counts = { events: 0, get: 0 }
const CountedJobStore = Layer.effect(
  JobStore,
  Effect.map(makeJobStore, (store) => ({
    ...store,
    events: (id: string, after: number) =>
      Effect.zipRight(
        Effect.sync(() => void counts.events++),
        store.events(id, after)
      ),
    get: (id: string) =>
      Effect.zipRight(
        Effect.sync(() => void counts.get++),
        store.get(id)
      )
  }))
)

const db = useTestDb(Layer.merge(JobStoreLive, JobBusLive))

const seqs = (item: FeedItem) => (item._tag === "Events" ? item.events.map((e) => e.seq) : item.job.status)

/** The status of the first settled row handed out; rows read after the terminal event but before the settlement come first. */
const settledRow = (items: Queue.Dequeue<FeedItem>) =>
  Effect.gen(function* () {
    for (;;) {
      const item = yield* Queue.take(items)
      if (item._tag === "Events") return `events ${item.events.map((e) => e.seq).join(",")}`
      if (item.job.status !== "running") return item.job.status
    }
  })

describe("JobFeed", () => {
  test("fifty followers: one read per wake-up for all; waiting costs no read; a missed notification is covered by the re-check; a late follower reads from its own cursor", async () => {
    await db.run(
      Effect.scoped(
        Effect.gen(function* () {
          const store = yield* JobStore
          const bus = yield* JobBus
          const job = yield* store.enqueue(INPUT, "someone")
          yield* store.claim("w", 60_000, job.id)
          // The feed over the counted store and this file's bus, on a clock that moves only when told.
          const feed = yield* makeJobFeed.pipe(Effect.provide(CountedJobStore), Effect.provideService(JobBus, bus))
          const follow = (after: number) => feed.follow(job.id, after)
          const followers = yield* Effect.all(
            Array.from({ length: 50 }, () => follow(-1)),
            { concurrency: "unbounded" }
          )
          yield* store.appendEvent(job.id, delta(0))
          yield* bus.publish({ _tag: "Events", jobId: job.id })
          for (const f of followers) expect(seqs(yield* Queue.take(f))).toEqual([0])

          // Reads happen one at a time per job: once all have 0, no read is under way.
          counts.events = 0
          counts.get = 0
          yield* store.appendEvent(job.id, delta(1))
          yield* bus.publish({ _tag: "Events", jobId: job.id })
          for (const f of followers) expect(seqs(yield* Queue.take(f))).toEqual([1])
          expect(counts).toEqual({ events: 1, get: 0 })

          // Stored without a notification: the next re-check (one query for every followed job) reads it, once for all.
          yield* store.appendEvent(job.id, delta(2))
          yield* TestClock.adjust("2 seconds")
          for (const f of followers) expect(seqs(yield* Queue.take(f))).toEqual([2])
          if (usingServer()) {
            // A server notifies of every stored event itself: that wake and the re-check are one read each, for all fifty.
            expect(counts.events).toBeGreaterThanOrEqual(2)
            expect(counts.events).toBeLessThanOrEqual(3)
            expect(counts.get).toBe(0)
          } else {
            expect(counts).toEqual({ events: 2, get: 0 })
          }

          // A follower joining late from seq 0 gets 1 and 2; the others nothing more.
          const late = yield* follow(0)
          expect(seqs(yield* Queue.take(late))).toEqual([1, 2])
          for (const f of followers) expect(yield* Queue.size(f)).toBe(0)

          // The end: the terminal event, then the settled row, to everyone.
          yield* store.appendEvent(job.id, { type: "job.completed", seq: 3, at: at(), summary: "done" })
          yield* store.settle(job.id, { status: "completed", summary: "done" }, null)
          yield* bus.publish({ _tag: "Events", jobId: job.id })
          for (const f of [...followers, late]) {
            expect(seqs(yield* Queue.take(f))).toEqual([3])
            expect(yield* settledRow(f)).toBe("completed")
          }
        }).pipe(Effect.provide(TestContext.TestContext))
      )
    )
  })

  test("a job settled failed without a terminal event: its followers hear the job.failed the settle wrote as the next seq, then the settled row", async () => {
    await db.run(
      Effect.scoped(
        Effect.gen(function* () {
          const store = yield* JobStore
          const job = yield* store.enqueue(INPUT, "someone")
          yield* store.claim("w", 60_000, job.id)
          yield* store.appendEvent(job.id, delta(0))
          const items = yield* (yield* JobFeed).follow(job.id, -1)
          expect(seqs(yield* Queue.take(items))).toEqual([0])
          yield* store.settle(job.id, { status: "failed", reason: "error", message: "crashed" }, null)
          yield* (yield* JobBus).publish({ _tag: "Events", jobId: job.id })
          const ended = yield* Queue.take(items)
          expect(ended._tag === "Events" ? ended.events.map((e) => [e.seq, e.type]) : ended).toEqual([[1, "job.failed"]])
          expect(yield* settledRow(items)).toBe("failed")
        }).pipe(
          Effect.provide(Layer.provideMerge(JobFeedLayer, Layer.merge(JobStoreLive, JobBusLive))),
          Effect.provide(TestContext.TestContext)
        )
      )
    )
  })
})

describe.skipIf(!usingServer())("JobFeed on a shared server (PostgreSQL server only: skipped without DATABASE_URL)", () => {
  let name = ""
  let other: ManagedRuntime.ManagedRuntime<Db | JobStore | JobBus, unknown> | undefined
  let here: ManagedRuntime.ManagedRuntime<Db | JobStore | JobBus, unknown> | undefined
  beforeAll(async () => {
    const server = process.env["DATABASE_URL"] ?? ""
    name = `kintsugi_test_${randomBytes(6).toString("hex")}`
    await adminStatement(server, `CREATE DATABASE ${name}`)
    const url = withDatabase(server, name)
    other = ManagedRuntime.make(Layer.provideMerge(Layer.merge(JobStoreLive, JobBusLive), makeDbLayer({ url, migrate: true })))
    await other.runtime()
    here = ManagedRuntime.make(Layer.provideMerge(Layer.merge(JobStoreLive, JobBusLive), makeDbLayer({ url })))
    await here.runtime()
  }, 120_000)
  afterAll(async () => {
    await other?.dispose()
    await here?.dispose()
    if (name !== "") await adminStatement(process.env["DATABASE_URL"] ?? "", `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }, 60_000)

  test("another process's events and settlement reach this process's followers by notification (the re-check never runs: the clock stands still)", async () => {
    if (other === undefined || here === undefined) throw new Error("the server database is not up")
    const job = await other.runPromise(
      Effect.gen(function* () {
        const store = yield* JobStore
        const job = yield* store.enqueue(INPUT, "someone")
        yield* store.claim("w", 60_000, job.id)
        return job
      })
    )
    const writer = other
    await here.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const items = yield* (yield* JobFeed).follow(job.id, -1)
          yield* Effect.promise(() => writer.runPromise(Effect.flatMap(JobStore, (s) => s.appendEvent(job.id, delta(0)))))
          expect(seqs(yield* Queue.take(items))).toEqual([0])
          yield* Effect.promise(() =>
            writer.runPromise(
              Effect.flatMap(JobStore, (s) => s.settle(job.id, { status: "failed", reason: "error", message: "lost" }, null))
            )
          )
          // The settle wrote the job.failed it lacked (the next seq); then the settled row.
          expect(seqs(yield* Queue.take(items))).toEqual([1])
          expect(yield* settledRow(items)).toBe("failed")
        }).pipe(Effect.provide(Layer.provide(JobFeedLayer, Layer.merge(JobStoreLive, JobBusLive))), Effect.provide(TestContext.TestContext))
      )
    )
  })
})
