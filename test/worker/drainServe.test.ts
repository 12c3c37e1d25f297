/**
 * Graceful drain on real `kintsugi serve` processes, on the embedded database or on PostgreSQL when
 * DATABASE_URL is set: SIGTERM with 2 running and 3 queued jobs (KINTSUGI_WORKERS=2) answers /readyz
 * 503 `draining`, lets one running job finish and ends the other `aborted` "server shutting down" when
 * KINTSUGI_DRAIN_SEC is up, exits 0, and leaves the queued jobs to the next server, which runs them;
 * every job settled once, none run twice. A second signal cuts a drain short. The scripted model holds
 * each response until the test releases it: the test waits on log lines and HTTP state, never on time.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { makeDbLayer } from "../../src/db/Db.ts"
import { SERVER_SHUTTING_DOWN } from "../../src/worker/Drain.ts"
import { createAgentFiles } from "../support/api.ts"
import { adminStatement, withDatabase } from "../support/db.ts"
import { startOpenAIServer, type RecordedRequest, type ScriptedServer, type Step } from "../support/scriptedServers.ts"
import { addScriptedProvider, createServeHome, issueApiToken, startServe, type ServeProcess } from "../support/serveProcess.ts"

setDefaultTimeout(300_000)

const SERVER = process.env["DATABASE_URL"] ?? ""
const AGENT = "drain-probe"
const ADMIN_PASSWORD = "the drain test admin password"
/** Long enough for a released job to finish inside it on a loaded machine; the held one outlasts it. */
const DRAIN_SEC = 15

let home = ""
let cleanupHome: () => void = () => undefined
let jobRoot = ""
let databaseUrl = ""
let model: ScriptedServer | undefined
let token = ""
const running: Array<ServeProcess> = []

/** A model response held until `release`; `arrived` resolves when the job's request comes in. */
interface Gate {
  readonly arrived: Promise<void>
  readonly release: () => void
}
const gates = new Map<string, Gate & { readonly came: () => void; readonly released: Promise<void> }>()
const createGate = (marker: string): Gate => {
  let came: () => void = () => undefined
  let release: () => void = () => undefined
  const arrived = new Promise<void>((resolve) => (came = resolve))
  const released = new Promise<void>((resolve) => (release = resolve))
  gates.set(marker, { arrived, came, release, released })
  return { arrived, release }
}

/** Each job's task carries `[drain-N]`: its request is held while a gate names it, else answered at once. */
const respond = async (request: RecordedRequest): Promise<Step> => {
  const marker = /\[drain-\d+\]/.exec(request.rawBody)?.[0] ?? "(none)"
  const gate = gates.get(marker)
  if (gate !== undefined) {
    gate.came()
    await gate.released
  }
  return { kind: "turn", text: `Done ${marker}.` }
}

const requestsFor = (marker: string) => (model?.requests ?? []).filter((r) => r.rawBody.includes(marker)).length

const env = (extra: Record<string, string>): Record<string, string> => ({
  PATH: process.env["PATH"] ?? "/usr/bin:/bin",
  HOME: home,
  KINTSUGI_DATA_DIR: home,
  KINTSUGI_JOB_ROOTS: jobRoot,
  KINTSUGI_ADMIN_PASSWORD: ADMIN_PASSWORD,
  NO_PROXY: "127.0.0.1,localhost",
  ...(databaseUrl === "" ? {} : { DATABASE_URL: databaseUrl }),
  ...extra
})

const serve = async (extra: Record<string, string>) => {
  const s = await startServe(env(extra))
  running.push(s)
  return s
}

const call = async (s: ServeProcess, method: string, url: string, body?: unknown, auth = token) => {
  const r = await fetch(`${s.origin}${url}`, {
    method,
    headers: {
      ...(auth === "" ? {} : { authorization: `Bearer ${auth}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await r.text()
  return { status: r.status, text, json: (): unknown => JSON.parse(text) }
}

const submit = async (s: ServeProcess, n: number): Promise<string> => {
  const ws = path.join(jobRoot, "ws")
  const r = await call(s, "POST", "/api/jobs", {
    agent: AGENT,
    task: `Say hello [drain-${n}].`,
    workspace: { root: ws, readOnly: [path.join(ws, "src")], outDir: path.join(ws, "out") },
    limits: { timeoutSec: 600 }
  })
  expect(r.status).toBe(201)
  return (r.json() as { job: { id: string } }).job.id
}

const statusOf = async (s: ServeProcess, id: string) =>
  ((await call(s, "GET", `/api/jobs/${id}`)).json() as { job: { status: string } }).job.status

/** The JSON log lines of a serve process. */
const logLines = (output: string): Array<Record<string, unknown>> =>
  output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)

const settledLine = (id: string) => (output: string) => logLines(output).some((l) => l["msg"] === "job settled" && l["jobId"] === id)

/** One query on the installation's database, with no serve process holding it. */
const query = (text: string, values: ReadonlyArray<unknown> = []) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(Layer.build(makeDbLayer(databaseUrl === "" ? { dataDir: path.join(home, "data") } : { url: databaseUrl })), (ctx) =>
        Effect.provide(
          Effect.flatMap(SqlClient, (sql) => sql.unsafe<Record<string, unknown>>(text, values)),
          ctx
        )
      )
    )
  )

/** Each job's row with its count of model requests, `job.started` events and terminal events. */
const jobRecords = async (ids: ReadonlyArray<string>) => {
  const rows = await query(
    `SELECT id, status, reason, message, worker_id,
       (SELECT count(*)::int FROM runtime.job_event e WHERE e.job_id = j.id AND e.type = 'job.started') AS starts,
       (SELECT count(*)::int FROM runtime.job_event e WHERE e.job_id = j.id AND e.type IN ('job.completed', 'job.failed')) AS ends,
       (SELECT e.event->>'message' FROM runtime.job_event e WHERE e.job_id = j.id AND e.type = 'job.failed') AS failed_message
     FROM runtime.job j WHERE id = ANY($1::uuid[])`,
    [ids]
  )
  return ids.map((id) => rows.find((r) => r["id"] === id) ?? { id, missing: true })
}

beforeAll(async () => {
  ;({ home, cleanup: cleanupHome } = await createServeHome())
  jobRoot = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-drain-roots-")))
  fs.mkdirSync(path.join(jobRoot, "ws", "src"), { recursive: true })
  fs.mkdirSync(path.join(jobRoot, "ws", "out"), { recursive: true })
  fs.writeFileSync(path.join(jobRoot, "ws", "src", "app.ts"), "export const main = () => 42\n")
  if (SERVER !== "") {
    const name = `kintsugi_drain_${randomBytes(6).toString("hex")}`
    await adminStatement(SERVER, `CREATE DATABASE ${name}`)
    databaseUrl = withDatabase(SERVER, name)
  }
  model = await startOpenAIServer(Array.from({ length: 40 }, (): Step => ({ kind: "fn", respond })))

  // The installation, set up through the API of a serve process that runs no job.
  const setup = await serve({ KINTSUGI_WORKERS: "0" })
  token = await issueApiToken(setup.origin, "admin", ADMIN_PASSWORD, "drain")
  await addScriptedProvider(setup.origin, token, model.baseUrl, "sk-drain")
  // No output contract: one model request per job, so requests count runs.
  expect((await call(setup, "POST", "/api/admin/agents", createAgentFiles(AGENT, { tools: ["read"] }))).status).toBe(201)
  expect((await call(setup, "PUT", `/api/admin/agents/${AGENT}/bindings`, { providerId: "scripted", modelId: "m" })).status).toBe(200)
  await setup.stop()
}, 300_000)

afterAll(async () => {
  for (const g of gates.values()) g.release()
  for (const s of running) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill("SIGKILL")
  await Promise.all(running.map((s) => s.proc.exited))
  await model?.stop()
  if (databaseUrl !== "") await adminStatement(SERVER, `DROP DATABASE IF EXISTS ${new URL(databaseUrl).pathname.slice(1)} WITH (FORCE)`)
  if (jobRoot !== "") fs.rmSync(jobRoot, { recursive: true, force: true })
  cleanupHome()
}, 60_000)

describe(`graceful drain (${SERVER === "" ? "embedded database" : "PostgreSQL"})`, () => {
  test("SIGTERM with 2 running and 3 queued jobs: /readyz 503 draining, one finishes, one ends aborted when the drain is up, the queued run after a restart; each settled once", async () => {
    const first = await serve({ KINTSUGI_WORKERS: "2", KINTSUGI_DRAIN_SEC: String(DRAIN_SEC) })
    // The start-up line: the URL and the allowed hosts (HOST 127.0.0.1: no warning).
    const serving = logLines(first.output()).find((l) => l["msg"] === `serving on http://127.0.0.1:${first.port}/`)
    expect(serving).toMatchObject({
      level: "info",
      url: `http://127.0.0.1:${first.port}/`,
      allowedHosts: "localhost,127.0.0.1,[::1],127.0.0.1"
    })

    const finishes = createGate("[drain-0]")
    const outlasts = createGate("[drain-1]")
    const a = await submit(first, 0)
    const b = await submit(first, 1)
    await Promise.all([finishes.arrived, outlasts.arrived])
    const queued = [await submit(first, 2), await submit(first, 3), await submit(first, 4)]
    expect(await statusOf(first, a)).toBe("running")
    expect(await statusOf(first, b)).toBe("running")
    for (const id of queued) expect(await statusOf(first, id)).toBe("queued")

    const signalled = performance.now()
    first.proc.kill("SIGTERM")
    await first.waitFor("the drain to begin", (t) => t.includes("draining: no job is claimed any more"))
    const draining = await call(first, "GET", "/readyz", undefined, "")
    expect(draining.status).toBe(503)
    expect(draining.json()).toMatchObject({ status: "draining" })

    // One running job finishes during the drain; the server still drains (the other is held).
    finishes.release()
    await first.waitFor("the released job to settle", settledLine(a))
    expect(await statusOf(first, a)).toBe("completed")
    const stillDraining = await call(first, "GET", "/readyz", undefined, "")
    expect(stillDraining.status).toBe(503)
    expect(stillDraining.json()).toMatchObject({ status: "draining" })
    for (const id of queued) expect(await statusOf(first, id)).toBe("queued")

    // The other outlasts KINTSUGI_DRAIN_SEC: it is aborted, and the process exits 0.
    expect(await first.proc.exited).toBe(0)
    expect(performance.now() - signalled).toBeGreaterThanOrEqual(DRAIN_SEC * 1000)
    const firstLog = logLines(first.output())
    expect(firstLog.some((l) => l["msg"] === "drain time is up: running jobs end as aborted")).toBe(true)
    expect(
      firstLog
        .filter((l) => l["msg"] === "job settled")
        .map((l) => l["jobId"])
        .sort()
    ).toEqual([a, b].sort())
    expect(firstLog.some((l) => l["msg"] === "job started" && queued.includes(String(l["jobId"])))).toBe(false)

    // The next server runs the queued jobs.
    const second = await serve({ KINTSUGI_WORKERS: "2", KINTSUGI_DRAIN_SEC: String(DRAIN_SEC) })
    for (const id of queued) await second.waitFor(`queued job ${id} to settle`, settledLine(id))
    await second.stop()
    expect(second.proc.exitCode).toBe(0)

    const records = await jobRecords([a, b, ...queued])
    expect(records.map((r) => ({ id: r["id"], status: r["status"], reason: r["reason"], message: r["message"] }))).toEqual([
      { id: a, status: "completed", reason: null, message: null },
      { id: b, status: "failed", reason: "aborted", message: SERVER_SHUTTING_DOWN },
      ...queued.map((id) => ({ id, status: "completed", reason: null, message: null }))
    ])
    // Settled once, run once: one start and one end each, one model request each.
    for (const r of records) expect({ id: r["id"], starts: r["starts"], ends: r["ends"] }).toEqual({ id: r["id"], starts: 1, ends: 1 })
    expect(records[1]?.["failedMessage"]).toBe(SERVER_SHUTTING_DOWN)
    for (let n = 0; n <= 4; n++) expect({ n, requests: requestsFor(`[drain-${n}]`) }).toEqual({ n, requests: 1 })
    // Who ran what: the running jobs on the first server, the queued ones on the second.
    for (const r of records.slice(0, 2)) expect(String(r["workerId"])).toContain(`:${first.proc.pid}:`)
    for (const r of records.slice(2)) expect(String(r["workerId"])).toContain(`:${second.proc.pid}:`)
  })

  test("a second SIGTERM during the drain aborts the running job at once as 'server shutting down' and exits 0", async () => {
    // A drain far longer than this test may take: only the second signal can end it in time.
    const s = await serve({ KINTSUGI_WORKERS: "1", KINTSUGI_DRAIN_SEC: "3600" })
    const held = createGate("[drain-5]")
    const id = await submit(s, 5)
    await held.arrived
    s.proc.kill("SIGTERM")
    await s.waitFor("the drain to begin", (t) => t.includes("draining: no job is claimed any more"))
    expect((await call(s, "GET", "/readyz", undefined, "")).json()).toMatchObject({ status: "draining" })
    s.proc.kill("SIGTERM")
    expect(await s.proc.exited).toBe(0)
    expect(logLines(s.output()).some((l) => l["msg"] === "drain cut short: running jobs end as aborted")).toBe(true)
    const [record] = await jobRecords([id])
    expect(record).toMatchObject({
      status: "failed",
      reason: "aborted",
      message: SERVER_SHUTTING_DOWN,
      starts: 1,
      ends: 1,
      failedMessage: SERVER_SHUTTING_DOWN
    })
    expect(requestsFor("[drain-5]")).toBe(1)
  })

  test("an invalid KINTSUGI_DRAIN_SEC stops start-up with a line naming it", async () => {
    await expect(serve({ KINTSUGI_WORKERS: "1", KINTSUGI_DRAIN_SEC: "soon" })).rejects.toThrow(
      'kintsugi: cannot start: KINTSUGI_DRAIN_SEC must be a whole number of seconds (0 or more), not "soon"'
    )
  })
})
