/**
 * Jobs survive their worker: an expired lease is settled "worker lost" exactly once and a lost worker's
 * late events do not resurrect the job; the same Idempotency-Key starts one job, on the API (even when
 * two requests race) and in the portal's run form (a double submit).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { makeApp } from "../../src/http/app.ts"
import { JobStore, WORKER_LOST, type JobInput, type JobRow } from "../../src/worker/JobStore.ts"
import { makeTestRuntime, signInTestUsers, type AppRuntime } from "../portal/harness.ts"
import { Access } from "../../src/access/Access.ts"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { queueableBinding } from "../support/api.ts"
import { createRootDir } from "../support/jobRoots.ts"

setDefaultTimeout(60_000)

let rt: AppRuntime
let app: ReturnType<typeof makeApp>
let sessions: Awaited<ReturnType<typeof signInTestUsers>>
const tokens: Record<string, string> = {}

// A workspace inside the test job root: the API and the form refuse anything else (job roots).
const WS = createRootDir("lease-")
mkdirSync(join(WS, "src"))
mkdirSync(join(WS, "out"))
const INPUT: JobInput = {
  agent: "codebase-inventory",
  task: "t",
  workspace: { root: WS, readOnly: [join(WS, "src")], outDir: join(WS, "out") },
  limits: { timeoutSec: 60 }
}
const run = <A, E>(e: Effect.Effect<A, E, JobStore | SqlClient>) => rt.runPromise(e)

beforeAll(async () => {
  rt = await makeTestRuntime()
  app = makeApp({ runtime: rt, log: (l) => console.error(l) })
  sessions = await signInTestUsers(rt)
  // Bound, so admission queues its jobs (no worker runs here: the provider is never called).
  await rt.runPromise(queueableBinding("codebase-inventory"))
  for (const name of ["alice", "bob"]) {
    await rt.runPromise(Effect.flatMap(Access, (a) => a.addUser(name, "a long test password", ["agents.manage"])))
    tokens[name] = await rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken(name, "test")))
  }
}, 120_000)
afterAll(async () => {
  await rt.dispose()
}, 60_000)

describe("leases", () => {
  test("an expired lease is settled failed/error 'worker lost' exactly once; the lost worker cannot write after", async () => {
    const job = await run(Effect.flatMap(JobStore, (s) => s.enqueue(INPUT, "setup")))
    const claimed = await run(Effect.flatMap(JobStore, (s) => s.claim("gone-host:1:0", 1, job.id)))
    expect(claimed?.id).toBe(job.id)
    const other = await run(Effect.flatMap(JobStore, (s) => s.claim("live-host:2:0", 60_000)))
    // The 1 ms lease runs out; a sweep (as any serve process runs it) settles the job, a second one nothing.
    let swept: ReadonlyArray<string> = []
    while (!swept.includes(job.id)) swept = await run(Effect.flatMap(JobStore, (s) => s.settleExpired))
    expect(await run(Effect.flatMap(JobStore, (s) => s.settleExpired))).toEqual([])
    const settled = await run(Effect.flatMap(JobStore, (s) => s.get(job.id)))
    expect(settled).toMatchObject({ status: "failed", reason: "error", message: WORKER_LOST })
    if (other !== undefined) expect((await run(Effect.flatMap(JobStore, (s) => s.get(other.id)))).status).toBe("running")
    // The lost worker learns it at its next heartbeat; its late events and settlement change nothing.
    expect(await run(Effect.flatMap(JobStore, (s) => s.heartbeat(job.id, "gone-host:1:0", 15_000)))).toBe(false)
    await run(
      Effect.flatMap(JobStore, (s) =>
        s.appendEvent(job.id, { type: "job.completed", seq: 0, at: new Date().toISOString(), summary: "late" })
      )
    )
    await run(Effect.flatMap(JobStore, (s) => s.settle(job.id, { status: "completed", summary: "late" }, null)))
    expect(await run(Effect.flatMap(JobStore, (s) => s.events(job.id, -1)))).toEqual([])
    expect(await run(Effect.flatMap(JobStore, (s) => s.get(job.id)))).toMatchObject({
      status: "failed",
      message: WORKER_LOST,
      summary: null
    })
  })

  test("a heartbeat keeps the lease: the sweep leaves a live job alone", async () => {
    const job = await run(Effect.flatMap(JobStore, (s) => s.enqueue(INPUT, "setup")))
    await run(Effect.flatMap(JobStore, (s) => s.claim("live-host:3:0", 60_000, job.id)))
    expect(await run(Effect.flatMap(JobStore, (s) => s.heartbeat(job.id, "live-host:3:0", 60_000)))).toBe(true)
    expect(await run(Effect.flatMap(JobStore, (s) => s.heartbeat(job.id, "someone-else:1:0", 60_000)))).toBe(false)
    expect(await run(Effect.flatMap(JobStore, (s) => s.settleExpired))).not.toContain(job.id)
    expect((await run(Effect.flatMap(JobStore, (s) => s.get(job.id)))).status).toBe("running")
  })
})

const post = (token: string, body: unknown, key?: string) =>
  app.handle(
    new Request("http://localhost/api/jobs", {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        ...(key === undefined ? {} : { "idempotency-key": key })
      },
      body: JSON.stringify(body)
    })
  )
const jobsWithKey = (key: string) =>
  run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ id: string; createdBy: string }>`SELECT id, created_by FROM runtime.job WHERE idempotency_key = ${key}`
    )
  )

describe("Idempotency-Key", () => {
  test("the same key twice at once: one job, 201 then 200 with the same id", async () => {
    const key = `k-${crypto.randomUUID()}`
    const answers = await Promise.all(Array.from({ length: 4 }, () => post(tokens["alice"] ?? "", INPUT, key)))
    const bodies = await Promise.all(answers.map(async (r) => ({ status: r.status, job: ((await r.json()) as { job: JobRow }).job })))
    expect(bodies.map((b) => b.status).sort()).toEqual([200, 200, 200, 201])
    expect(new Set(bodies.map((b) => b.job.id)).size).toBe(1)
    expect((await jobsWithKey(key)).length).toBe(1)
  })

  test("the key with another request: 422 naming the reuse, nothing queued; another user's key is theirs", async () => {
    const key = `k-${crypto.randomUUID()}`
    expect((await post(tokens["alice"] ?? "", INPUT, key)).status).toBe(201)
    const reused = await post(tokens["alice"] ?? "", { ...INPUT, task: "something else" }, key)
    expect(reused.status).toBe(422)
    const body = (await reused.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe("idempotency-key-reused")
    expect(body.error.message).toContain("already used for a different job request")
    expect((await post(tokens["bob"] ?? "", INPUT, key)).status).toBe(201)
    expect((await jobsWithKey(key)).map((j) => j.createdBy).sort()).toEqual(["alice", "bob"])
  })

  test("a malformed key is a 400 naming the header", async () => {
    const r = await post(tokens["alice"] ?? "", INPUT, "has space")
    expect(r.status).toBe(400)
    expect(await r.text()).toContain("Idempotency-Key")
  })

  test("the portal's run form submitted twice (a double click) starts one job", async () => {
    const s = sessions.manager
    const headers = {
      host: "localhost",
      origin: "http://localhost",
      "sec-fetch-site": "same-origin",
      cookie: `__Host-kintsugi-session=${s.cookie}`
    }
    const page = await (await app.handle(new Request("http://localhost/agents/codebase-inventory/run", { headers }))).text()
    const key = /name="idempotencyKey" value="([^"]+)"/.exec(page)?.[1] ?? ""
    expect(key).not.toBe("")
    expect(page).toContain("hx-disabled-elt")
    const submit = () =>
      app.handle(
        new Request("http://localhost/agents/codebase-inventory/run", {
          method: "POST",
          headers,
          redirect: "manual",
          body: new URLSearchParams({
            _csrf: s.csrf,
            idempotencyKey: key,
            task: "t",
            root: WS,
            readOnly: join(WS, "src"),
            outDir: join(WS, "out"),
            timeoutSec: "60",
            maxCostUsd: "",
            project: ""
          })
        })
      )
    const [a, b] = await Promise.all([submit(), submit()])
    expect([a.status, b.status]).toEqual([303, 303])
    expect(a.headers.get("location")).toBe(b.headers.get("location"))
    expect((await jobsWithKey(key)).length).toBe(1)
    // A fresh render of the form carries a fresh key: the next job is a new one.
    const again = await (await app.handle(new Request("http://localhost/agents/codebase-inventory/run", { headers }))).text()
    expect(/name="idempotencyKey" value="([^"]+)"/.exec(again)?.[1]).not.toBe(key)
  })
})
