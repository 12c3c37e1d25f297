/**
 * Workers wake on a job queued by another process (migration 061, src/db/serverWrites.ts, JobBus): on a
 * PostgreSQL server a statement of another process that queues jobs (an INSERT, or a job put back in
 * the queue) reaches this process's JobBus as "queued", once per statement; this process's own enqueues
 * are not heard again (its code publishes them); claims, heartbeats and settlements wake nobody. A
 * `--role worker` process whose poll never comes (KINTSUGI_WORKER_POLL) runs a job queued through a
 * `--role api` process.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer, ManagedRuntime, Queue } from "effect"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { type Db, DbWrites, makeDbLayer } from "../../src/db/Db.ts"
import { JobBus, JobBusLive } from "../../src/worker/JobBus.ts"
import { type JobInput, JobStore, JobStoreLive } from "../../src/worker/JobStore.ts"
import { adminStatement, usingServer, withDatabase } from "../support/db.ts"
import { createDeployment, servingPort, useCleanups } from "../support/deployment.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(60_000)

const INPUT: JobInput = {
  agent: "codebase-inventory",
  task: "t",
  workspace: { root: "/r", readOnly: ["/r/src"], outDir: "/r/out" },
  limits: { timeoutSec: 60 }
}
const SERVER = process.env["DATABASE_URL"] ?? ""
const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")

type Runtime = ManagedRuntime.ManagedRuntime<Db | JobStore | JobBus, unknown>

describe.skipIf(!usingServer())("workers wake on jobs queued elsewhere (PostgreSQL server only: skipped without DATABASE_URL)", () => {
  let name = ""
  let other: Runtime | undefined
  let here: Runtime | undefined
  beforeAll(async () => {
    name = `kintsugi_test_${randomBytes(6).toString("hex")}`
    await adminStatement(SERVER, `CREATE DATABASE ${name}`)
    const url = withDatabase(SERVER, name)
    other = ManagedRuntime.make(Layer.provideMerge(Layer.merge(JobStoreLive, JobBusLive), makeDbLayer({ url, migrate: true })))
    await other.runtime()
    here = ManagedRuntime.make(Layer.provideMerge(Layer.merge(JobStoreLive, JobBusLive), makeDbLayer({ url })))
    await here.runtime()
  }, 120_000)
  afterAll(async () => {
    await other?.dispose()
    await here?.dispose()
    if (name !== "") await adminStatement(SERVER, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }, 60_000)

  test("another process's enqueue and requeue reach this process's JobBus as queued, once each; its own enqueue, claims, heartbeats and settlements do not", async () => {
    if (other === undefined || here === undefined) throw new Error("the server database is not up")
    const writer = other
    const reader = here
    const onOther = <A, E>(effect: Effect.Effect<A, E, JobStore | SqlClient>) => Effect.promise(() => writer.runPromise(effect))
    await until(() => reader.runSync(Effect.map(DbWrites, (w) => w.jobsHeard())), { what: "this process's listener to listen" })
    await here.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const writes = yield* DbWrites
          const heard = yield* writes.jobsQueued
          const settled = yield* writes.jobsWritten
          const signals = yield* (yield* JobBus).subscribe
          const store = yield* JobStore

          yield* store.enqueue(INPUT, "here")
          const queued = yield* onOther(Effect.flatMap(JobStore, (s) => s.enqueue(INPUT, "other")))
          // The JobBus hands the workers a "queued" signal for it.
          expect(yield* Effect.repeat(Queue.take(signals), { until: (s) => s._tag === "Queued" })).toEqual({ _tag: "Queued" })

          yield* onOther(
            Effect.gen(function* () {
              const s = yield* JobStore
              const sql = yield* SqlClient
              yield* s.claim("w", 60_000, queued.id)
              yield* s.heartbeat(queued.id, "w", 60_000)
              yield* sql`UPDATE runtime.job SET status = 'queued', worker_id = NULL WHERE id = ${queued.id}`
              yield* s.claim("w", 60_000, queued.id)
              // Its notification (kintsugi_events) comes after every one of the statements above.
              yield* s.settle(queued.id, { status: "failed", reason: "error", message: "done" }, null)
            })
          )
          yield* Effect.repeat(Queue.take(settled), { until: (id) => id === queued.id })
          // Notifications arrive in commit order: everything before the settlement has been heard.
          expect(yield* Queue.size(heard)).toBe(2)
        })
      )
    )
  })
})

const cleanups = useCleanups(60_000)

test.skipIf(SERVER === "")(
  "a job queued through a --role api process runs on an idle --role worker process whose poll never comes" +
    (SERVER === "" ? " (skipped: needs DATABASE_URL)" : ""),
  async () => {
    const { url, secretText, rt, token, base, root } = await createDeployment({
      server: SERVER,
      prefix: "kintsugi_wake",
      agent: "wake-probe",
      steps: [{ kind: "turn", text: "done" }],
      apiKey: "sk-wake",
      tools: [],
      cleanups
    })
    const start = async (role: "api" | "worker") => {
      const proc = Bun.spawn(["bun", CLI, "serve", "--role", role], {
        env: {
          ...process.env,
          DATABASE_URL: url,
          PORT: "0",
          HOST: "127.0.0.1",
          KINTSUGI_DATA_DIR: join(base, `data-${role}`),
          KINTSUGI_JOB_ROOTS: root,
          KINTSUGI_SECRET_KEY: secretText,
          KINTSUGI_WORKERS: "1",
          KINTSUGI_WORKER_POLL: "3600"
        },
        stdout: "pipe",
        stderr: "ignore"
      })
      cleanups.push(() => void proc.kill("SIGKILL"))
      const { port, out } = await servingPort(proc.stdout)
      expect(port > 0 ? port : out).toBe(port)
      return port
    }
    const sql = (text: string) => rt.runPromise(Effect.flatMap(SqlClient, (s) => s.unsafe<Record<string, unknown>>(text)))
    const api = await start("api")
    await start("worker")
    // Every process's listener listens (this one's, the api's, the worker's: the last statement of each
    // is the check after its LISTENs), and the worker's one loop has claimed once (no job yet) and waits:
    // the last statement of one of its connections is that claim. From here only a wake-up (or the poll,
    // an hour away) claims again.
    await until(
      async () => {
        const [row] = await sql(`SELECT
            count(*) FILTER (WHERE application_name = 'kintsugi-listener' AND query LIKE 'SELECT pg_backend_pid()%')::int AS listening,
            count(*) FILTER (WHERE state = 'idle' AND query LIKE '%UPDATE runtime.job SET status = ''running''%')::int AS claimed
          FROM pg_stat_activity WHERE datname = current_database()`)
        return Number(row?.["listening"]) >= 3 && Number(row?.["claimed"]) > 0
      },
      { what: "the listeners to listen and the worker's first claim", timeoutMs: 30_000, everyMs: 50 }
    )
    const posted = await fetch(`http://127.0.0.1:${api}/api/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        agent: "wake-probe",
        task: "Say done.",
        workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
        limits: { timeoutSec: 120 }
      })
    })
    expect(posted.status).toBe(201)
    const settled = await until(
      async () => (await sql(`SELECT status FROM runtime.job WHERE status IN ('completed', 'failed')`))[0]?.["status"],
      { what: "the job to settle", timeoutMs: 45_000, everyMs: 100 }
    )
    expect(settled).toBe("completed")
  },
  120_000
)
