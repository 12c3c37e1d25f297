/**
 * memory_search over 10,000 notes of one project: p50/p99 of the tool as a job child calls it (POST to
 * the services endpoint with a job token: token check, grant check, search, answer), of the store's
 * search alone, and of the same query run directly in SQL, side by side. Embedded database by default,
 * DATABASE_URL when set. `bun bench/memorySearch.ts`
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { makeAppRuntime } from "../src/main.ts"
import { makeSecretBox, SecretBox } from "../src/providers/SecretBox.ts"
import { JobStore } from "../src/worker/JobStore.ts"
import { MemoryStore, orQuery } from "../src/worker/memory/MemoryStore.ts"
import { Projects } from "../src/worker/Projects.ts"
import { ServicesEndpoint } from "../src/worker/Services.ts"
import { ServiceTokens } from "../src/worker/ServiceTokens.ts"
import { testDbLayer } from "../test/support/db.ts"
import { createRootDir, testJobRoots } from "../test/support/jobRoots.ts"

const NOTES = 10_000
const QUERIES = 300
const WARMUP = 30
const WORDS = [
  "retry",
  "cache",
  "queue",
  "lease",
  "token",
  "schema",
  "index",
  "backoff",
  "budget",
  "sandbox",
  "parser",
  "worker",
  "commit",
  "branch",
  "portal",
  "session"
]

const quantile = (xs: ReadonlyArray<number>, q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN
const queryOf = (i: number) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]}`

const rt = await makeAppRuntime(testDbLayer(), {
  secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))),
  jobRoots: testJobRoots()
})
const seedStart = performance.now()
await rt.runPromise(
  Effect.gen(function* () {
    yield* Effect.orDie((yield* Projects).create({ id: "bench", name: "Bench" }))
    yield* (yield* MemoryStore).putSettings("bench", true, { learnedDays: 90, forgottenDays: 30, scratchpadDays: 7, logDays: 180 }, "bench")
    const sql = yield* SqlClient
    // Bodies of ~60 words drawn from a small vocabulary plus filler, so a query matches a realistic share.
    yield* sql.unsafe(`INSERT INTO memory.note (project_id, kind, title, body, trust, created_agent, updated_agent, created_at, updated_at, trust_at)
      SELECT 'bench', (ARRAY['fact','lesson','decision','navigation'])[1 + i % 4], 'note ' || i,
        (SELECT string_agg(CASE WHEN (i * 31 + j * 17) % 11 = 0 THEN (ARRAY[${WORDS.map((w) => `'${w}'`).join(",")}])[1 + (i * j) % ${WORDS.length}] ELSE 'filler' || ((i + j) % 500) END, ' ')
           FROM generate_series(1, 60) j),
        CASE WHEN i % 3 = 0 THEN 'reviewed' ELSE 'learned' END, 'seed', 'seed', now(), now(), now()
      FROM generate_series(1, ${NOTES}) i`)
    yield* sql.unsafe("ANALYZE memory.note")
  }).pipe(Effect.orDie)
)
const seedMs = performance.now() - seedStart

const root = createRootDir("kintsugi-bench-memory-")
const { url, token } = await rt.runPromise(
  Effect.gen(function* () {
    const store = yield* JobStore
    const job = yield* store.enqueue(
      { project: "bench", agent: "bench", task: "t", workspace: { root, readOnly: [root], outDir: root }, limits: { timeoutSec: 3600 } },
      "bench"
    )
    yield* store.claim("bench", 3_600_000, job.id)
    const token = yield* (yield* ServiceTokens).mint({
      jobId: job.id,
      projectId: "bench",
      agentId: "bench",
      memoryRole: null,
      tools: ["memory_search"]
    })
    return { url: yield* (yield* ServicesEndpoint).url, token }
  })
)

const time = async (f: (i: number) => Promise<unknown>) => {
  for (let i = 0; i < WARMUP; i++) await f(i)
  const ms: Array<number> = []
  for (let i = 0; i < QUERIES; i++) {
    const t = performance.now()
    await f(i)
    ms.push(performance.now() - t)
  }
  return ms
}

const channel = await time(async (i) => {
  const r = await fetch(`${url}/memory_search`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ query: queryOf(i), limit: 10 })
  })
  await r.text()
})
const store = await time((i) =>
  rt.runPromise(
    Effect.flatMap(MemoryStore, (m) =>
      m.search({ projectId: "bench", jobId: "00000000-0000-4000-8000-000000000000", reviewer: false }, queryOf(i), undefined, 10)
    )
  )
)
const direct = await time((i) =>
  rt.runPromise(
    Effect.flatMap(
      SqlClient,
      (sql) =>
        sql`SELECT id, kind, title, trust, body FROM memory.note WHERE project_id = 'bench' AND trust IN ('learned', 'reviewed')
        AND search @@ to_tsquery('simple', ${orQuery(queryOf(i)) ?? ""}) ORDER BY ts_rank(search, to_tsquery('simple', ${orQuery(queryOf(i)) ?? ""})) DESC LIMIT 10`
    ).pipe(Effect.orDie)
  )
)

const db = (process.env["DATABASE_URL"] ?? "") === "" ? "embedded PGlite" : "PostgreSQL"
const row = (label: string, ms: ReadonlyArray<number>) =>
  `${label.padEnd(44)} ${quantile(ms, 0.5).toFixed(2).padStart(9)} ${quantile(ms, 0.99).toFixed(2).padStart(9)}`
console.log(
  `memory_search over ${NOTES} notes of one project (seeded in ${seedMs.toFixed(0)} ms), ${db}, ${QUERIES} queries after ${WARMUP} warm-up, one at a time`
)
console.log(`${"path".padEnd(44)} ${"p50 ms".padStart(9)} ${"p99 ms".padStart(9)}`)
console.log(row("memory_search via the services endpoint", channel))
console.log(row("MemoryStore.search (no HTTP, no token)", store))
console.log(row("the same query directly in SQL (reference)", direct))
await rt.dispose()
