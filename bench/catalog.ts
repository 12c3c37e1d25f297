/**
 * The Agent Builder catalog under load: 1,000 custom agents seeded in SQL, the app on Bun.serve at
 * 127.0.0.1:0, 32 concurrent clients doing GET /api/admin/agents with a Bearer token (640 requests),
 * beside the same load on GET /healthz. Embedded database by default, DATABASE_URL when set.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { Access } from "../src/access/Access.ts"
import { makeApp } from "../src/http/app.ts"
import { makeAppRuntime } from "../src/main.ts"
import { makeSecretBox, SecretBox } from "../src/providers/SecretBox.ts"
import { testDbLayer } from "../test/support/db.ts"

const AGENTS = 1000
const CLIENTS = 32
const REQUESTS = 640
const WARMUP = 64

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

const app = makeApp({ runtime, healthy: () => Promise.resolve(true), log: (line) => process.stderr.write(`${line}\n`) })
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => app.handle(request) })
const base = `http://127.0.0.1:${server.port}`

interface Result {
  readonly latencies: ReadonlyArray<number>
  readonly seconds: number
  readonly bytes: number
}

/** `total` requests over `CLIENTS` concurrent loops; every response must be 200. */
const load = async (path: string, total: number, headers: Record<string, string>): Promise<Result> => {
  const latencies: Array<number> = []
  let next = 0
  let bytes = 0
  const client = async () => {
    while (next < total) {
      next++
      const t0 = performance.now()
      const r = await fetch(`${base}${path}`, { headers })
      const body = await r.arrayBuffer()
      latencies.push(performance.now() - t0)
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${new TextDecoder().decode(body).slice(0, 200)}`)
      bytes = body.byteLength
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: CLIENTS }, client))
  return { latencies, seconds: (performance.now() - t0) / 1000, bytes }
}

try {
  const auth = { authorization: `Bearer ${token}` }
  const first = await (await fetch(`${base}/api/admin/agents`, { headers: auth })).json()
  const count = (first as { agents: Array<unknown> }).agents.length
  await load("/api/admin/agents", WARMUP, auth)
  await load("/healthz", WARMUP, {})
  const catalog = await load("/api/admin/agents", REQUESTS, auth)
  const health = await load("/healthz", REQUESTS, {})

  const db = (process.env["DATABASE_URL"] ?? "") !== "" ? "PostgreSQL server (DATABASE_URL)" : "embedded PGlite"
  const row = (label: string, r: Result) =>
    `${label.padEnd(22)} ${quantile(r.latencies, 0.5).toFixed(1).padStart(9)} ${quantile(r.latencies, 0.99).toFixed(1).padStart(9)} ${(r.latencies.length / r.seconds).toFixed(0).padStart(9)} ${String(r.bytes).padStart(10)}`
  console.log(`catalog of ${count} agents (${AGENTS} custom seeded in ${seedMs.toFixed(0)} ms), ${db}`)
  console.log(`${CLIENTS} concurrent clients, ${REQUESTS} requests each route after ${WARMUP} warm-up requests`)
  console.log(`${"route".padEnd(22)} ${"p50 ms".padStart(9)} ${"p99 ms".padStart(9)} ${"req/s".padStart(9)} ${"bytes".padStart(10)}`)
  console.log(row("GET /api/admin/agents", catalog))
  console.log(row("GET /healthz", health))
} finally {
  await server.stop(true)
  await runtime.dispose()
}
