/**
 * Observability end to end: jobs queued through the API and run by the worker in real job children
 * export one OTLP trace each (the HTTP request, the worker's job span, the kernel's turn and tool spans
 * under it) to a receiver on 127.0.0.1; no span holds content or secrets; /metrics counts the jobs by
 * status with tokens and cost; /readyz follows the database; JSON log lines hold no secret.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { ConfigProvider, Effect } from "effect"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Access } from "../../src/access/Access.ts"
import { pendingMigrations } from "../../src/db/migrations.ts"
import { makeApp } from "../../src/http/app.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import type { JobRow } from "../../src/worker/JobStore.ts"
import { makeTestAppRuntime, type TestRuntime } from "../support/testApp.ts"
import { createRootDir } from "../support/jobRoots.ts"
import { MODEL_PRICES } from "../support/jobChild.ts"
import { attr, startOtlpReceiver, type OtlpReceiver, type OtlpSpan } from "../support/otlpReceiver.ts"
import { builtinAnswer, builtinOutputCalls } from "../support/builtinOutputs.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"

setDefaultTimeout(60_000)

const canary = (what: string) => `CANARY${what}${randomBytes(6).toString("hex")}`
const KEY = `sk-${canary("KEY")}`
const TASK = canary("TASK")
const FILE = canary("FILE")
const ANSWER = canary("ANSWER")
const PASSWORD = canary("PASSWORD")
const COOKIE = canary("COOKIE")
const QUERY = canary("QUERY")
// A tool the agent is not granted, named by the model: model output, not a name to repeat.
const TOOL = canary("TOOL")
const CANARIES = [KEY, TASK, FILE, ANSWER, PASSWORD, COOKIE, QUERY, TOOL]

const ORIGIN = "http://localhost"
const logs: Array<string> = []
const dirs: Array<string> = []
let receiver: OtlpReceiver
let model: ScriptedServer
let broken: ScriptedServer
let rt: TestRuntime
let app: ReturnType<typeof makeApp>
let token = ""
let metricsToken = ""
let readerToken = ""

const createRepo = () => {
  const root = createRootDir("kintsugi-observe-")
  dirs.push(root)
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  writeFileSync(join(root, "src", "app.ts"), `export const secret = "${FILE}"\n`)
  return { root, src: join(root, "src"), out: join(root, "out") }
}

const request = (
  method: string,
  path: string,
  init: { body?: unknown; token?: string; headers?: Record<string, string>; address?: string } = {}
) => {
  const headers: Record<string, string> = { ...(init.headers ?? {}) }
  if (init.token !== undefined) headers["authorization"] = `Bearer ${init.token}`
  if (init.body !== undefined) headers["content-type"] = "application/json"
  return app.handle(
    new Request(`${ORIGIN}${path}`, { method, headers, ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }) }),
    init.address
  )
}

const startJob = async (agent: string) => {
  const repo = createRepo()
  const r = await request("POST", "/api/jobs", {
    token,
    body: {
      agent,
      task: `Inventory the code. ${TASK}`,
      workspace: { root: repo.root, readOnly: [repo.src], outDir: repo.out },
      limits: { timeoutSec: 60 }
    }
  })
  expect(r.status).toBe(201)
  return ((await r.json()) as { job: JobRow }).job
}

/** The worker's span of `jobId`: it ends after the job is settled, so the job is settled once it arrives. */
const workerSpanOf = (jobId: string) => receiver.waitFor((s) => s.name === "kintsugi.worker.job" && attr(s, "kintsugi.job.id") === jobId)

const traceOf = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId)
const byId = (spans: ReadonlyArray<OtlpSpan>, id: string | undefined) => spans.find((s) => s.spanId === id)

beforeAll(async () => {
  receiver = startOtlpReceiver()
  model = await startOpenAIServer([
    // codebase-inventory's output contract: each job writes inventory.md and inventory.json.
    {
      kind: "turn",
      toolCalls: [
        { name: "read", arguments: { path: "src/app.ts" } },
        { name: TOOL, arguments: { note: TASK } },
        ...builtinOutputCalls("codebase-inventory")
      ],
      usage: { input: 1000, output: 100 }
    },
    { kind: "turn", text: builtinAnswer("codebase-inventory", `Read it. ${ANSWER}`), usage: { input: 1200, output: 20 } },
    {
      kind: "turn",
      toolCalls: [{ name: "read", arguments: { path: "src/app.ts" } }, ...builtinOutputCalls("codebase-inventory")],
      usage: { input: 1000, output: 100 }
    },
    { kind: "turn", text: builtinAnswer("codebase-inventory", `Read it. ${ANSWER}`), usage: { input: 1200, output: 20 } }
  ])
  broken = await startOpenAIServer([{ kind: "http-error", status: 400, body: { error: { message: "bad request" } } }])
  const config = ConfigProvider.fromMap(
    new Map([
      ["OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint],
      ["OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"],
      ["OTEL_BSP_SCHEDULE_DELAY", "100"],
      ["KINTSUGI_LOG_FORMAT", "json"],
      ["KINTSUGI_WORKERS", "1"]
    ])
  ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  rt = await makeTestAppRuntime({ worker: { log: (l) => logs.push(l) }, config })
  app = makeApp({ runtime: rt })
  const setup = Effect.gen(function* () {
    const access = yield* Access
    yield* access.addUser("ops", "a long test password", ["agents.manage", "providers.manage"])
    yield* access.addUser("scraper", "a long test password", ["metrics.read"])
    yield* access.addUser("reader", "a long test password", [])
    yield* (yield* ProviderStore).create(
      {
        kind: "custom",
        id: "gw",
        api: "openai-completions",
        baseUrl: model.baseUrl,
        apiKey: KEY,
        models: [{ id: "m", contextWindow: 128_000, maxTokens: 8192, cost: MODEL_PRICES }]
      },
      "test"
    )
    yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "gw", modelId: "m" }, "test")
    // risk-quality's model refuses every request (a 400 is not retried): its job fails.
    yield* (yield* ProviderStore).create(
      {
        kind: "custom",
        id: "gw-broken",
        api: "openai-completions",
        baseUrl: broken.baseUrl,
        apiKey: KEY,
        models: [{ id: "m", contextWindow: 128_000, maxTokens: 8192, cost: MODEL_PRICES }]
      },
      "test"
    )
    yield* (yield* Bindings).set("risk-quality", "", { providerId: "gw-broken", modelId: "m" }, "test")
    return [
      yield* access.issueToken("ops", "t"),
      yield* access.issueToken("scraper", "t"),
      yield* access.issueToken("reader", "t")
    ] as const
  })
  ;[token, metricsToken, readerToken] = await rt.runPromise(setup)
}, 120_000)

afterAll(async () => {
  await rt.dispose()
  await model.stop()
  await broken.stop()
  await receiver.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
}, 60_000)

describe("one OTLP trace per job", () => {
  const jobs: Array<JobRow> = []
  const workerSpans: Array<OtlpSpan> = []

  beforeAll(async () => {
    // One after the other: the scripted model answers in order.
    for (let i = 0; i < 2; i++) {
      const job = await startJob("codebase-inventory")
      jobs.push(job)
      workerSpans.push(await workerSpanOf(job.id))
    }
    // Everything of both traces has been exported once the kernel's job spans are in.
    for (const w of workerSpans) await receiver.waitFor((s) => s.name === "kintsugi.job" && s.parentSpanId === w.spanId)
  })

  test("spans go out as OTLP/HTTP JSON to the configured endpoint", () => {
    expect(receiver.bodies.length).toBeGreaterThan(0)
    expect(receiver.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true)
  })

  test("the request, the worker's job span and the kernel's turn and tool spans form one tree per job", () => {
    for (const [i, worker] of workerSpans.entries()) {
      const trace = traceOf(worker.traceId)
      // The worker's span hangs from the enqueue span of the POST /api/jobs request that queued it.
      const enqueue = byId(trace, worker.parentSpanId)
      expect(enqueue?.name).toBe("JobStore.enqueue")
      const http = byId(trace, enqueue?.parentSpanId)
      expect(http).toMatchObject({ name: "POST /api/jobs", kind: 2 })
      expect(http?.parentSpanId ?? "").toBe("")
      expect(attr(http!, "http.response.status_code")).toBe(201)
      expect(attr(http!, "http.route")).toBe("/api/jobs")
      // The request's other service spans are in the same trace.
      expect(trace.filter((s) => s.parentSpanId === http?.spanId).map((s) => s.name)).toContain("Access.bearer")

      expect(worker.kind).toBe(5) // consumer
      expect(attr(worker, "kintsugi.job.status")).toBe("completed")
      expect(attr(worker, "gen_ai.agent.name")).toBe("codebase-inventory")
      expect(attr(worker, "gen_ai.provider.name")).toBe("gw")
      expect(attr(worker, "gen_ai.request.model")).toBe("m")
      expect(attr(worker, "gen_ai.usage.input_tokens")).toBe(2200)
      expect(attr(worker, "gen_ai.usage.output_tokens")).toBe(120)

      const kernelJob = trace.filter((s) => s.name === "kintsugi.job")
      expect(kernelJob.length).toBe(1)
      expect(kernelJob[0]!.parentSpanId).toBe(worker.spanId)
      expect(attr(kernelJob[0]!, "gen_ai.operation.name")).toBe("invoke_agent")
      expect(attr(kernelJob[0]!, "gen_ai.request.model")).toBe("m")
      const turns = trace.filter((s) => s.name === "kintsugi.turn")
      expect(turns.length).toBe(2)
      expect(turns.every((t) => t.parentSpanId === kernelJob[0]!.spanId)).toBe(true)
      expect(turns.map((t) => attr(t, "kintsugi.turn.number")).sort()).toEqual([1, 2])
      const tools = trace.filter((s) => s.name === "kintsugi.tool")
      expect(tools.length).toBe(i === 0 ? 4 : 3)
      for (const t of tools) expect(turns.map((t) => t.spanId)).toContain(t.parentSpanId!)
      expect(tools.map((t) => attr(t, "gen_ai.tool.name")).sort()).toEqual(
        i === 0 ? ["(unknown)", "read", "write", "write"] : ["read", "write", "write"]
      )
      expect(tools.every((t) => attr(t, "gen_ai.operation.name") === "execute_tool")).toBe(true)
      // Times come from the job child: each kernel span lies within the worker's span.
      for (const s of [...kernelJob, ...turns, ...tools]) {
        expect(BigInt(s.startTimeUnixNano) >= BigInt(worker.startTimeUnixNano) - 5_000_000n).toBe(true)
        expect(BigInt(s.endTimeUnixNano) <= BigInt(worker.endTimeUnixNano) + 5_000_000n).toBe(true)
      }
      // One trace per job: nothing of the other job in it.
      const other = jobs[1 - i]!.id
      expect(trace.some((s) => attr(s, "kintsugi.job.id") === other)).toBe(false)
    }
    expect(workerSpans[0]!.traceId).not.toBe(workerSpans[1]!.traceId)
  })

  test("a caller's valid traceparent is continued by the request's span", async () => {
    await request("GET", "/api/jobs", { token, headers: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" } })
    const http = await receiver.waitFor((s) => s.traceId === "0af7651916cd43dd8448eb211c80319c" && s.kind === 2)
    expect(http).toMatchObject({ name: "GET /api/jobs", parentSpanId: "b7ad6b7169203331" })
  })

  test("no exported span, attribute or event holds the task, file content, model answer or provider key", async () => {
    // Requests carrying secrets in a cookie, a query string and a sign-in body, observed like any other.
    await request("GET", `/api/jobs?token=${QUERY}`, { token, headers: { cookie: `__Host-kintsugi-session=${COOKIE}` } })
    await request("POST", "/api/session", { body: { username: "ops", password: PASSWORD } })
    await receiver.waitFor((s) => s.name === "POST /api/session")
    const exported = receiver.bodies.join("\n")
    for (const c of CANARIES) expect(exported).not.toContain(c)
    // The scripted model did receive them: the canaries were live.
    expect(JSON.stringify(model.requests)).toContain(TASK)
    expect(JSON.stringify(model.requests)).toContain(FILE)
  })
})

describe("/metrics", () => {
  test("after 3 jobs (2 completed, 1 failed): jobs by status, settled counts, tokens and cost", async () => {
    // An agent whose model refuses the request fails (an unbound one is not even queued: test/http/jobAdmission.test.ts).
    const failing = await startJob("risk-quality")
    await workerSpanOf(failing.id)
    const r = await request("GET", "/metrics", { token: metricsToken })
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toStartWith("text/plain; version=0.0.4")
    const text = await r.text()
    const value = (series: string) => {
      const line = text.split("\n").find((l) => l.startsWith(`${series} `))
      return line === undefined ? undefined : Number(line.slice(series.length + 1))
    }
    expect(value('kintsugi_jobs{status="completed"}')).toBe(2)
    expect(value('kintsugi_jobs{status="failed"}')).toBe(1)
    expect(value('kintsugi_jobs{status="queued"}')).toBe(0)
    expect(value('kintsugi_jobs_settled_total{status="completed",reason=""}')).toBe(2)
    expect(value('kintsugi_jobs_settled_total{status="failed",reason="error"}')).toBe(1)
    expect(value('kintsugi_job_duration_seconds_count{status="completed"}')).toBe(2)
    expect(value('kintsugi_tokens_total{model="gw/m",type="input"}')).toBe(4400)
    expect(value('kintsugi_tokens_total{model="gw/m",type="output"}')).toBe(240)
    const perM = (n: number, price: number) => (n * price) / 1e6
    expect(value('kintsugi_cost_usd_total{model="gw/m"}')).toBeCloseTo(perM(4400, MODEL_PRICES.input) + perM(240, MODEL_PRICES.output), 9)
    expect(value('kintsugi_http_requests_total{method="POST",route="/api/jobs",status="201"}')).toBe(3)
    expect(text).toContain("# TYPE kintsugi_job_duration_seconds histogram")
    for (const c of CANARIES) expect(text).not.toContain(c)
  })

  test("loopback clients without credentials; others need metrics.read (or admin)", async () => {
    expect((await request("GET", "/metrics", { address: "127.0.0.1" })).status).toBe(200)
    expect((await request("GET", "/metrics", { address: "::1" })).status).toBe(200)
    expect((await request("GET", "/metrics", { address: "::ffff:127.0.0.1" })).status).toBe(200)
    // Through a proxy on the same host, the client is not loopback.
    expect((await request("GET", "/metrics", { address: "127.0.0.1", headers: { "x-forwarded-for": "203.0.113.9" } })).status).toBe(401)
    expect((await request("GET", "/metrics", { address: "203.0.113.9" })).status).toBe(401)
    expect((await request("GET", "/metrics")).status).toBe(401)
    expect((await request("GET", "/metrics", { token: readerToken })).status).toBe(403)
    expect((await request("GET", "/metrics", { token: metricsToken })).status).toBe(200)
    expect((await request("GET", "/metrics", { token })).status).toBe(200)
  })
})

describe("/readyz", () => {
  test("200 when the database answers with every migration applied; 503 once the database is gone", async () => {
    const other = await makeTestAppRuntime()
    const probeApp = makeApp({ runtime: other, allowedHosts: ["example.com"] })
    // Any Host, like /healthz: probes address the pod's IP.
    const ready = await probeApp.handle(new Request(`${ORIGIN}/readyz`))
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: "ready" })
    await other.dispose()
    const gone = await probeApp.handle(new Request(`${ORIGIN}/readyz`))
    expect(gone.status).toBe(503)
    expect(await gone.json()).toEqual({ status: "unavailable", detail: "database unreachable" })
  })

  test("a migration file the database has not applied is named as pending", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kintsugi-migrations-"))
    dirs.push(dir)
    writeFileSync(join(dir, "001_schemas.sql"), "")
    writeFileSync(join(dir, "999_future.sql"), "")
    expect(await rt.runPromise(pendingMigrations(dir))).toEqual(["999_future"])
  })
})

describe("log lines", () => {
  test("JSON lines: an access line per request, the job lifecycle, and no token, cookie, password or content", async () => {
    const lines = logs.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.every((l) => typeof l["time"] === "string" && typeof l["level"] === "string" && typeof l["msg"] === "string")).toBe(true)
    const access = lines.filter((l) => l["msg"] === "http request")
    expect(access).toContainEqual(
      expect.objectContaining({ method: "POST", path: "/api/jobs", route: "/api/jobs", status: 201, user: "ops" })
    )
    expect(access).toContainEqual(expect.objectContaining({ method: "GET", path: "/api/jobs", status: 200, user: "ops" }))
    expect(access).toContainEqual(expect.objectContaining({ method: "POST", path: "/api/session", status: 401 }))
    const http = access.find((l) => l["path"] === "/api/jobs" && l["method"] === "POST")!
    expect(typeof http["traceId"]).toBe("string")
    // The line's ids are its request's server span (made apart from the line: observe.ts copies them).
    const served = await receiver.waitFor((s) => s.spanId === http["spanId"])
    expect(served).toMatchObject({ traceId: http["traceId"], name: "POST /api/jobs", kind: 2 })
    for (const phase of ["job queued", "job started", "job settled"]) {
      expect(lines.filter((l) => l["msg"] === phase).length).toBeGreaterThanOrEqual(2)
    }
    expect(lines).toContainEqual(expect.objectContaining({ msg: "job settled", status: "completed", inputTokens: 2200 }))
    expect(lines).toContainEqual(expect.objectContaining({ msg: "job settled", status: "failed", reason: "error" }))
    const all = logs.join("\n")
    for (const c of CANARIES) expect(all).not.toContain(c)
    expect(all).not.toContain(token)
    expect(all).not.toContain(metricsToken)
  })
})
