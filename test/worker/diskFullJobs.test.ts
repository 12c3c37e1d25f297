/**
 * Jobs running while the disk under the embedded database fills (a small tmpfs): the log says "disk full",
 * `/healthz` answers from the process alone before a 1 s abort every time it is asked while the disk is full,
 * and once space returns every job is settled exactly once (completed, or failed naming the disk or the
 * database), its events stored once each and in order. Needs root (mount); skipped with the reason otherwise.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Cause, Effect, Exit } from "effect"
import { randomBytes } from "node:crypto"
import { cpSync, mkdirSync, rmSync, statfsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { makeDbLayer } from "../../src/db/Db.ts"
import { isDiskFull } from "../../src/db/StoreError.ts"
import { listen } from "../../src/http/serve.ts"
import { JobStore, WORKER_LOST } from "../../src/worker/JobStore.ts"
import { templateDataDir } from "../support/db.ts"
import { seedBoundAgent, useCleanups } from "../support/deployment.ts"
import { createRootDir } from "../support/jobRoots.ts"
import { startOpenAIServer, type Step } from "../support/scriptedServers.ts"
import { makeTestApp, type TestApp } from "../support/testApp.ts"
import { mountTmpfs, tmpfsUnavailable } from "../support/tmpfs.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(300_000)

const JOBS = 4
const AGENT = "disk-full-probe"
/** The second turn's text, streamed while the disk is full. */
const STREAMED = "bravo ".repeat(30)

/** The embedded database's case: with DATABASE_URL set the app's database is that server, not the tmpfs. */
const unavailable = (process.env["DATABASE_URL"] ?? "") !== "" ? "the embedded database's case (DATABASE_URL is set)" : tmpfsUnavailable()

const cleanups = useCleanups(60_000)

/** A promise and its resolver: the model's second turns wait for the disk to be full. */
const gate = () => {
  let open = () => {}
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { opened, open }
}

/** The first turn reads a file; the second waits for `opened`, then streams STREAMED in small deltas. */
const turnFor = async (body: unknown, opened: Promise<void>): Promise<Step> => {
  const messages = typeof body === "object" && body !== null && "messages" in body && Array.isArray(body.messages) ? body.messages : []
  const answered = messages.some((m: unknown) => typeof m === "object" && m !== null && "role" in m && m.role === "tool")
  if (!answered)
    return {
      kind: "turn",
      text: "alpha",
      toolCalls: [{ name: "read", arguments: { path: "src/app.ts" } }],
      usage: { input: 100, output: 10 }
    }
  await opened
  return { kind: "turn", text: STREAMED, chunkSize: 3, delayMs: 20, usage: { input: 100, output: 10 } }
}

/**
 * A server on the embedded database on a 96 MB tmpfs, with JOBS worker loops under a `leaseSec` lease and
 * JOBS jobs running, each waiting at its second model turn until `startStreaming()`.
 */
const setup = async (leaseSec: number) => {
  const mount = mountTmpfs("kintsugi-diskfull-jobs-", 96, cleanups)
  cpSync(await templateDataDir(), join(mount, "data"), { recursive: true })
  process.env["KINTSUGI_DATA_DIR"] = mount
  cleanups.push(() => void delete process.env["KINTSUGI_DATA_DIR"])

  const streaming = gate()
  const model = await startOpenAIServer(
    Array.from({ length: JOBS * 2 }, () => ({ kind: "fn", respond: (r) => turnFor(r.body, streaming.opened) }) satisfies Step)
  )
  cleanups.push(() => model.stop())
  cleanups.push(() => streaming.open())

  const logs: Array<string> = []
  process.env["KINTSUGI_WORKERS"] = String(JOBS)
  process.env["KINTSUGI_JOB_LEASE"] = String(leaseSec)
  process.env["KINTSUGI_JOB_HEARTBEAT"] = "1"
  let made: TestApp
  try {
    made = await makeTestApp({ db: makeDbLayer({ dataDir: join(mount, "data") }), worker: { log: (l) => logs.push(l) } })
  } finally {
    for (const k of ["KINTSUGI_WORKERS", "KINTSUGI_JOB_LEASE", "KINTSUGI_JOB_HEARTBEAT"]) delete process.env[k]
  }
  const app = made
  cleanups.push(() => app.dispose())
  const server = listen(app.app, { hostname: "127.0.0.1", port: 0 })
  cleanups.push(() => server.stop(true))
  const query = <A extends object>(text: string, values: Array<unknown> = []) =>
    app.runtime.runPromise(Effect.flatMap(SqlClient, (sql) => sql.unsafe<A>(text, values)))

  await app.runtime.runPromise(seedBoundAgent({ baseUrl: model.baseUrl, apiKey: "sk-disk-full", agent: AGENT, tools: ["read"] }))
  await query("CREATE TABLE runtime.disk_full_ballast (b text NOT NULL)")
  // The workspace is off the tmpfs: only the database's disk fills.
  const root = createRootDir("disk-full-")
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  writeFileSync(join(root, "src", "app.ts"), "export const main = () => 42\n")
  const ids = await app.runtime.runPromise(
    Effect.forEach(
      Array.from({ length: JOBS }, (_, i) => i),
      (i) =>
        Effect.flatMap(JobStore, (store) =>
          store.enqueue(
            {
              agent: AGENT,
              task: `Read the code [job-${i}].`,
              workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
              limits: { timeoutSec: 240 }
            },
            "ops"
          )
        )
    ).pipe(Effect.map((jobs) => jobs.map((j) => j.id)))
  )
  // Every job is running and waits at its second turn.
  await until(() => model.requests.length >= JOBS * 2, { what: "every job at its second model turn", timeoutMs: 120_000, everyMs: 100 })

  /** /healthz over HTTP, answered before a 1 s abort: its status, or the failure's name. */
  const healthz = async (): Promise<number | string> => {
    try {
      const r = await fetch(`http://127.0.0.1:${server.port}/healthz`, { signal: AbortSignal.timeout(1000) })
      return r.status
    } catch (e) {
      return e instanceof Error ? e.name : String(e)
    }
  }
  const answers: Array<number | string> = []
  const filler = join(mount, "filler")

  return {
    logs,
    ids,
    query,
    /** Every /healthz answer so far: a status, or why none came before the abort. */
    answers,
    healthz: async () => void answers.push(await healthz()),
    readyz: async () => (await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).json()) as { status: string; detail?: string },
    startStreaming: streaming.open,
    /** Fills the file system to the last block, then what the database's files had room for; the refusal. */
    fill: async (): Promise<unknown> => {
      const s = statfsSync(mount)
      try {
        writeFileSync(filler, Buffer.alloc(s.bavail * s.bsize))
      } catch {
        // ENOSPC at the very end: full either way
      }
      for (let i = 0; i < 160; i++) {
        const exit = await app.runtime.runPromiseExit(
          Effect.flatMap(SqlClient, (sql) => sql`INSERT INTO runtime.disk_full_ballast VALUES (${randomBytes(512 * 1024).toString("hex")})`)
        )
        if (i % 20 === 0) answers.push(await healthz())
        if (Exit.isFailure(exit)) return Cause.squash(exit.cause)
      }
      return undefined
    },
    free: () => rmSync(filler)
  }
}

type Setup = Awaited<ReturnType<typeof setup>>

interface JobRecord {
  readonly id: string
  readonly status: string
  readonly reason: string | null
  readonly message: string | null
}
interface EventRecord {
  readonly jobId: string
  readonly seq: number
  readonly type: string
  readonly event: unknown
}

/** Waits until every job is completed or failed; their rows and events. */
const settledJobs = async (t: Setup) => {
  const settled = async () =>
    (await t.query<{ n: number }>("SELECT count(*)::int AS n FROM runtime.job WHERE status IN ('completed', 'failed')"))[0]?.n
  await until(async () => (await settled()) === JOBS, { what: "every job to settle", timeoutMs: 180_000, everyMs: 250 })
  const jobs = await t.query<JobRecord>("SELECT id, status, reason, message FROM runtime.job WHERE id = ANY($1)", [t.ids])
  const events = await t.query<EventRecord>(
    "SELECT job_id, seq, type, event FROM runtime.job_event WHERE job_id = ANY($1) ORDER BY job_id, seq",
    [t.ids]
  )
  return { jobs, events }
}

/**
 * Each job's events stored once and in order (seq 0..n-1, job.started first); a completed job's end with
 * its one job.completed and every delta streamed; one the worker failed has at most its job.failed, last.
 */
const expectEventsOnce = (ids: ReadonlyArray<string>, jobs: ReadonlyArray<JobRecord>, events: ReadonlyArray<EventRecord>) => {
  expect(jobs.length).toBe(ids.length)
  expect(jobs.filter((j) => j.status !== "completed" && j.status !== "failed")).toEqual([])
  for (const id of ids) {
    const mine = events.filter((e) => e.jobId === id)
    expect(mine.map((e) => Number(e.seq))).toEqual(mine.map((_, i) => i))
    const types = mine.map((e) => e.type)
    expect(types[0]).toBe("job.started")
    const status = jobs.find((j) => j.id === id)?.status
    const ends: Array<string> = types.filter((t) => t === "job.completed" || t === "job.failed")
    expect(ends).toEqual(status === "completed" ? ["job.completed"] : ends.length === 0 ? [] : ["job.failed"])
    if (ends.length > 0) expect(types.at(-1)).toBe(ends[0])
    if (status === "completed") {
      const deltas = mine
        .filter((e) => e.type === "message.delta")
        .map((e) => {
          const event = typeof e.event === "string" ? JSON.parse(e.event) : e.event
          return typeof event === "object" && event !== null && "text" in event ? String(event.text) : ""
        })
      expect(deltas.join("")).toBe(`alpha${STREAMED}`)
    }
  }
}

/** No job is reported settled twice (the worker's "job settled" line). */
const expectReportedOnce = (ids: ReadonlyArray<string>, logs: ReadonlyArray<string>) => {
  for (const id of ids) expect(logs.filter((l) => l.includes('"job settled"') && l.includes(id)).length).toBeLessThanOrEqual(1)
}

/**
 * A failed job's message names the disk or the database, or is "worker lost": its lease ran out while the
 * database was away, and the lease sweep (which runs once the database writes again, and may come before
 * the worker's own settle on a loaded machine) settled it.
 */
const expectFailuresNamed = (jobs: ReadonlyArray<JobRecord>) =>
  expect(jobs.filter((j) => j.status === "failed" && !/disk full|database/.test(j.message ?? "") && j.message !== WORKER_LOST)).toEqual([])

/** `setup(leaseSec)`, its disk filled (the fill's failure says "disk full"), then the jobs' second turns streaming; `logged`: the log lines before. */
const streamingOnFullDisk = async (leaseSec: number) => {
  const t = await setup(leaseSec)
  expect(isDiskFull(await t.fill())).toBe(true)
  const logged = t.logs.length
  t.startStreaming()
  return { t, logged }
}

const skipped = unavailable === undefined ? "" : ` (skipped: ${unavailable})`

test.skipIf(unavailable !== undefined)(
  `${JOBS} jobs running when the disk under the embedded database fills: "disk full" logged, /healthz answers, every job completes once space returns${skipped}`,
  async () => {
    // The jobs stream their second turns now: their event writes meet the full disk and say so in the log.
    const { t, logged } = await streamingOnFullDisk(60)
    await until(
      async () => {
        await t.healthz()
        return t.logs.slice(logged).some((l) => l.includes("disk full"))
      },
      { what: 'a log line saying "disk full" while jobs write', timeoutMs: 60_000, everyMs: 200 }
    )
    expect((await t.readyz()).detail ?? "").toStartWith("disk full")
    for (let i = 0; i < 5; i++) await t.healthz()
    expect(t.answers.filter((a) => a !== 200)).toEqual([])
    // Space returns within the lease: every job completes, with no restart of the server.
    t.free()
    const { jobs, events } = await settledJobs(t)
    expect(jobs.map((j) => j.status)).toEqual(jobs.map(() => "completed"))
    expectEventsOnce(t.ids, jobs, events)
    expectReportedOnce(t.ids, t.logs)
    expect(t.logs.filter((l) => l.includes("the worker failed") || l.includes("worker error"))).toEqual([])
  }
)

describe.skipIf(unavailable !== undefined)(`${JOBS} jobs while the disk stays full past their 5 s lease${skipped}`, () => {
  let run: { readonly t: Setup; readonly logged: number } & Awaited<ReturnType<typeof settledJobs>>
  beforeAll(async () => {
    const { t, logged } = await streamingOnFullDisk(5)
    // The jobs' writes are refused until their lease is over: each is settled, or its lease runs out.
    await until(
      async () => {
        await t.healthz()
        const left = await t.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM runtime.job WHERE status = 'running' AND lease_expires_at > now()"
        )
        return left[0]?.n === 0
      },
      { what: "every job's writes to give up", timeoutMs: 120_000, everyMs: 250 }
    )
    for (let i = 0; i < 5; i++) await t.healthz()
    // Space returns: none is left running.
    t.free()
    run = { t, logged, ...(await settledJobs(t)) }
  }, 300_000)

  test('"disk full" logged, /healthz answered every time, each job settled once with its events once and in order', () => {
    expect(run.t.logs.slice(run.logged).some((l) => l.includes("disk full"))).toBe(true)
    expect(run.t.answers.filter((a) => a !== 200)).toEqual([])
    expectEventsOnce(run.t.ids, run.jobs, run.events)
    expectReportedOnce(run.t.ids, run.t.logs)
    expect(run.jobs.filter((j) => j.status === "failed").length).toBeGreaterThan(0)
  })

  test("each failed job's message names the disk or the database", () => {
    expectFailuresNamed(run.jobs)
  })
})
