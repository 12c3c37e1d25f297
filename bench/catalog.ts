/**
 * The Agent Builder catalog under load: 1,000 custom agents seeded in SQL (plus the built-ins: 1,005),
 * the app on Bun.serve at 127.0.0.1:0, 32 concurrent clients with a Bearer token, on a thread of their
 * own (bench/catalogLoad.ts: not on the server's event loop) (3,000 requests per
 * route, after 500 warm-up requests) beside the same load on GET /healthz: a page of 50 (the default
 * answer), a page of 50 whose search differs on every request (never served from the page cache), a
 * revalidation with If-None-Match (304), and the full export `?all=1`. Goal: a page of 50
 * at p99 ≤ 25 ms.
 * Embedded database by default, DATABASE_URL when set.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { Access } from "../src/access/Access.ts"
import { makeApp } from "../src/http/app.ts"
import { makeAppRuntime } from "../src/main.ts"
import { makeSecretBox, SecretBox } from "../src/providers/SecretBox.ts"
import { testDbLayer } from "../test/support/db.ts"
import type { LoadRequest, LoadResult } from "./catalogLoad.ts"

const AGENTS = 1000
const CLIENTS = 32
const REQUESTS = 3000
const WARMUP = 500

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
}

const runtime = await makeAppRuntime(testDbLayer(), { secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))) })
const token = await runtime.runPromise(
  Effect.gen(function* () {
    const access = yield* Access
    yield* access.addUser("bench", "bench password long enough", ["agents.manage"])
    return yield* access.issueToken("bench", "bench")
  })
)

// One statement per table: a valid runtime agent package per row, version 1 current.
const seedStart = performance.now()
await runtime.runPromise(
  Effect.flatMap(SqlClient, (sql) =>
    sql.withTransaction(
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
  )
)
const seedMs = performance.now() - seedStart

const app = makeApp({ runtime, log: (line) => process.stderr.write(`${line}\n`) })
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => app.handle(request) })
const base = `http://127.0.0.1:${server.port}`

type Result = LoadResult

/** The load generator, on a thread of its own (bench/catalogLoad.ts): not on the server's event loop. */
const loader = new Worker(new URL("./catalogLoad.ts", import.meta.url).href)

/** `total` requests over `CLIENTS` concurrent loops; every response must have `status`. */
const load = (path: LoadRequest["path"], total: number, headers: Record<string, string>, status = 200): Promise<Result> =>
  new Promise((resolve, reject) => {
    loader.onmessage = (event: MessageEvent<LoadResult>) =>
      event.data.error === undefined ? resolve(event.data) : reject(new Error(event.data.error))
    loader.postMessage({ base, path, total, clients: CLIENTS, headers, status } satisfies LoadRequest)
  })

try {
  const auth = { authorization: `Bearer ${token}` }
  const firstPage = await fetch(`${base}/api/admin/agents`, { headers: auth })
  const { total } = (await firstPage.json()) as { total: number }
  const etag = firstPage.headers.get("etag") ?? ""
  const all = (await (await fetch(`${base}/api/admin/agents?all=1`, { headers: auth })).json()) as { agents: Array<unknown> }
  if (all.agents.length !== total) throw new Error(`?all=1 returned ${all.agents.length} of ${total} agents`)
  await load("/api/admin/agents", WARMUP, auth)
  await load("/api/admin/agents?all=1", WARMUP, auth)
  await load("/healthz", WARMUP, {})
  const page = await load("/api/admin/agents", REQUESTS, auth)
  // A search that differs on every request: computed from the precomputed entries each time.
  const search = await load({ search: true }, REQUESTS, auth)
  const revalidate = await load("/api/admin/agents", REQUESTS, { ...auth, "if-none-match": etag }, 304)
  const full = await load("/api/admin/agents?all=1", REQUESTS, auth)
  const health = await load("/healthz", REQUESTS, {})

  const db = (process.env["DATABASE_URL"] ?? "") !== "" ? "PostgreSQL server (DATABASE_URL)" : "embedded PGlite"
  const healthP99 = quantile(health.latencies, 0.99)
  const row = (label: string, r: Result) => {
    const p99 = quantile(r.latencies, 0.99)
    return `${label.padEnd(38)} ${quantile(r.latencies, 0.5).toFixed(1).padStart(8)} ${p99.toFixed(1).padStart(8)} ${(r.latencies.length / r.seconds).toFixed(0).padStart(8)} ${String(r.bytes).padStart(9)} ${`${(p99 / healthP99).toFixed(1)}×`.padStart(9)}`
  }
  console.log(
    `catalog of ${total} agents (${AGENTS} custom seeded in ${seedMs.toFixed(0)} ms), ${db}, ${navigator.hardwareConcurrency} cores`
  )
  console.log(`${CLIENTS} concurrent clients, ${REQUESTS} requests per route after ${WARMUP} warm-up requests`)
  console.log(
    `${"route".padEnd(38)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)} ${"req/s".padStart(8)} ${"bytes".padStart(9)} ${"p99/ref".padStart(9)}`
  )
  console.log(row("page of 50 (default answer)", page))
  console.log(row("page of 50, new search each request", search))
  console.log(row("page of 50, If-None-Match → 304", revalidate))
  console.log(row("full export ?all=1", full))
  console.log(row("GET /healthz (reference)", health))
  const p99 = quantile(page.latencies, 0.99)
  console.log(
    `goal: a page of 50 at p99 ≤ 25 ms — measured ${p99.toFixed(1)} ms (${p99 <= 25 ? "met" : "NOT met"}); uncached search p99 ${quantile(search.latencies, 0.99).toFixed(1)} ms`
  )
} finally {
  loader.terminate()
  await server.stop(true)
  await runtime.dispose()
}
