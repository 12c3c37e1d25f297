/**
 * Resume in one serve process (the embedded database, or DATABASE_URL): a job whose worker loses its
 * lease mid-job (its row taken from it, as the sweep sees a dead process's) is put back in the queue
 * when it kept a transcript and resumed by another worker loop from its last answered turn; the lost
 * run's late events and settlement are dropped; it completes with every turn, tool call and event once.
 * Without a transcript, or once KINTSUGI_JOB_RESUMES resumes were used, the job ends "worker lost" as
 * before, its events ending with the sweep's job.failed. (test/worker/resumeServe.test.ts kills a real serve process on PostgreSQL.)
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { JobStore, type JobRow, WORKER_LOST } from "../../src/worker/JobStore.ts"
import { createRootDir } from "../support/jobRoots.ts"
import type { RecordedRequest, ScriptedServer, Step } from "../support/scriptedServers.ts"
import { useServicesApp } from "../support/servicesHarness.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(120_000)

// A short lease, renewed every second: a lost one is seen within seconds (read when the workers start).
const saved = { lease: process.env["KINTSUGI_JOB_LEASE"], heartbeat: process.env["KINTSUGI_JOB_HEARTBEAT"] }
beforeAll(() => {
  process.env["KINTSUGI_JOB_LEASE"] = "3"
  process.env["KINTSUGI_JOB_HEARTBEAT"] = "1"
})
const h = useServicesApp()
afterAll(() => {
  for (const [key, value] of [
    ["KINTSUGI_JOB_LEASE", saved.lease],
    ["KINTSUGI_JOB_HEARTBEAT", saved.heartbeat]
  ] as const) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
})

const USAGE = { input: 200, output: 20 }
const read = (n: number): Step => ({
  kind: "turn",
  toolCalls: [{ id: `call-${n}`, name: "read", arguments: { path: `src/f${n}.ts` } }],
  usage: USAGE
})

const sql = <T extends object>(text: string, values: ReadonlyArray<unknown> = []) =>
  h.rt.runPromise(Effect.flatMap(SqlClient, (s) => Effect.orDie(s.unsafe<T>(text, values))))
const job = (id: string) => h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
const eventsOf = (id: string) => h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.events(id, -1)))
const conversationLength = (r: RecordedRequest) =>
  ((r.body as { messages?: Array<{ role: string }> }).messages ?? []).filter((m) => m.role !== "system" && m.role !== "developer").length

/** Queues a job of `agent` in `project` over three small files; its id. */
const queue = async (agent: string, project: string) => {
  const root = createRootDir("kintsugi-resume-")
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  for (const n of [1, 2, 3]) writeFileSync(join(root, "src", `f${n}.ts`), `export const f${n} = ${n}\n`)
  const r = await h.api("POST", "/api/jobs", {
    agent,
    project,
    task: "Read f1, f2 and f3, one per turn.",
    workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
    limits: { timeoutSec: 120 }
  })
  expect(r.status).toBe(201)
  return r.json<{ job: JobRow }>().job.id
}

/** Once the job's model call `n` is waiting (a stalled step), takes its lease from its worker as a dead process's expires. */
const loseLeaseAt = async (server: ScriptedServer, id: string, n: number) => {
  await until(() => server.requests.length >= n, { what: `model request ${n}`, timeoutMs: 60_000, everyMs: 20 })
  await sql(`UPDATE runtime.job SET worker_id = 'gone:1:0', lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id])
}

const settled = (id: string) =>
  until(
    async () => {
      const j = await job(id)
      return (j.status === "completed" || j.status === "failed") && j
    },
    { what: `job ${id} to settle`, timeoutMs: 90_000, everyMs: 50 }
  )

describe("resume after a lost lease", () => {
  test("with a transcript: put back in the queue, resumed from its last answered turn by another worker, completed once", async () => {
    await h.project("kept")
    expect((await h.api("PUT", "/api/projects/kept", { name: "kept", transcripts: "full" })).status).toBe(200)
    const server = await h.agent("resumer", { tools: ["read"] }, [
      read(1),
      read(2),
      { kind: "stall" },
      read(3),
      { kind: "turn", text: "Read all three.", usage: USAGE }
    ])
    const id = await queue("resumer", "kept")
    await loseLeaseAt(server, id, 3)
    const done = await settled(id)
    expect({ status: done.status, summary: done.summary }).toEqual({ status: "completed", summary: "Read all three." })
    expect(done.resumes.map((r) => [r.fromTurn, r.lostWorker])).toEqual([[2, "gone:1:0"]])

    // The 3rd call asked again with what it first sent; nothing before it asked again.
    expect(server.requests.map(conversationLength)).toEqual([1, 3, 5, 5, 7])
    const events = await eventsOf(id)
    // One sequence: the lost run's events after its lease was taken (its abort, its end) were dropped.
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.filter((e) => e.type === "job.started").length).toBe(1)
    expect(events.filter((e) => e.type === "job.failed").length).toBe(0)
    expect(events.filter((e) => e.type === "job.completed").length).toBe(1)
    const reads = events.flatMap((e: JobEvent) => (e.type === "tool.call" ? [String((e.input as { path?: string }).path)] : []))
    expect(reads).toEqual(["src/f1.ts", "src/f2.ts", "src/f3.ts"])
    const usage = events.findLast((e) => e.type === "usage")
    expect(usage?.type === "usage" && [usage.turns, usage.inputTokens]).toEqual([4, 4 * USAGE.input])
    // The lost run's services token was deleted with the resume; the resumed run's with its end.
    expect(await sql<{ n: number }>(`SELECT count(*)::int AS n FROM runtime.service_token WHERE job_id = $1`, [id])).toEqual([{ n: 0 }])
  })

  test("without a transcript, or with its resumes used up: settled 'worker lost' as before", async () => {
    await h.project("unkept")
    const plain = await h.agent("plain", { tools: ["read"] }, [read(1), { kind: "stall" }])
    const a = await queue("plain", "unkept")
    await loseLeaseAt(plain, a, 2)
    const lost = await settled(a)
    expect([lost.status, lost.reason, lost.message, lost.resumes]).toEqual(["failed", "error", WORKER_LOST, []])
    // Its events end as every started job's do: with one job.failed, the next seq, written by the sweep
    // (the lost run's own late events were dropped).
    const ended = await eventsOf(a)
    expect(ended.map((e) => e.seq)).toEqual(ended.map((_, i) => i))
    expect(ended.filter((e) => e.type === "job.failed" || e.type === "job.completed")).toEqual([
      expect.objectContaining({ type: "job.failed", reason: "error", message: WORKER_LOST, seq: ended.length - 1 })
    ])

    const spent = await h.agent("spent", { tools: ["read"] }, [read(1), { kind: "stall" }])
    const b = await queue("spent", "kept")
    await until(() => spent.requests.length >= 2, { what: "the stalled call", timeoutMs: 60_000, everyMs: 20 })
    // Resumed twice already (KINTSUGI_JOB_RESUMES defaults to 2).
    const twice = JSON.stringify([0, 1].map(() => ({ at: new Date().toISOString(), fromTurn: 1, lostWorker: "gone:0:0" })))
    await sql(`UPDATE runtime.job SET resumes = $2::jsonb WHERE id = $1`, [b, twice])
    await loseLeaseAt(spent, b, 2)
    const used = await settled(b)
    expect([used.status, used.message, used.resumes.length]).toEqual(["failed", WORKER_LOST, 2])
    expect(spent.requests.length).toBe(2)
  })
})
