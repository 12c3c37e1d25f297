/**
 * The signed-in request path on one server (the app on Bun.serve at 127.0.0.1:0, 4 worker loops):
 * GET /healthz and the portal's agent catalog page as a signed-in user (session cookie; 1,000 custom
 * agents seeded beside the built-ins) at 32 clients each, in alternating rounds, the clients on a
 * thread of their own (bench/catalogLoad.ts); then GET /api/session (Bearer token, one client) idle
 * and while 4 firehose jobs run (a real job child each, whose scripted model streams one-character
 * deltas). Prints a table
 * and one `ROW <name> key=value …` line per goal row for bench/load.ts. `--quick`: fewer requests.
 * Embedded database by default; DATABASE_URL: a fresh database on that server (dropped at the end).
 * Goals: catalog page req/s ≥ 50% of /healthz and p99 ≤ 25 ms; session p50 busy ≤ 1.5× idle.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { Access } from "../src/access/Access.ts"
import { AgentStore } from "../src/agents/AgentStore.ts"
import { DbWrites, makeDbLayer } from "../src/db/Db.ts"
import { makeApp } from "../src/http/app.ts"
import { listen } from "../src/http/serve.ts"
import { makeAppRuntime } from "../src/main.ts"
import { Bindings } from "../src/providers/Bindings.ts"
import { ProviderStore } from "../src/providers/ProviderStore.ts"
import { makeSecretBox, SecretBox } from "../src/providers/SecretBox.ts"
import { startOpenAIServer } from "../src/testing/scriptedServers.ts"
import { JobStore } from "../src/worker/JobStore.ts"
import { createAgentFiles } from "../test/support/api.ts"
import { adminStatement, testDbLayer, withDatabase } from "../test/support/db.ts"
import type { LoadRequest, LoadResult } from "./catalogLoad.ts"

const quick = process.argv.includes("--quick")
const CLIENTS = 32
const JOBS = 4
const AGENTS = Number(process.env["AGENTS"] ?? 1000)
const ROUNDS = quick ? 3 : 5
const REQUESTS = quick ? 1500 : 5000
const WARMUP = quick ? 300 : 1000
const SESSION_REQUESTS = quick ? 300 : 1000
// Long enough that every job still streams while the busy session requests run; the jobs are aborted after.
const DELTAS = Number(process.env["DELTAS"] ?? (quick ? 40_000 : 100_000))
const AGENT = "firehose"

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
}
const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")
const poll = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const server = process.env["DATABASE_URL"]
const dbName = `kintsugi_bench_${randomBytes(6).toString("hex")}`
const url = server === undefined || server === "" ? undefined : withDatabase(server, dbName)
if (url !== undefined && server !== undefined) await adminStatement(server, `CREATE DATABASE ${dbName}`)
const loadAtStart = loadAverage()

const roots = realpathSync(mkdtempSync(join(os.tmpdir(), "kintsugi-bench-reqpath-")))
const ws = join(roots, "ws")
mkdirSync(join(ws, "src"), { recursive: true })
mkdirSync(join(ws, "out"))
writeFileSync(join(ws, "src", "app.ts"), "export const main = () => 42\n")
process.env["KINTSUGI_WORKERS"] = String(JOBS)
process.env["KINTSUGI_JOB_ROOTS"] = roots

const model = await startOpenAIServer(
  Array.from({ length: JOBS * 4 }, () => ({ kind: "turn", text: "x".repeat(DELTAS), chunkSize: 1 }) as const)
)
const runtime = await makeAppRuntime(url === undefined ? testDbLayer() : makeDbLayer({ url, migrate: true }), {
  secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))),
  worker: { log: () => undefined }
})
const app = makeApp({ runtime, log: (line) => process.stderr.write(`${line}\n`), allowedHosts: ["127.0.0.1"] })
const http = listen(app, { hostname: "127.0.0.1", port: 0 })
const base = `http://127.0.0.1:${http.port}`
const writes = await runtime.runPromise(DbWrites)
const loader = new Worker(new URL("./catalogLoad.ts", import.meta.url).href)

/** `total` requests to `path` over `clients` concurrent loops on the loader's thread; every answer must be `status`. */
const load = (
  path: string,
  total: number,
  clients: number,
  headers: Record<string, string>,
  status = 200,
  at = base
): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    loader.onmessage = (event: MessageEvent<LoadResult>) =>
      event.data.error === undefined ? resolve(event.data) : reject(new Error(event.data.error))
    loader.postMessage({ base: at, path, total, clients, headers, status } satisfies LoadRequest)
  })
const rps = (r: LoadResult) => r.latencies.length / r.seconds
/** Rounds of one measure as one result: every latency, the seconds summed. */
const joined = (rounds: ReadonlyArray<LoadResult>): LoadResult => ({
  latencies: rounds.flatMap((r) => r.latencies),
  seconds: rounds.reduce((sum, r) => sum + r.seconds, 0),
  bytes: rounds[rounds.length - 1]?.bytes ?? 0
})

try {
  const { token, session } = await runtime.runPromise(
    Effect.gen(function* () {
      const access = yield* Access
      yield* access.addUser("bench", "bench password long enough", ["agents.manage", "providers.manage"])
      yield* (yield* ProviderStore).create(
        {
          kind: "custom",
          id: "gw",
          api: "openai-completions",
          baseUrl: model.baseUrl,
          apiKey: "sk-bench",
          models: [{ id: "m", contextWindow: 128_000, maxTokens: 8192 }]
        },
        "bench"
      )
      yield* (yield* AgentStore).create(createAgentFiles(AGENT, { tools: ["read"] }), "bench")
      yield* (yield* Bindings).set(AGENT, "", { providerId: "gw", modelId: "m" }, "bench")
      const sql = yield* SqlClient
      yield* sql.withTransaction(
        Effect.all([
          sql`INSERT INTO admin.agent_version (name, version, package, saved_by, note)
            SELECT 'bench-agent-' || i, 1, jsonb_build_object(
              'name', 'bench-agent-' || i, 'version', 1, 'description', 'Benchmark agent number ' || i || '.',
              'tools', jsonb_build_array('read', 'grep', 'find'), 'skills', jsonb_build_array('cite-evidence'),
              'thinking', 'medium', 'audience', 'runtime',
              'instructions', 'You are benchmark agent ' || i || '. Read WORKSPACE.md first.' || repeat(' Be thorough.', 50),
              'localSkills', jsonb_build_array(jsonb_build_object('name', 'local', 'content', 'A local skill.')),
              'files', jsonb_build_array()), 'bench', 'seeded'
            FROM generate_series(1, ${AGENTS}) AS i`,
          sql`INSERT INTO admin.agent (name, audience, current_version) SELECT 'bench-agent-' || i, 'runtime', 1 FROM generate_series(1, ${AGENTS}) AS i`,
          sql`INSERT INTO admin.agent_version_counter (name, last_version) SELECT 'bench-agent-' || i, 1 FROM generate_series(1, ${AGENTS}) AS i`
        ])
      )
      const token = yield* access.issueToken("bench", "bench")
      const session = yield* access.signIn("bench", "bench password long enough")
      return { token, session: session.token }
    })
  )
  const cookie = { cookie: `__Host-kintsugi-session=${encodeURIComponent(session)}` }
  const bearer = { authorization: `Bearer ${token}` }

  // A static file of about the page's size (htmx, anonymous, answered from memory): what sending the bytes alone costs.
  const pageHtml = await (await fetch(`${base}/agents`, { headers: cookie })).text()
  const staticPath = /\/vendor\/htmx-[^"]+?\.min\.js/.exec(pageHtml)?.[0]
  if (staticPath === undefined) throw new Error("the catalog page names no htmx file")
  // The ceiling of this host for the page's bytes: a bare Bun.serve in this process answering the same
  // bytes from memory, beside its own /healthz, loaded by the same clients in the same rounds.
  const pageBody = new Blob([pageHtml])
  const bareServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) =>
      new URL(request.url).pathname === "/healthz"
        ? new Response("ok\n", { headers: { "content-type": "text/plain" } })
        : new Response(pageBody, { headers: { "content-type": "text/html; charset=utf-8" } })
  })
  const bareBase = `http://127.0.0.1:${bareServer.port}`
  await load("/healthz", WARMUP, CLIENTS, {})
  await load("/agents", WARMUP, CLIENTS, cookie)
  await load(staticPath, WARMUP, CLIENTS, {})
  await load("/healthz", WARMUP, CLIENTS, {}, 200, bareBase)
  await load("/page", WARMUP, CLIENTS, {}, 200, bareBase)
  await load("/api/session", WARMUP, 1, bearer)
  // Alternating rounds, so a change in the machine's load during the run falls on both alike.
  const healthRounds: Array<LoadResult> = []
  const catalogRounds: Array<LoadResult> = []
  const staticRounds: Array<LoadResult> = []
  const bareHealthRounds: Array<LoadResult> = []
  const barePageRounds: Array<LoadResult> = []
  let catalogStatements = 0
  for (let round = 0; round < ROUNDS; round++) {
    healthRounds.push(await load("/healthz", REQUESTS / ROUNDS, CLIENTS, {}))
    const before = writes.statements()
    catalogRounds.push(await load("/agents", REQUESTS / ROUNDS, CLIENTS, cookie))
    catalogStatements += writes.statements() - before
    staticRounds.push(await load(staticPath, REQUESTS / ROUNDS, CLIENTS, {}))
    bareHealthRounds.push(await load("/healthz", REQUESTS / ROUNDS, CLIENTS, {}, 200, bareBase))
    barePageRounds.push(await load("/page", REQUESTS / ROUNDS, CLIENTS, {}, 200, bareBase))
  }
  await bareServer.stop(true)
  const bareRatio = rps(joined(barePageRounds)) / rps(joined(bareHealthRounds))
  /**
   * The app's own CPU per request, without the network: `app.handle` called in this thread for the
   * catalog page and for /healthz, alternating rounds (median); microseconds of this process's CPU.
   */
  const handlerCpu = async (path: string, headers: Record<string, string>): Promise<number> => {
    const n = quick ? 2000 : 5000
    const request = () => new Request(`${base}${path}`, { headers: { host: "127.0.0.1", ...headers } })
    const cpu = () => {
      const u = process.cpuUsage()
      return u.user + u.system
    }
    const before = cpu()
    for (let i = 0; i < n; i++) await app.handle(request())
    return (cpu() - before) / n
  }
  const cpuRounds: Array<{ readonly catalog: number; readonly health: number }> = []
  for (let round = 0; round < ROUNDS; round++)
    cpuRounds.push({ catalog: await handlerCpu("/agents", cookie), health: await handlerCpu("/healthz", {}) })
  const catalogCpu = quantile(
    cpuRounds.map((r) => r.catalog),
    0.5
  )
  const healthCpu = quantile(
    cpuRounds.map((r) => r.health),
    0.5
  )
  const health = joined(healthRounds)
  const catalog = joined(catalogRounds)
  const staticFile = joined(staticRounds)
  /** GET /api/session beside GET /healthz, one client each, in alternating rounds. */
  const sessionAndProbe = async () => {
    const session: Array<LoadResult> = []
    const probe: Array<LoadResult> = []
    for (let round = 0; round < ROUNDS; round++) {
      session.push(await load("/api/session", SESSION_REQUESTS / ROUNDS, 1, bearer))
      probe.push(await load("/healthz", SESSION_REQUESTS / ROUNDS, 1, {}))
    }
    return { session: joined(session), probe: joined(probe) }
  }
  const { session: idle, probe: idleProbe } = await sessionAndProbe()

  // Four firehose jobs; the busy requests start once every job has stored events and end before any settles.
  const ids = await runtime.runPromise(
    Effect.gen(function* () {
      const store = yield* JobStore
      const input = {
        agent: AGENT,
        task: "Stream.",
        workspace: { root: ws, readOnly: [join(ws, "src")], outDir: join(ws, "out") },
        limits: { timeoutSec: 3600 }
      }
      return yield* Effect.forEach(Array.from({ length: JOBS }), () => Effect.map(store.enqueue(input, "bench"), (row) => row.id))
    })
  )
  const count = (text: string) =>
    runtime.runPromise(
      Effect.flatMap(SqlClient, (sql) => Effect.map(sql.unsafe<{ n: number }>(text, [ids]), (rows) => Number(rows[0]?.n ?? 0)))
    )
  const streaming = "SELECT count(DISTINCT job_id)::int AS n FROM runtime.job_event WHERE job_id = ANY($1::uuid[]) AND seq > 20"
  const running = "SELECT count(*)::int AS n FROM runtime.job WHERE id = ANY($1::uuid[]) AND status = 'running'"
  const stored = "SELECT count(*)::int AS n FROM runtime.job_event WHERE job_id = ANY($1::uuid[])"
  const settled = "SELECT count(*)::int AS n FROM runtime.job WHERE id = ANY($1::uuid[]) AND status IN ('completed', 'failed')"
  while ((await count(streaming)) < JOBS) {
    if ((await count(settled)) > 0) throw new Error("a firehose job settled before every job streamed: nothing to measure beside")
    await poll(100)
  }
  const storedBefore = await count(stored)
  const epochBefore = writes.epoch("access")
  const { session: busy, probe: busyProbe } = await sessionAndProbe()
  const epochMoves = (writes.epoch("access") ?? 0) - (epochBefore ?? 0)
  const stillRunning = await count(running)
  const storedDuring = (await count(stored)) - storedBefore
  await runtime.runPromise(
    Effect.flatMap(JobStore, (store) => Effect.forEach(ids, (id) => store.requestAbort(id, "bench"), { discard: true }))
  )
  while ((await count(running)) > 0) await poll(100)

  const db = url === undefined ? "embedded database" : "PostgreSQL"
  const ms = (x: number) => x.toFixed(2)
  const catalogRatio = rps(catalog) / rps(health)
  const catalogP99 = quantile(catalog.latencies, 0.99)
  const idleP50 = quantile(idle.latencies, 0.5)
  const busyP50 = quantile(busy.latencies, 0.5)
  console.log(
    `bench/requestPath.ts${quick ? " --quick" : ""}: ${db}, ${AGENTS} custom agents, ${navigator.hardwareConcurrency} cores, load average ${loadAtStart} at start, ${loadAverage()} at end`
  )
  console.log("| measure | req/s | p50 ms | p99 ms | reference | ratio | goal |")
  console.log("|---|---|---|---|---|---|---|")
  console.log(
    `| GET /healthz, ${CLIENTS} clients | ${rps(health).toFixed(0)} | ${ms(quantile(health.latencies, 0.5))} | ${ms(quantile(health.latencies, 0.99))} | | | |`
  )
  console.log(
    `| GET /agents (portal catalog page, session cookie, ${catalog.bytes} bytes, ${(catalogStatements / REQUESTS).toFixed(2)} statements per request), ${CLIENTS} clients | ${rps(catalog).toFixed(0)} | ${ms(quantile(catalog.latencies, 0.5))} | ${ms(catalogP99)} | /healthz req/s | ${catalogRatio.toFixed(2)} | ≥ 0.5, p99 ≤ 25 ms |`
  )
  console.log(
    `| GET ${staticPath} (a static file, ${staticFile.bytes} bytes, anonymous), ${CLIENTS} clients | ${rps(staticFile).toFixed(0)} | ${ms(quantile(staticFile.latencies, 0.5))} | ${ms(quantile(staticFile.latencies, 0.99))} | /healthz req/s | ${(rps(staticFile) / rps(health)).toFixed(2)} | (sending the bytes alone) |`
  )
  console.log(
    `| a bare Bun.serve answering the catalog page's ${catalog.bytes} bytes from memory, ${CLIENTS} clients (this host's ceiling for those bytes) | ${rps(joined(barePageRounds)).toFixed(0)} | ${ms(quantile(joined(barePageRounds).latencies, 0.5))} | ${ms(quantile(joined(barePageRounds).latencies, 0.99))} | its own /healthz ${rps(joined(bareHealthRounds)).toFixed(0)} req/s | ${bareRatio.toFixed(2)} | |`
  )
  console.log(
    `| the app's CPU per request without the network (\`app.handle\` in this thread, median of ${ROUNDS} rounds): catalog page | ${catalogCpu.toFixed(1)} µs | | | /healthz ${healthCpu.toFixed(1)} µs | ${(catalogCpu / healthCpu).toFixed(2)} | |`
  )
  console.log(
    `| GET /api/session (Bearer), 1 client, idle | ${rps(idle).toFixed(0)} | ${ms(idleP50)} | ${ms(quantile(idle.latencies, 0.99))} | | | |`
  )
  console.log(
    `| GET /api/session, 1 client, ${JOBS} jobs streaming (${stillRunning} still running at the end, ${storedDuring} events stored meanwhile, the access cache emptied ${epochMoves} times) | ${rps(busy).toFixed(0)} | ${ms(busyP50)} | ${ms(quantile(busy.latencies, 0.99))} | idle p50 | ${(busyP50 / idleP50).toFixed(2)} | ≤ 1.5 |`
  )
  console.log(
    `| GET /healthz, 1 client, idle (the process alone) | ${rps(idleProbe).toFixed(0)} | ${ms(quantile(idleProbe.latencies, 0.5))} | ${ms(quantile(idleProbe.latencies, 0.99))} | | | |`
  )
  console.log(
    `| GET /healthz, 1 client, ${JOBS} jobs streaming (the process alone) | ${rps(busyProbe).toFixed(0)} | ${ms(quantile(busyProbe.latencies, 0.5))} | ${ms(quantile(busyProbe.latencies, 0.99))} | idle p50 | ${(quantile(busyProbe.latencies, 0.5) / quantile(idleProbe.latencies, 0.5)).toFixed(2)} | |`
  )
  console.log(
    `ROW catalog-vs-healthz ratio=${catalogRatio.toFixed(3)} catalogRps=${rps(catalog).toFixed(0)} healthzRps=${rps(health).toFixed(0)} p50ms=${ms(quantile(catalog.latencies, 0.5))} p99ms=${ms(catalogP99)} staticRps=${rps(staticFile).toFixed(0)} bareRatio=${bareRatio.toFixed(3)} catalogCpuUs=${catalogCpu.toFixed(1)} healthzCpuUs=${healthCpu.toFixed(1)} statementsPerRequest=${(catalogStatements / REQUESTS).toFixed(3)} db=${url === undefined ? "embedded" : "postgres"} load=${os.loadavg()[0]?.toFixed(2)}`
  )
  console.log(
    `ROW session-jobs ratio=${(busyP50 / idleP50).toFixed(3)} idleP50ms=${ms(idleP50)} busyP50ms=${ms(busyP50)} healthzIdleP50ms=${ms(quantile(idleProbe.latencies, 0.5))} healthzBusyP50ms=${ms(quantile(busyProbe.latencies, 0.5))} runningAtEnd=${stillRunning} accessEpochMoves=${epochMoves} eventsDuring=${storedDuring} db=${url === undefined ? "embedded" : "postgres"} load=${os.loadavg()[0]?.toFixed(2)}`
  )
} finally {
  loader.terminate()
  await http.stop(true)
  await runtime.dispose()
  await model.stop()
  rmSync(roots, { recursive: true, force: true })
  if (url !== undefined && server !== undefined) await adminStatement(server, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
}
