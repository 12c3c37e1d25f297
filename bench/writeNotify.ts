/**
 * The staleness bound of cached reads on a PostgreSQL server (src/db/serverWrites.ts): another
 * process (a raw `pg` client) commits a write to a notifying table; how long until this process's
 * epoch moves (its cached tokens and catalog generation are dropped). Measured from the moment the
 * writer hears its COMMIT completed (what the writer's user could observe first) and from the moment
 * it sent the statement; beside a plain round trip (`SELECT 1`) on the same writer as the reference.
 * Needs DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test); makes and drops a database.
 */
import { Effect, ManagedRuntime } from "effect"
import { randomBytes } from "node:crypto"
import pg from "pg"
import { DbWrites, makeDbLayer } from "../src/db/Db.ts"
import { adminStatement, withDatabase } from "../test/support/db.ts"

const WRITES = 1000
const WARMUP = 100
const server = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const quantile = (xs: ReadonlyArray<number>, q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN

const name = `kintsugi_bench_${randomBytes(6).toString("hex")}`
await adminStatement(server, `CREATE DATABASE ${name}`)
const url = withDatabase(server, name)
const reader = ManagedRuntime.make(makeDbLayer({ url, migrate: true }))
const writes = await reader.runPromise(DbWrites)
const writer = new pg.Client({ connectionString: url })
await writer.connect()
try {
  if (writes.epoch() === undefined) throw new Error("the write listener is not up")
  const afterCommit: Array<number> = []
  const afterSend: Array<number> = []
  const roundTrip: Array<number> = []
  for (let i = 0; i < WARMUP + WRITES; i++) {
    const from = writes.epoch()
    const heard = Effect.runPromise(Effect.map(writes.changed(from), () => performance.now()))
    const t0 = performance.now()
    await writer.query("UPDATE admin.catalog_generation SET n = n + 1")
    const t1 = performance.now()
    const t2 = await heard
    const r0 = performance.now()
    await writer.query("SELECT 1")
    const r1 = performance.now()
    if (i >= WARMUP) {
      afterCommit.push(t2 - t1)
      afterSend.push(t2 - t0)
      roundTrip.push(r1 - r0)
    }
  }
  const row = (label: string, xs: ReadonlyArray<number>) =>
    `${label.padEnd(44)} ${quantile(xs, 0.5).toFixed(2).padStart(8)} ${quantile(xs, 0.99).toFixed(2).padStart(8)} ${Math.max(...xs)
      .toFixed(2)
      .padStart(8)}`
  console.log(`${WRITES} writes by another connection after ${WARMUP} warm-up, ${navigator.hardwareConcurrency} cores`)
  console.log(`${"ms".padEnd(44)} ${"p50".padStart(8)} ${"p99".padStart(8)} ${"max".padStart(8)}`)
  console.log(row("writer heard COMMIT → reader's epoch moved", afterCommit))
  console.log(row("writer sent UPDATE → reader's epoch moved", afterSend))
  console.log(row("SELECT 1 round trip (reference)", roundTrip))
} finally {
  await writer.end()
  await reader.dispose()
  await adminStatement(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}
