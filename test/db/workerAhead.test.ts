/**
 * The embedded database's worker started ahead (embeddedWorkerAhead.ts, what `kintsugi serve` does
 * before loading the app): the database's first worker is that one, compiled already, and it opens a
 * data dir and answers like any other.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Layer } from "effect"
import { makeDbLayer } from "../../src/db/Db.ts"
import { startWorkerAhead, workerWaiting } from "../../src/db/embeddedWorkerAhead.ts"
import { createTestDataDir } from "../support/db.ts"

setDefaultTimeout(120_000)

test("the worker started ahead is the one the database opens its data dir in, once", async () => {
  const { dataDir, cleanup } = await createTestDataDir()
  try {
    startWorkerAhead()
    expect(workerWaiting()).toBe(true)
    const rows = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(makeDbLayer({ dataDir }))
          // Taken by the database's start, not left waiting.
          expect(workerWaiting()).toBe(false)
          return yield* Effect.provide(
            Effect.flatMap(SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM effect_sql_migrations`),
            context
          )
        })
      )
    )
    expect(rows[0]!.n).toBeGreaterThan(10)
    // A second database of the process starts its own worker.
    const again = await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(Layer.build(makeDbLayer({})), (context) =>
          Effect.provide(
            Effect.flatMap(SqlClient, (sql) => sql<{ one: number }>`SELECT 1 AS one`),
            context
          )
        )
      )
    )
    expect(again[0]!.one).toBe(1)
  } finally {
    cleanup()
  }
})
