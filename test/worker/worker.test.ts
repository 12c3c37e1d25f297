/**
 * The worker end to end: jobs started through the API run in real job children against scripted
 * model servers; events are persisted and streamed over SSE; outputs are committed; every job is
 * settled, whatever happens to its child.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { ConfigProvider, Effect } from "effect"
import { randomBytes } from "node:crypto"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Access } from "../../src/access/Access.ts"
import { makeApp } from "../../src/http/app.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { childEnvironment } from "../../src/worker/child/JobProcess.ts"
import { Metrics } from "../../src/telemetry/Metrics.ts"
import { JobBus } from "../../src/worker/JobBus.ts"
import { JobStore, type JobRow } from "../../src/worker/JobStore.ts"
import { makeTestAppRuntime, type TestRuntime } from "../support/testApp.ts"
import { createRootDir } from "../support/jobRoots.ts"
import { MODEL_PRICES } from "../support/jobChild.ts"
import { isAlive } from "../support/processes.ts"
import { BUILTIN_OUTPUTS, builtinAnswer, builtinAnswerStep, builtinAnswerTurn, builtinOutputsStep } from "../support/builtinOutputs.ts"
import { startOpenAIServer, type ScriptedServer, type Step } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const KEY = `sk-worker-${randomBytes(12).toString("hex")}`
const ORIGIN = "http://localhost"
const logs: Array<string> = []
let rt: TestRuntime
let app: ReturnType<typeof makeApp>
let token = ""
const servers: Array<ScriptedServer> = []
const dirs: Array<string> = []

const git = (cwd: string, ...args: Array<string>) => {
  const r = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd }
  })
  return new TextDecoder().decode(r.stdout).trim()
}

/** A workspace inside a fresh git repository: src/ (read-only, one file) and out/. */
const createRepo = () => {
  const root = createRootDir("kintsugi-worker-")
  dirs.push(root)
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  writeFileSync(join(root, "src", "app.ts"), "export const main = () => 42\n")
  writeFileSync(join(root, "out", ".keep"), "")
  git(root, "init", "-q")
  git(root, "add", ".")
  git(root, "commit", "-qm", "init")
  return { root, src: join(root, "src"), out: join(root, "out") }
}

const api = async (method: string, path: string, body?: unknown) => {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` }
  if (body !== undefined) headers["content-type"] = "application/json"
  const r = await app.handle(
    new Request(`${ORIGIN}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  )
  return { status: r.status, text: await r.text() }
}

const useProvider = async (id: string, steps: ReadonlyArray<Step>) => {
  const server = await startOpenAIServer(steps)
  servers.push(server)
  await rt.runPromise(
    Effect.flatMap(ProviderStore, (p) =>
      p.create(
        {
          kind: "custom",
          id,
          api: "openai-completions",
          baseUrl: server.baseUrl,
          apiKey: KEY,
          models: [{ id: "m", contextWindow: 128_000, maxTokens: 8192, cost: MODEL_PRICES }]
        },
        "test"
      )
    )
  )
  return server
}
const bind = (agent: string, provider: string) =>
  rt.runPromise(Effect.flatMap(Bindings, (b) => b.set(agent, "", { providerId: provider, modelId: "m" }, "test")))

const startJob = async (agent: string, repo: { root: string; src: string; out: string }, limits: Record<string, unknown> = {}) => {
  const r = await api("POST", "/api/jobs", {
    agent,
    task: "Inventory the code.",
    workspace: { root: repo.root, readOnly: [repo.src], outDir: repo.out },
    limits: { timeoutSec: 60, ...limits }
  })
  expect(r.status).toBe(201)
  return (JSON.parse(r.text) as { job: JobRow }).job
}
const waitSettled = (id: string): Promise<JobRow> =>
  until(
    async () => {
      const job = await rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
      return (job.status === "completed" || job.status === "failed") && job
    },
    { what: `job ${id} to settle`, timeoutMs: 120_000, everyMs: 50 }
  )

beforeAll(async () => {
  process.env["KINTSUGI_WORKERS"] = "3"
  rt = await makeTestAppRuntime({ worker: { log: (l) => logs.push(l) } })
  app = makeApp({ runtime: rt, log: (l) => logs.push(l) })
  await rt.runPromise(Effect.flatMap(Access, (a) => a.addUser("ops", "a long test password", ["agents.manage", "providers.manage"])))
  token = await rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken("ops", "test")))
}, 120_000)
afterAll(async () => {
  await rt.dispose()
  await Promise.all(servers.map((s) => s.stop()))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  delete process.env["KINTSUGI_WORKERS"]
}, 60_000)

describe("the worker", () => {
  test("a job for a built-in agent: events persisted and streamed over SSE, outputs committed, completed with usage and cost", async () => {
    const server = await useProvider("gw", [
      { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/app.ts" } }], usage: { input: 1000, output: 100 } },
      builtinOutputsStep("codebase-inventory", "# Inventory\n\nOne file.\n", { input: 1200, output: 80 }),
      { kind: "turn", text: builtinAnswer("codebase-inventory", "Wrote inventory.md."), usage: { input: 1300, output: 20 } }
    ])
    await bind("codebase-inventory", "gw")
    const repo = createRepo()
    const job = await startJob("codebase-inventory", repo)
    expect(job.status).toBe("queued")
    // Follow it live over SSE from the start.
    const sse = await app.handle(new Request(`${ORIGIN}/api/jobs/${job.id}/events`, { headers: { authorization: `Bearer ${token}` } }))
    expect(sse.headers.get("content-type")).toContain("text/event-stream")
    const stream = await sse.text()
    const frames = stream.split("\n\n").filter((f) => f.startsWith("id:"))
    const types = frames.map((f) => /event: (.+)/.exec(f)?.[1])
    expect(types[0]).toBe("job.started")
    expect(types[types.length - 1]).toBe("job.completed")
    expect(types).toContain("output")

    const done = await waitSettled(job.id)
    expect(done).toMatchObject({
      status: "completed",
      summary: builtinAnswer("codebase-inventory", "Wrote inventory.md."),
      agentVersion: "3",
      model: "gw/m"
    })
    // The typed answer: stored with the job.completed event, shown by the API's job.
    const viaApi = JSON.parse((await api("GET", `/api/jobs/${job.id}`)).text) as { job: { answer?: unknown } }
    expect(viaApi.job.answer).toEqual(BUILTIN_OUTPUTS["codebase-inventory"]?.answer)
    const perM = (n: number, price: number) => (n * price) / 1e6
    expect(done.costUsd).toBeCloseTo(perM(3500, MODEL_PRICES.input) + perM(200, MODEL_PRICES.output), 12)
    expect(done.usage).toMatchObject({ inputTokens: 3500, outputTokens: 200, turns: 3 })
    // Persisted: the same events as streamed.
    const stored = JSON.parse((await api("GET", `/api/jobs/${job.id}/events?format=json`)).text) as { events: Array<{ seq: number }> }
    expect(stored.events.length).toBe(frames.length)
    expect(done.outputs).toMatch(/^committed [0-9a-f]{12}$/)
    expect(git(repo.root, "log", "-1", "--format=%s")).toBe(`kintsugi: codebase-inventory v3 (job ${job.id})`)
    expect(git(repo.root, "show", "--name-only", "--format=", "HEAD")).toBe("out/inventory.json\nout/inventory.md")
    // The key reached the provider, though no event, row or log line holds it.
    expect(server.requests[0]!.headers["authorization"]).toBe(`Bearer ${KEY}`)
  })

  test("model text holding U+0000 and unpaired surrogates is stored with U+FFFD in their place: the job completes, no event is lost", async () => {
    await useProvider("nul", [
      { kind: "turn", text: "looking\u0000 at \ud800 it", toolCalls: [{ name: "read", arguments: { path: "src/app\u0000.ts\udc00" } }] },
      builtinOutputsStep("codebase-inventory", "# Inventory\n\nOne file.\n"),
      builtinAnswerTurn("codebase-inventory", "Wrote\u0000 inventory.md \ud83d.")
    ])
    await bind("codebase-inventory", "nul")
    const job = await startJob("codebase-inventory", createRepo())
    const done = await waitSettled(job.id)
    expect(done).toMatchObject({ status: "completed" })
    expect(done.summary).toContain("Wrote\ufffd inventory.md \ufffd.")
    const stored = JSON.parse((await api("GET", `/api/jobs/${job.id}/events?format=json`)).text) as {
      events: Array<{ seq: number; type: string; input?: { path?: string }; text?: string }>
    }
    expect(stored.events.map((e) => e.seq)).toEqual(stored.events.map((_, i) => i))
    expect(stored.events.at(-1)?.type).toBe("job.completed")
    expect(stored.events.find((e) => e.type === "tool.call")?.input?.path).toBe("src/app\ufffd.ts\ufffd")
    const text = stored.events.flatMap((e) => (e.type === "message.delta" && e.text !== undefined ? [e.text] : [])).join("")
    expect(text).toContain("looking\ufffd at \ufffd it")
  })

  test("grounding: counts stored with the job, in the API's job and in /metrics; the event lists the citations", async () => {
    await useProvider("gg", [
      { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/app.ts" } }] },
      builtinOutputsStep("codebase-inventory", "# Inventory\n\nmain at src/app.ts:1, helpers at src/app.ts:40.\n"),
      builtinAnswerTurn("codebase-inventory", "Wrote inventory.md.")
    ])
    await bind("codebase-inventory", "gg")
    const repo = createRepo()
    const job = await startJob("codebase-inventory", repo)
    const done = await waitSettled(job.id)
    expect(done).toMatchObject({ status: "completed", grounding: { grounded: 1, ungrounded: 1, unknown: 0, required: false } })
    const viaApi = JSON.parse((await api("GET", `/api/jobs/${job.id}`)).text) as { job: JobRow }
    expect(viaApi.job.grounding).toEqual({ grounded: 1, ungrounded: 1, unknown: 0, required: false })
    const stored = JSON.parse((await api("GET", `/api/jobs/${job.id}/events?format=json`)).text) as {
      events: Array<{ type: string; citations?: unknown }>
    }
    expect(stored.events.find((e) => e.type === "grounding")?.citations).toEqual([
      { status: "ungrounded", path: "src/app.ts", firstLine: 40, lastLine: 40, file: "inventory.md", at: 3 },
      { status: "grounded", path: "src/app.ts", firstLine: 1, lastLine: 1, file: "inventory.md", at: 3 }
    ])
    const metrics = await rt.runPromise(Effect.flatMap(Metrics, (m) => m.render({})))
    expect(metrics).toMatch(/kintsugi_grounding_citations_total\{status="ungrounded"\} [1-9]/)
  })

  test("a child killed with SIGKILL mid-job → failed / error, never stuck running", async () => {
    const server = await useProvider("stall", [{ kind: "stall", afterText: "thinking" }])
    await bind("architecture-map", "stall")
    const job = await startJob("architecture-map", createRepo(), { idleTimeoutSec: 0 })
    // Wait until the child is streaming, then kill it the hard way.
    await until(() => server.requests.length > 0, { what: "the model's first request", timeoutMs: 60_000 })
    // Only this test process's own job children.
    const ps = Bun.spawnSync(["pgrep", "-P", String(process.pid), "-f", "run-job"])
    const pids = new TextDecoder()
      .decode(ps.stdout)
      .split("\n")
      .filter(Boolean)
      .map(Number)
      .filter((p) => p !== process.pid)
    expect(pids.length).toBeGreaterThan(0)
    for (const pid of pids) process.kill(pid, "SIGKILL")
    const done = await waitSettled(job.id)
    expect(done).toMatchObject({ status: "failed", reason: "error" })
    expect(done.message).toContain("was killed by SIGKILL")
    for (const pid of pids) expect(isAlive(pid)).toBe(false)
  })

  test("a binding change takes effect at the next job, not the running one", async () => {
    let release: () => void = () => {}
    const gate = new Promise<void>((r) => (release = r))
    const first = await useProvider("first", [
      { kind: "fn", respond: async () => (await gate, builtinOutputsStep("domain-rules")) },
      builtinAnswerTurn("domain-rules", "first done")
    ])
    const second = await useProvider("second", [builtinOutputsStep("domain-rules"), builtinAnswerTurn("domain-rules", "second done")])
    await bind("domain-rules", "first")
    const running = await startJob("domain-rules", createRepo())
    await until(() => first.requests.length > 0, { what: "the first provider's first request", timeoutMs: 60_000 })
    await bind("domain-rules", "second")
    release()
    const next = await startJob("domain-rules", createRepo())
    expect((await waitSettled(running.id)).summary).toBe(builtinAnswer("domain-rules", "first done"))
    expect((await waitSettled(next.id)).summary).toBe(builtinAnswer("domain-rules", "second done"))
    expect(first.requests.length).toBe(2)
    expect(second.requests.length).toBe(2)
  }, 90_000)

  test("many queued jobs on several workers: each runs exactly once", async () => {
    // Each job writes its contracted files, then answers: two requests per job.
    const steps: Array<Step> = Array.from({ length: 16 }, () => builtinAnswerStep("data-interfaces", "ok"))
    const server = await useProvider("many", steps)
    await bind("data-interfaces", "many")
    const repo = createRepo()
    const jobs = await Promise.all(Array.from({ length: 8 }, () => startJob("data-interfaces", repo)))
    const settled = await Promise.all(jobs.map((j) => waitSettled(j.id)))
    // Every job completed; a failure names its job's status, reason and message, and what the job did.
    const failed = settled.filter((j) => j.status !== "completed")
    const eventsOf = (id: string) =>
      rt.runPromise(
        Effect.flatMap(
          SqlClient,
          (sql) => sql<{ event: Record<string, unknown> }>`SELECT event FROM runtime.job_event WHERE job_id = ${id} ORDER BY seq`
        )
      )
    const story = async (j: JobRow) =>
      (await eventsOf(j.id))
        .map(({ event: e }) =>
          [
            e["type"],
            e["tool"],
            e["path"],
            e["success"],
            e["summary"],
            e["reason"],
            e["message"],
            e["name"],
            e["status"],
            e["attributes"] === undefined ? undefined : JSON.stringify(e["attributes"])
          ]
            .filter((x) => x !== undefined)
            .join(" ")
        )
        .filter((line) => !line.startsWith("message.delta"))
    expect(
      await Promise.all(failed.map(async (j) => ({ status: j.status, reason: j.reason, message: j.message, events: await story(j) })))
    ).toEqual([])
    expect(server.requests.length).toBe(16)
    const starts = await rt.runPromise(
      Effect.flatMap(
        SqlClient,
        (sql) =>
          sql<{ jobId: string; n: string }>`SELECT job_id, count(*) AS n FROM runtime.job_event WHERE type = 'job.started' GROUP BY job_id`
      )
    )
    const ours = starts.filter((s) => jobs.some((j) => j.id === s.jobId))
    expect(ours.length).toBe(8)
    expect(ours.every((s) => Number(s.n) === 1)).toBe(true)
    expect(new Set(settled.map((j) => j.workerId)).size).toBeGreaterThan(1)
  }, 90_000)

  test("an agent whose binding is gone by the time its job starts fails with a clear message", async () => {
    // Queued past admission (which refuses an unbound agent), as when the binding is removed while the job waits.
    const repo = createRepo()
    const job = await rt.runPromise(
      Effect.flatMap(JobStore, (s) =>
        s.enqueue(
          {
            agent: "risk-quality",
            task: "Inventory the code.",
            workspace: { root: repo.root, readOnly: [repo.src], outDir: repo.out },
            limits: { timeoutSec: 60 }
          },
          "ops"
        )
      )
    )
    await rt.runPromise(Effect.flatMap(JobBus, (b) => b.publish({ _tag: "Queued" })))
    const done = await waitSettled(job.id)
    expect(done).toMatchObject({ status: "failed", reason: "error" })
    expect(done.message).toContain("has no model binding")
  })

  test("the key is in no database column, no event, no API response and no log line", async () => {
    const dump = await rt.runPromise(
      Effect.flatMap(
        SqlClient,
        (sql) =>
          sql<{ t: string }>`SELECT string_agg(row_to_json(x)::text, ' ') AS t FROM (
          SELECT * FROM admin.llm_provider) x
          UNION ALL SELECT string_agg(event::text, ' ') FROM runtime.job_event
          UNION ALL SELECT string_agg(row_to_json(j)::text, ' ') FROM runtime.job j`
      )
    )
    expect(dump.map((d) => d.t ?? "").join(" ")).not.toContain(KEY)
    expect(dump.map((d) => d.t ?? "").join(" ")).toContain("v1:") // sealed, not absent
    for (const path of ["/api/admin/providers", "/api/admin/providers/gw", "/api/jobs"]) {
      const r = await api("GET", path)
      expect(r.status).toBe(200)
      expect(r.text).not.toContain(KEY)
    }
    expect(logs.join("\n")).not.toContain(KEY)
    // Read through Config: even where the server's configuration holds them, the child never gets them.
    const config = ConfigProvider.fromMap(
      new Map([
        ["PATH", "/usr/bin"],
        ["DATABASE_URL", "postgres://x"],
        ["KINTSUGI_SECRET_KEY", KEY]
      ])
    )
    const env = Effect.runSync(Effect.withConfigProvider(childEnvironment, config))
    expect(env["PATH"]).toBe("/usr/bin")
    expect(Object.keys(env)).not.toContain("DATABASE_URL")
    expect(Object.keys(env)).not.toContain("KINTSUGI_SECRET_KEY")
  })
})
