/**
 * Events stored per second: a serve-like process (the app on Bun.serve at 127.0.0.1:0, 4 worker loops)
 * runs 4 firehose jobs, each a real job child whose scripted model streams DELTAS (default 20,000)
 * one-character deltas in one turn, first with no reader, then with 32 SSE readers (8 per job). The
 * rate is the events stored (counted every 250 ms) over the time from the first one stored to the
 * last; beside it, how fast the children emitted them (the span of the events' own `at`), so a
 * store that keeps up shows as the two rates being close. Embedded database by default, DATABASE_URL
 * when set (makes and drops a database). Runs unchanged in an older checkout (copy it into its
 * bench/) for the figure before a change. EVENTS_ROUNDS=readers runs only the round with readers;
 * EVENTS_CLIENTS names the clients' file beside this one (default sseClients.ts). Ends with a `ROW`
 * line for bench/load.ts.
 * Goal: with readers ≥ 50% of without.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { Access } from "../src/access/Access.ts"
import { AgentStore } from "../src/agents/AgentStore.ts"
import { makeDbLayer } from "../src/db/Db.ts"
import { makeApp } from "../src/http/app.ts"
import { listen } from "../src/http/serve.ts"
import { makeAppRuntime } from "../src/main.ts"
import { Bindings } from "../src/providers/Bindings.ts"
import { ProviderStore } from "../src/providers/ProviderStore.ts"
import { makeSecretBox, SecretBox } from "../src/providers/SecretBox.ts"
import { JobStore } from "../src/worker/JobStore.ts"
import { startOpenAIServer } from "../src/testing/scriptedServers.ts"
import { createAgentFiles } from "../test/support/api.ts"
import { adminStatement, testDbLayer, withDatabase } from "../test/support/db.ts"
import type { ClientReply, ClientRequest } from "./sseClients.ts"

const JOBS = 4
const READERS_PER_JOB = 8
const DELTAS = Number(process.env["DELTAS"] ?? 20_000)
const AGENT = "firehose"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")

const server = process.env["DATABASE_URL"]
const name = `kintsugi_bench_${randomBytes(6).toString("hex")}`
const url = server === undefined ? undefined : withDatabase(server, name)
if (server !== undefined) await adminStatement(server, `CREATE DATABASE ${name}`)
const loadAtStart = load()

const roots = realpathSync(mkdtempSync(join(os.tmpdir(), "kintsugi-bench-events-")))
const ws = join(roots, "ws")
mkdirSync(join(ws, "src"), { recursive: true })
mkdirSync(join(ws, "out"))
writeFileSync(join(ws, "src", "app.ts"), "export const main = () => 42\n")
process.env["KINTSUGI_WORKERS"] = String(JOBS)
process.env["KINTSUGI_JOB_ROOTS"] = roots

// One turn per job: DELTAS one-character chunks, as fast as the scripted server writes them.
const model = await startOpenAIServer(
  Array.from({ length: JOBS * 4 }, () => ({ kind: "turn", text: "x".repeat(DELTAS), chunkSize: 1 }) as const)
)
const runtime = await makeAppRuntime(url === undefined ? testDbLayer() : makeDbLayer({ url, migrate: true }), {
  secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))),
  worker: { log: () => undefined }
})
const app = makeApp({ runtime, log: () => undefined, allowedHosts: ["127.0.0.1"] })
const http = listen(app, { hostname: "127.0.0.1", port: 0 })
const base = `http://127.0.0.1:${http.port}`
const clients = new Worker(new URL(`./${process.env["EVENTS_CLIENTS"] ?? "sseClients.ts"}`, import.meta.url).href)
const ask = (request: ClientRequest): Promise<ClientReply> =>
  new Promise((resolve, reject) => {
    clients.onmessage = (event: MessageEvent<ClientReply>) =>
      event.data.type === "error" ? reject(new Error(event.data.message)) : resolve(event.data)
    clients.postMessage(request)
  })
const count = (text: string, ids: ReadonlyArray<string>) =>
  runtime.runPromise(
    Effect.flatMap(SqlClient, (sql) => Effect.map(sql.unsafe<{ n: number }>(text, [ids]), (rows) => Number(rows[0]?.n ?? 0)))
  )

try {
  const token = await runtime.runPromise(
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
      return yield* access.issueToken("bench", "bench")
    })
  )

  /** Queues the jobs (readers on each from the start), waits for them to settle; events stored/s. */
  const round = async (readersPerJob: number) => {
    const ids = await runtime.runPromise(
      Effect.gen(function* () {
        const store = yield* JobStore
        const ids: Array<string> = []
        for (let i = 0; i < JOBS; i++) {
          const input = {
            agent: AGENT,
            task: "Stream.",
            workspace: { root: ws, readOnly: [join(ws, "src")], outDir: join(ws, "out") },
            limits: { timeoutSec: 3600 }
          }
          ids.push((yield* store.enqueue(input, "bench")).id)
        }
        return ids
      })
    )
    if (readersPerJob > 0) {
      const urls = ids.flatMap((id) => Array.from({ length: readersPerJob }, () => `${base}/api/jobs/${id}/events`))
      await ask({ type: "open", urls, headers: { authorization: `Bearer ${token}` } })
    }
    let first: number | undefined
    let last = 0
    let stored = 0
    for (;;) {
      const n = await count("SELECT count(*)::int AS n FROM runtime.job_event WHERE job_id = ANY($1::uuid[])", ids)
      const now = performance.now()
      if (n > 0 && first === undefined) first = now
      if (n > stored) (stored = n), (last = now)
      const settled = await count(
        "SELECT count(*)::int AS n FROM runtime.job WHERE id = ANY($1::uuid[]) AND status IN ('completed', 'failed')",
        ids
      )
      if (settled === JOBS) break
      await sleep(250)
    }
    // How fast the children emitted: the span of the events' own `at` (the child's clock) over the same events.
    const emittedSeconds = await runtime.runPromise(
      Effect.flatMap(SqlClient, (sql) =>
        Effect.map(
          sql.unsafe<{ s: number }>(
            "SELECT extract(epoch FROM max((event->>'at')::timestamptz) - min((event->>'at')::timestamptz))::float8 AS s FROM runtime.job_event WHERE job_id = ANY($1::uuid[])",
            [ids]
          ),
          (rows) => Number(rows[0]?.s ?? 0)
        )
      )
    )
    const failed = await count("SELECT count(*)::int AS n FROM runtime.job WHERE id = ANY($1::uuid[]) AND status = 'failed'", ids)
    if (readersPerJob > 0) await ask({ type: "close" })
    return {
      stored,
      failed,
      seconds: (last - (first ?? last)) / 1000,
      rate: stored / Math.max(0.001, (last - (first ?? last)) / 1000),
      emitted: stored / Math.max(0.001, emittedSeconds)
    }
  }

  const alone = process.env["EVENTS_ROUNDS"] === "readers" ? undefined : await round(0)
  const read = await round(READERS_PER_JOB)
  const db = url === undefined ? "embedded" : "postgres"
  console.log(
    `ROW events-${db} readersRate=${read.rate.toFixed(1)} readersStored=${read.stored} readersFailed=${read.failed} readersEmitted=${read.emitted.toFixed(1)}` +
      (alone === undefined
        ? ""
        : ` aloneRate=${alone.rate.toFixed(1)} aloneStored=${alone.stored} aloneFailed=${alone.failed} ratio=${(read.rate / alone.rate).toFixed(3)}`)
  )
  console.log(
    `bench/events.ts: ${url === undefined ? "embedded database" : "PostgreSQL"}, ${JOBS} jobs × ${DELTAS} deltas, ${navigator.hardwareConcurrency} cores, load average ${loadAtStart} at start, ${load()} at end`
  )
  console.log(`| measure | value | reference | ratio | goal |`)
  console.log(`|---|---|---|---|---|`)
  if (alone === undefined) {
    console.log(
      `| events stored/s, ${JOBS * READERS_PER_JOB} readers (${read.stored} in ${read.seconds.toFixed(1)} s, ${read.failed} failed) | ${read.rate.toFixed(0)} |`
    )
  } else {
    console.log(
      `| events stored/s, ${JOBS * READERS_PER_JOB} readers (${read.stored} in ${read.seconds.toFixed(1)} s, ${read.failed} failed) | ${read.rate.toFixed(0)} | no readers: ${alone.rate.toFixed(0)} (${alone.stored} in ${alone.seconds.toFixed(1)} s, ${alone.failed} failed) | ${(read.rate / alone.rate).toFixed(2)}× | ≥ 0.5× |`
    )
    console.log(
      `| events emitted/s by the children (their own \`at\`), ${JOBS * READERS_PER_JOB} readers | ${read.emitted.toFixed(0)} | no readers: ${alone.emitted.toFixed(0)} | ${(read.emitted / alone.emitted).toFixed(2)}× | stored/s keeps up with it |`
    )
  }
} finally {
  clients.terminate()
  await http.stop(true)
  await runtime.dispose()
  await model.stop()
  rmSync(roots, { recursive: true, force: true })
  if (server !== undefined) await adminStatement(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}
