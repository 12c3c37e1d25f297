/**
 * Embedded database start-up, layer open → first query answered, median of 5 each: cold (initdb into a
 * fresh data dir), warm (reopen that data dir), from a dumpDataDir snapshot (bytes, file), from a copied
 * template dir; beside connecting to the real PostgreSQL at 127.0.0.1:5432 when it is reachable.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { type DbOptions, makeDbLayer, makeSnapshot } from "../src/db/Db.ts"
import { runMigrations } from "../src/db/migrations.ts"

const RUNS = 5
const SERVER_URL = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const root = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-bench-db-"))

interface Sample {
  readonly open: number
  readonly close: number
  /** Longest gap of a 10 ms main-thread heartbeat while opening: does start-up block the event loop? */
  readonly maxGap: number
}

/** Opens the layer, runs one query, closes it. */
const sample = async (options: DbOptions): Promise<Sample> => {
  let last = performance.now()
  let maxGap = 0
  const beat = setInterval(() => {
    const now = performance.now()
    maxGap = Math.max(maxGap, now - last)
    last = now
  }, 10)
  const t0 = performance.now()
  let t1 = t0
  try {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(makeDbLayer(options))
          yield* Effect.provide(
            Effect.flatMap(SqlClient, (sql) => sql`SELECT 1`),
            context
          )
          t1 = performance.now()
          clearInterval(beat)
        })
      )
    )
  } finally {
    clearInterval(beat)
  }
  return { open: t1 - t0, close: performance.now() - t1, maxGap }
}

const series = async (label: string, prepare: (i: number) => DbOptions | Promise<DbOptions>) => {
  const samples: Array<Sample> = []
  for (let i = 0; i < RUNS; i++) samples.push(await sample(await prepare(i)))
  const ms = (n: number) => `${n.toFixed(0).padStart(6)} ms`
  console.log(
    `${label.padEnd(44)} open ${ms(median(samples.map((s) => s.open)))}   close ${ms(median(samples.map((s) => s.close)))}` +
      `   max loop gap ${ms(median(samples.map((s) => s.maxGap)))}` +
      `   (first: open ${ms(samples[0]?.open ?? NaN)}, loop gap ${ms(samples[0]?.maxGap ?? NaN)})`
  )
}

console.log(
  `median of ${RUNS}; ${os.cpus().length} CPUs, load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`
)
const dirs = Array.from({ length: RUNS }, (_, i) => path.join(root, `cold-${i}`, "data"))
await series("embedded cold start (initdb, fresh data dir)", (i) => ({ dataDir: dirs[i] }))
await series("embedded warm start (reopen the data dir)", () => ({ dataDir: dirs[0] }))

const snapshot = await Effect.runPromise(makeSnapshot(runMigrations))
console.log(`(snapshot: ${(snapshot.byteLength / 1e6).toFixed(1)} MB uncompressed tarball, migrations applied)`)
await series("embedded from snapshot bytes (loadDataDir)", () => ({ snapshot }))
const snapshotFile = path.join(root, "snapshot.tar")
fs.writeFileSync(snapshotFile, snapshot)
await series("embedded from snapshot file (Bun.file)", () => ({ snapshot: Bun.file(snapshotFile) }))

const template = path.join(root, "template", "data")
await sample({ dataDir: template, migrate: true })
await series("embedded from template dir (copy + reopen)", (i) => {
  const copy = path.join(root, `copy-${i}`, "data")
  fs.cpSync(template, copy, { recursive: true })
  return { dataDir: copy }
})

const reachable = await sample({ url: SERVER_URL }).then(
  () => true,
  () => false
)
if (reachable) await series(`PostgreSQL server (${new URL(SERVER_URL).host}, connect)`, () => ({ url: SERVER_URL }))
else console.log(`PostgreSQL server at ${new URL(SERVER_URL).host}: not reachable, skipped`)

fs.rmSync(root, { recursive: true, force: true })
