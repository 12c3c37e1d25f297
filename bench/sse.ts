/**
 * Live streams under load: a serve-like process (the app on Bun.serve at 127.0.0.1:0, one worker loop
 * polling an empty queue) with 20 running jobs that nothing runs (claimed by the bench with a long
 * lease). Rows, each beside its reference: the database's queries/s with 200 SSE subscribers on the
 * silent jobs (10 per job) against 0 subscribers; the live lag (stored → read by the client) p50/p99
 * with 200 subscribers against 20, while each job stores 10 events/s. Clients run on a Worker thread
 * (bench/sseClients.ts). Queries are counted by the process's statement counter (DbWrites.statements:
 * every round trip of its pool) and, on PostgreSQL, by pg_stat_database.xact_commit of its database
 * (every connection, the write listener's pings included). Embedded database by default, DATABASE_URL
 * when set (makes and drops a database). Goals: ≤ 2× the queries of 0 subscribers; lag p99 ≤ 2× that
 * of 20 subscribers and ≤ 1 s. SSE_WINDOW_MS and SSE_LAG_MS set the two windows (15 s, 10 s);
 * SSE_PARTS=queries or lag runs one part. Ends with `ROW` lines for bench/load.ts.
 */
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import os from "node:os"
import pg from "pg"
import { Access } from "../src/access/Access.ts"
import { DbWrites, makeDbLayer } from "../src/db/Db.ts"
import { makeApp } from "../src/http/app.ts"
import { listen } from "../src/http/serve.ts"
import { makeAppRuntime } from "../src/main.ts"
import { makeSecretBox, SecretBox } from "../src/providers/SecretBox.ts"
import { JobBus } from "../src/worker/JobBus.ts"
import { JobStore } from "../src/worker/JobStore.ts"
import { adminStatement, testDbLayer, withDatabase } from "../test/support/db.ts"
import type { ClientReply, ClientRequest } from "./sseClients.ts"

const JOBS = 20
const WINDOW_MS = Number(process.env["SSE_WINDOW_MS"] ?? 15_000)
const LAG_MS = Number(process.env["SSE_LAG_MS"] ?? 10_000)
const PARTS = process.env["SSE_PARTS"] ?? "queries,lag"
const EVENTS_PER_SECOND = 10

const quantile = (xs: ReadonlyArray<number>, q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN
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

const runtime = await makeAppRuntime(url === undefined ? testDbLayer() : makeDbLayer({ url, migrate: true }), {
  secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))),
  worker: { log: () => undefined }
})
const stats = url === undefined ? undefined : new pg.Client({ connectionString: url })
await stats?.connect()
const app = makeApp({ runtime, log: () => undefined, allowedHosts: ["127.0.0.1"] })
const http = listen(app, { hostname: "127.0.0.1", port: 0 })
const base = `http://127.0.0.1:${http.port}`
const clients = new Worker(new URL("./sseClients.ts", import.meta.url).href)
const ask = (request: ClientRequest): Promise<ClientReply> =>
  new Promise((resolve, reject) => {
    clients.onmessage = (event: MessageEvent<ClientReply>) =>
      event.data.type === "error" ? reject(new Error(event.data.message)) : resolve(event.data)
    clients.postMessage(request)
  })

try {
  const token = await runtime.runPromise(
    Effect.gen(function* () {
      const access = yield* Access
      yield* access.addUser("bench", "bench password long enough", ["agents.manage"])
      return yield* access.issueToken("bench", "bench")
    })
  )
  // Running jobs that nothing runs: claimed at once by the bench (a lease of an hour), never by the worker loop.
  const jobs = await runtime.runPromise(
    Effect.gen(function* () {
      const store = yield* JobStore
      const ids: Array<string> = []
      while (ids.length < JOBS) {
        const job = yield* store.enqueue(
          {
            agent: "codebase-inventory",
            task: "bench",
            workspace: { root: "/r", readOnly: ["/r/src"], outDir: "/r/out" },
            limits: { timeoutSec: 3600 }
          },
          "bench"
        )
        if ((yield* store.claim("bench", 3_600_000, job.id)) !== undefined) ids.push(job.id)
      }
      return ids
    })
  )
  const seqs = new Map(jobs.map((id) => [id, 0]))

  const statements = () => runtime.runSync(Effect.map(DbWrites, (w) => w.statements()))
  const commits = async () =>
    Number(
      (await stats?.query<{ n: string }>("SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()"))?.rows[0]
        ?.n ?? NaN
    )
  const queriesPerSecond = async () => {
    const s0 = statements()
    const c0 = await commits()
    const t0 = performance.now()
    await sleep(WINDOW_MS)
    const seconds = (performance.now() - t0) / 1000
    return { statements: (statements() - s0) / seconds, commits: ((await commits()) - c0 - 1) / seconds }
  }
  const open = async (perJob: number) => {
    const urls = jobs.flatMap((id) =>
      Array.from({ length: perJob }, () => `${base}/api/jobs/${id}/events?after=${(seqs.get(id) ?? 0) - 1}`)
    )
    await ask({ type: "open", urls, headers: { authorization: `Bearer ${token}` } })
    await settle()
  }
  // The streams' first reads (stored events, the row) are done, and PostgreSQL has flushed their counts
  // (an idle backend reports its statistics within 10 s), before anything is measured.
  const settle = () => sleep(url === undefined ? 3_000 : 11_000)
  /** Every job stores EVENTS_PER_SECOND deltas a second for LAG_MS (as the worker does: append, then the bus); the clients' lags. */
  const lag = async () => {
    await ask({ type: "collect" })
    const until = performance.now() + LAG_MS
    while (performance.now() < until) {
      const tick = performance.now()
      await runtime.runPromise(
        Effect.gen(function* () {
          const store = yield* JobStore
          const bus = yield* JobBus
          for (const id of jobs) {
            const seq = seqs.get(id) ?? 0
            seqs.set(id, seq + 1)
            const text = String(performance.timeOrigin + performance.now())
            yield* store.appendEvent(id, { type: "message.delta", seq, at: new Date().toISOString(), text })
            yield* bus.publish({ _tag: "Events", jobId: id })
          }
        })
      )
      await sleep(Math.max(0, 1000 / EVENTS_PER_SECOND - (performance.now() - tick)))
    }
    await sleep(2_000)
    const reply = await ask({ type: "collect" })
    return reply.type === "lags" ? reply.lags : []
  }

  const queries = PARTS.includes("queries")
  const lags = PARTS.includes("lag")
  if (queries) await settle()
  const idle0 = queries ? await queriesPerSecond() : undefined
  await open(10)
  const idle200 = queries ? await queriesPerSecond() : undefined
  const lag200 = lags ? await lag() : []
  await ask({ type: "close" })
  if (lags) await open(1)
  const lag20 = lags ? await lag() : []
  if (lags) await ask({ type: "close" })

  const row = (measure: string, value: number, reference: string, ref: number, goal: string, unit = "") =>
    console.log(
      `| ${measure} | ${value.toFixed(1)}${unit} | ${reference}: ${ref.toFixed(1)}${unit} | ${(value / ref).toFixed(2)}× | ${goal} |`
    )
  console.log(
    `bench/sse.ts: ${url === undefined ? "embedded database" : "PostgreSQL"}, ${navigator.hardwareConcurrency} cores, load average ${loadAtStart} at start, ${load()} at end`
  )
  console.log(`| measure | value | reference | ratio | goal |`)
  console.log(`|---|---|---|---|---|`)
  const db = url === undefined ? "embedded" : "postgres"
  if (idle0 !== undefined && idle200 !== undefined) {
    row("queries/s, 200 idle SSE subscribers (process statements)", idle200.statements, "0 subscribers", idle0.statements, "≤ 2×")
    console.log(
      `ROW sse-statements-${db} at200=${idle200.statements.toFixed(2)} at0=${idle0.statements.toFixed(2)} ratio=${(idle200.statements / idle0.statements).toFixed(3)}`
    )
  }
  if (idle0 !== undefined && idle200 !== undefined && url !== undefined) {
    row("queries/s, 200 idle SSE subscribers (xact_commit, all connections)", idle200.commits, "0 subscribers", idle0.commits, "≤ 2×")
    console.log(
      `ROW sse-commits-${db} at200=${idle200.commits.toFixed(2)} at0=${idle0.commits.toFixed(2)} ratio=${(idle200.commits / idle0.commits).toFixed(3)}`
    )
  }
  if (lags) {
    console.log(
      `ROW sse-lag-${db} p99at200=${quantile(lag200, 0.99).toFixed(1)} p99at20=${quantile(lag20, 0.99).toFixed(1)} ratio=${(quantile(lag200, 0.99) / quantile(lag20, 0.99)).toFixed(3)} deliveries200=${lag200.length} deliveries20=${lag20.length} p50at200=${quantile(lag200, 0.5).toFixed(1)} p50at20=${quantile(lag20, 0.5).toFixed(1)}`
    )
    row(
      `live lag p50, 200 subscribers (${lag200.length} deliveries)`,
      quantile(lag200, 0.5),
      "20 subscribers",
      quantile(lag20, 0.5),
      "",
      " ms"
    )
    row(
      `live lag p99, 200 subscribers (${lag200.length} deliveries)`,
      quantile(lag200, 0.99),
      `20 subscribers (${lag20.length})`,
      quantile(lag20, 0.99),
      "≤ 2× and ≤ 1000 ms",
      " ms"
    )
  }
} finally {
  clients.terminate()
  await http.stop(true)
  await stats?.end()
  await runtime.dispose()
  if (server !== undefined) await adminStatement(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}
