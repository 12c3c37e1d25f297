/**
 * Access's failures are typed: a token lookup the database cannot answer is StoreUnavailable (503 at the
 * edge, the SqlError kept as cause), and the failure is not remembered: the next lookup reads again.
 */
import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { makeAccess } from "../../src/access/Access.ts"
import { useTestDb } from "../support/db.ts"

const db = useTestDb()

describe("Access failures", () => {
  test("a bearer lookup on a failing statement is StoreUnavailable naming Access.bearer; once the table is back, the token is simply unknown", async () => {
    const [failed, after] = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const access = yield* makeAccess
        yield* sql`ALTER TABLE admin.api_token RENAME TO api_token_moved`
        const failed = yield* Effect.flip(access.bearer("kt_not-a-token"))
        yield* sql`ALTER TABLE admin.api_token_moved RENAME TO api_token`
        return [failed, yield* access.bearer("kt_not-a-token")] as const
      })
    )
    expect(failed._tag).toBe("StoreUnavailable")
    expect(failed.message).toBe("the database did not complete Access.bearer; try again shortly")
    expect((failed.cause as { _tag?: string })._tag).toBe("SqlError")
    expect(Option.isNone(after)).toBe(true)
  })
})
