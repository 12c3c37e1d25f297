/**
 * storableJson: what a model wrote reaches a row PostgreSQL accepts. Each value goes into a real
 * `jsonb` column (the embedded database, or DATABASE_URL's server) before and after.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { storableJson } from "../../src/db/storable.ts"
import { useTestDb } from "../support/db.ts"

setDefaultTimeout(60_000)

const db = useTestDb()

const store = (value: unknown) =>
  db.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const rows = yield* sql`SELECT ${JSON.stringify(value)}::jsonb AS v`
      const v = rows[0]?.["v"]
      return typeof v === "string" ? JSON.parse(v) : v
    })
  )

const hostile = {
  text: "before\u0000after",
  lone: ["\ud800", "x\udc00y"],
  ["key\u0000"]: { deep: [{ s: "a\ud83dz" }] },
  fine: "emoji \ud83d\ude00 stays",
  n: 3,
  nothing: null
}

describe("storableJson", () => {
  test("the database refuses the raw value", async () => {
    await expect(store({ text: "a\u0000b" })).rejects.toThrow()
    await expect(store({ text: "\ud800" })).rejects.toThrow()
  })

  test("U+0000 and unpaired surrogates become U+FFFD, in strings and keys at any depth, and the row is stored", async () => {
    const cleaned = storableJson(hostile)
    expect(cleaned as unknown).toEqual({
      text: "before\ufffdafter",
      lone: ["\ufffd", "x\ufffdy"],
      ["key\ufffd"]: { deep: [{ s: "a\ufffdz" }] },
      fine: "emoji \ud83d\ude00 stays",
      n: 3,
      nothing: null
    })
    expect(await store(cleaned)).toEqual(cleaned)
  })

  test("a value with nothing to change is returned as it is", () => {
    const value = { a: "plain", b: [1, "two", { c: "\ud83d\ude00" }] }
    expect(storableJson(value)).toBe(value)
  })
})
