/**
 * JobStore reads rows through a schema: a row that does not decode is RowInvalid naming the method (500
 * at the edge, no detail in the body); a failed statement is StoreUnavailable (503).
 */
import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { StoreUnavailable } from "../../src/db/StoreError.ts"
import { errorResponse } from "../../src/http/respond.ts"
import { makeJobStore } from "../../src/worker/JobStore.ts"
import { useTestDb } from "../support/db.ts"

const db = useTestDb()
const JOB = "00000000-0000-4000-8000-0000000000c1"

describe("JobStore rows", () => {
  test("a job whose limits are not numbers is RowInvalid for get and list; the edge answers 500 without the detail", async () => {
    const [got, listed] = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        yield* sql`INSERT INTO runtime.job (id, agent_name, task, workspace, limits, metadata, created_by)
          VALUES (${JOB}, 'a', 't', '{"root": "/r", "readOnly": ["."], "outDir": "/r/out"}'::jsonb, '{"timeoutSec": "soon"}'::jsonb, '{}'::jsonb, 'someone')`
        const store = yield* makeJobStore
        return [yield* Effect.flip(store.get(JOB)), yield* Effect.flip(store.list({ limit: 10 }))] as const
      })
    )
    expect(got._tag).toBe("RowInvalid")
    expect(got.message).toBe("a stored row read by JobStore.get is malformed")
    expect(listed._tag).toBe("RowInvalid")
    if (got._tag !== "RowInvalid") throw new Error("unreachable")
    const response = errorResponse(got)
    expect(response.status).toBe(500)
    expect(await response.json()).toEqual({ error: { code: "row-invalid", message: "a stored row read by JobStore.get is malformed" } })
  })

  test("StoreUnavailable is a 503 naming the operation, never the driver's message", async () => {
    const response = errorResponse(
      new StoreUnavailable({ operation: "JobStore.list", cause: new SqlError({ message: "connect ECONNREFUSED 10.0.0.7:5432" }) })
    )
    expect(response.status).toBe(503)
    const text = await response.text()
    expect(JSON.parse(text)).toEqual({
      error: { code: "store-unavailable", message: "the database did not complete JobStore.list; try again shortly" }
    })
    expect(text).not.toContain("10.0.0.7")
  })
})
