/** Users, permissions, sessions and tokens on a real database; the operators' `kintsugi users` command. */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer, Option } from "effect"
import { Access, AccessLive } from "../../src/access/Access.ts"
import { usersMain } from "../../src/access/usersCommand.ts"
import type { Db } from "../../src/db/Db.ts"
import { useTestDb } from "../support/db.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const db = useTestDb(AccessLive)

describe("Access", () => {
  test("passwords are stored as argon2id hashes; sign-in checks them", async () => {
    await db.run(Effect.flatMap(Access, (a) => a.addUser("alice", "correct horse battery", ["agents.manage"])))
    const rows = await db.run(Effect.flatMap(SqlClient, (sql) => sql<{ passwordHash: string }>`SELECT password_hash FROM admin.app_user WHERE username = 'alice'`))
    expect(rows[0]!.passwordHash.startsWith("$argon2id$")).toBe(true)
    expect(rows[0]!.passwordHash).not.toContain("correct horse")
    const wrong = await db.run(Effect.flip(Effect.flatMap(Access, (a) => a.signIn("alice", "wrong password!!"))))
    expect(wrong._tag).toBe("InvalidCredentials")
    const unknown = await db.run(Effect.flip(Effect.flatMap(Access, (a) => a.signIn("nobody", "whatever password"))))
    expect(unknown._tag).toBe("InvalidCredentials")
    const ok = await db.run(Effect.flatMap(Access, (a) => a.signIn("alice", "correct horse battery")))
    expect([...ok.principal.permissions]).toEqual(["agents.manage"])
    expect(ok.principal.csrfToken?.length).toBeGreaterThan(20)
  })

  test("sessions and tokens are stored only as hashes and resolve to the principal", async () => {
    await db.run(Effect.flatMap(Access, (a) => a.addUser("bob", "another long password", [])))
    const { token } = await db.run(Effect.flatMap(Access, (a) => a.signIn("bob", "another long password")))
    const apiToken = await db.run(Effect.flatMap(Access, (a) => a.issueToken("bob", "ci")))
    const stored = await db.run(
      Effect.flatMap(SqlClient, (sql) => sql`SELECT token_hash FROM admin.session UNION ALL SELECT token_hash FROM admin.api_token`)
    )
    expect(JSON.stringify(stored)).not.toContain(token)
    expect(JSON.stringify(stored)).not.toContain(apiToken)
    const viaSession = await db.run(Effect.flatMap(Access, (a) => a.session(token)))
    const viaToken = await db.run(Effect.flatMap(Access, (a) => a.bearer(apiToken)))
    expect(Option.map(viaSession, (p) => [p.username, p.via])).toEqual(Option.some(["bob", "session"]))
    expect(Option.map(viaToken, (p) => [p.username, p.via])).toEqual(Option.some(["bob", "token"]))
    await db.run(Effect.flatMap(Access, (a) => a.signOut(token)))
    expect(Option.isNone(await db.run(Effect.flatMap(Access, (a) => a.session(token))))).toBe(true)
    expect(Option.isNone(await db.run(Effect.flatMap(Access, (a) => a.bearer(`${apiToken}x`))))).toBe(true)
  })

  test("bad usernames, short passwords and duplicates are refused with clear messages", async () => {
    const errors = await Promise.all([
      db.run(Effect.flip(Effect.flatMap(Access, (a) => a.addUser("Bad Name", "long enough password", [])))),
      db.run(Effect.flip(Effect.flatMap(Access, (a) => a.addUser("carol", "short", []))))
    ])
    expect(errors.map((e) => e._tag)).toEqual(["InvalidUser", "InvalidUser"])
    await db.run(Effect.flatMap(Access, (a) => a.addUser("dave", "long enough password", [])))
    const dup = await db.run(Effect.flip(Effect.flatMap(Access, (a) => a.addUser("dave", "long enough password", []))))
    expect(dup.message).toBe('user "dave" already exists')
  })
})

describe("kintsugi users", () => {
  test("add, grant and token, with the password from stdin, never from argv", async () => {
    const out: Array<string> = []
    const err: Array<string> = []
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l), stdin: async () => "a very long password\n" }
    // The commands share this file's database (a layer over the running one, not a new database per call).
    const layer = Layer.succeedContext(await db.run(Effect.context<Db>()))
    expect(await usersMain(["add", "erin", "--grant", "agents.manage"], io, layer)).toBe(0)
    expect(out.pop()).toBe("created user erin with agents.manage")
    expect(await usersMain(["grant", "nobody", "providers.manage"], io, layer)).toBe(1)
    expect(err.pop()).toBe('kintsugi users: no user "nobody"')
    expect(await usersMain(["grant", "erin", "providers.manage"], io, layer)).toBe(0)
    expect(await usersMain(["token", "erin", "--name", "ci"], io, layer)).toBe(0)
    const token = out.pop()!
    expect(token.startsWith("kt_")).toBe(true)
    const principal = await db.run(Effect.flatMap(Access, (a) => a.bearer(token)))
    expect(Option.map(principal, (p) => [...p.permissions].sort())).toEqual(Option.some(["agents.manage", "providers.manage"]))
    expect(await usersMain(["grant", "erin", "superuser"], io, layer)).toBe(2)
    expect(await usersMain(["frobnicate", "erin"], io, layer)).toBe(2)
  })
})
