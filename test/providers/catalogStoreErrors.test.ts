/**
 * The catalog stores' failures: a malformed stored row is RowInvalid and a refused statement is
 * StoreUnavailable, each naming the method and keeping the decoder's or the driver's error as cause;
 * where a store's shape cannot fail (SkillStore) the same error is the defect.
 */
import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import { Cause, Effect, Exit, Option } from "effect"
import { makeSkillStore } from "../../src/agents/SkillStore.ts"
import { makeMcpServers } from "../../src/providers/McpServers.ts"
import { makeProviderStore } from "../../src/providers/ProviderStore.ts"
import { makeSecretBox, SecretBox } from "../../src/providers/SecretBox.ts"
import { useTestDb } from "../support/db.ts"

const db = useTestDb()
const withBox = Effect.provideService(SecretBox, makeSecretBox(randomBytes(32)))

describe("catalog store failures", () => {
  test("an MCP server row whose allowed_tools is not a list of names is RowInvalid naming McpServers.list", async () => {
    const failed = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const servers = yield* withBox(makeMcpServers)
        yield* sql`INSERT INTO admin.mcp_server (name, url, timeout_sec, allowed_tools, allow_private_network, updated_by)
          VALUES ('bad-row', 'https://example.com/mcp', 30, '{"search": true}'::jsonb, false, 'test')`
        const failed = yield* Effect.flip(servers.list)
        yield* sql`DELETE FROM admin.mcp_server WHERE name = 'bad-row'`
        return failed
      })
    )
    expect(failed._tag).toBe("RowInvalid")
    expect(failed.message).toBe("a stored row read by McpServers.list is malformed")
    expect((failed.cause as { _tag?: string })._tag).toBe("ParseError")
  })

  test("a provider list on a refused statement is StoreUnavailable naming ProviderStore.list, the SqlError kept", async () => {
    const failed = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const providers = yield* withBox(makeProviderStore)
        yield* sql`ALTER TABLE admin.llm_provider RENAME TO llm_provider_moved`
        const failed = yield* Effect.flip(providers.list)
        yield* sql`ALTER TABLE admin.llm_provider_moved RENAME TO llm_provider`
        return failed
      })
    )
    expect(failed._tag).toBe("StoreUnavailable")
    expect(failed.message).toBe("the database did not complete ProviderStore.list; try again shortly")
    expect((failed.cause as { _tag?: string })._tag).toBe("SqlError")
  })

  test("a skill row whose metadata is not an object dies with RowInvalid naming SkillStore.get", async () => {
    const exit = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const skills = yield* makeSkillStore
        yield* sql`INSERT INTO admin.agent_skill (name, description, content, updated_by, metadata) VALUES ('bad-meta', '', 'x', 'test', '[1]'::jsonb)`
        const exit = yield* Effect.exit(skills.get("bad-meta"))
        yield* sql`DELETE FROM admin.agent_skill WHERE name = 'bad-meta'`
        return exit
      })
    )
    expect(Exit.isFailure(exit)).toBe(true)
    const defect = Exit.isFailure(exit) ? Cause.dieOption(exit.cause) : Option.none()
    expect(Option.getOrUndefined(defect)).toMatchObject({ _tag: "RowInvalid", operation: "SkillStore.get" })
  })
})
