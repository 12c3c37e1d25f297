/**
 * The memory store's failures are typed: a row that does not decode is RowInvalid, a statement the
 * database refuses is StoreUnavailable, each naming the store method and keeping the original as `cause`.
 */
import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { makeMemoryStore } from "../../src/worker/memory/MemoryStore.ts"
import { useTestDb } from "../support/db.ts"

const db = useTestDb()
const NOTE = "00000000-0000-4000-8000-0000000000b1"

describe("MemoryStore failures", () => {
  test("a note whose paths are not a list of strings is RowInvalid, with the decoder's error as cause", async () => {
    const error = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        yield* sql`INSERT INTO runtime.project (id, name) VALUES ('bad-rows', 'bad rows')`
        yield* sql`INSERT INTO memory.note (id, project_id, kind, title, body, paths, trust, created_agent, updated_agent, created_at, updated_at, trust_at)
          VALUES (${NOTE}, 'bad-rows', 'fact', 't', 'b', '{"not": "a list"}'::jsonb, 'learned', 'a', 'a', now(), now(), now())`
        const store = yield* makeMemoryStore
        return yield* Effect.flip(store.list("bad-rows", {}))
      })
    )
    expect(error._tag).toBe("RowInvalid")
    expect(error.message).toBe("a stored row read by MemoryStore.list is malformed")
    expect((error.cause as { _tag?: string })._tag).toBe("ParseError")
  })

  test("a statement the database refuses is StoreUnavailable (503 at the edge), with the SqlError as cause", async () => {
    const error = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const store = yield* makeMemoryStore
        yield* sql`ALTER TABLE memory.scratchpad RENAME TO scratchpad_moved`
        const failed = yield* Effect.flip(store.scratchpad("00000000-0000-4000-8000-0000000000b2"))
        yield* sql`ALTER TABLE memory.scratchpad_moved RENAME TO scratchpad`
        return failed
      })
    )
    expect(error._tag).toBe("StoreUnavailable")
    expect(error.message).toBe("the database did not complete MemoryStore.scratchpad; try again shortly")
    expect((error.cause as { _tag?: string })._tag).toBe("SqlError")
  })
})
