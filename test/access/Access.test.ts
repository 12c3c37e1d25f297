/** Users, permissions, sessions and tokens on a real database; the operators' `kintsugi users` command. */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer, Option } from "effect"
import { Access, AccessLive } from "../../src/access/Access.ts"
import { runUsersOp } from "../../src/access/usersCommand.ts"
import type { Db } from "../../src/db/Db.ts"
import { useTestDb } from "../support/db.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const db = useTestDb(AccessLive)

describe("Access", () => {
  test("passwords are stored as argon2id hashes; sign-in checks them", async () => {
    await db.run(Effect.flatMap(Access, (a) => a.addUser("alice", "correct horse battery", ["agents.manage"])))
    const rows = await db.run(
      Effect.flatMap(SqlClient, (sql) => sql<{ passwordHash: string }>`SELECT password_hash FROM admin.app_user WHERE username = 'alice'`)
    )
    expect(rows[0]!.passwordHash.startsWith("$argon2id$")).toBe(true)
    // At Bun's default cost (64 MiB, two passes): only the tests' app layer lowers it.
    expect(rows[0]!.passwordHash).toContain("$m=65536,t=2,")
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

const run = <A, E>(f: (a: Access["Type"]) => Effect.Effect<A, E>) => db.run(Effect.flatMap(Access, f))
const flip = <A, E>(f: (a: Access["Type"]) => Effect.Effect<A, E>) => db.run(Effect.flip(Effect.flatMap(Access, f)))
const sql = (query: string) => db.run(Effect.flatMap(SqlClient, (s) => s.unsafe(query)))

describe("API tokens: expiry, listing, revocation", () => {
  test("a token expires after 90 days by default, 1 to 365 on request; there is no never", async () => {
    await run((a) => a.addUser("tina", "a long enough password", ["agents.manage"]))
    const made = await run((a) => a.createToken("tina", "ci"))
    const days = (made.view.expiresAt.getTime() - made.view.createdAt.getTime()) / 86_400_000
    expect(Math.round(days)).toBe(90)
    const short = await run((a) => a.createToken("tina", "short", 1))
    expect(Math.round((short.view.expiresAt.getTime() - short.view.createdAt.getTime()) / 86_400_000)).toBe(1)
    for (const bad of [0, 366, 1.5, Number.NaN, -1]) {
      const e = await flip((a) => a.createToken("tina", "x", bad))
      expect(e.message).toBe("a token expires after 1 to 365 whole days")
    }
    const both = await flip((a) => a.createToken("tina", "", 0))
    expect(both.message).toBe("a token name is 1-64 characters without control characters; a token expires after 1 to 365 whole days")
    expect((await flip((a) => a.createToken("tina", "tab\there"))).message).toContain("control characters")
  })

  test("an expired token is refused at once; the list shows it as expired, never its value or hash", async () => {
    await run((a) => a.addUser("uma", "a long enough password", []))
    const { token, view } = await run((a) => a.createToken("uma", "old"))
    expect(Option.isSome(await run((a) => a.bearer(token)))).toBe(true)
    await sql(`UPDATE admin.api_token SET expires_at = now() - interval '1 second' WHERE id = '${view.id}'`)
    expect(Option.isNone(await run((a) => a.bearer(token)))).toBe(true)
    const list = await run((a) => a.tokens("uma"))
    expect(list.map((t) => [t.name, t.status])).toEqual([["old", "expired"]])
    const hash = (await sql(`SELECT token_hash FROM admin.api_token WHERE id = '${view.id}'`))[0] as { tokenHash: string }
    expect(JSON.stringify(list)).not.toContain(token)
    expect(JSON.stringify(list)).not.toContain(hash.tokenHash)
    expect(Object.keys(list[0]!).sort()).toEqual(["createdAt", "expiresAt", "id", "lastUsedAt", "name", "revokedAt", "status"])
  })

  test("a revoked token gets nothing from the very next lookup; revoking is per user and idempotent", async () => {
    await run((a) => a.addUser("vic", "a long enough password", []))
    await run((a) => a.addUser("wes", "a long enough password", []))
    const { token, view } = await run((a) => a.createToken("vic", "laptop"))
    expect(Option.isSome(await run((a) => a.bearer(token)))).toBe(true)
    expect((await run((a) => a.tokens("vic")))[0]!.lastUsedAt).not.toBeNull()
    // Another user cannot revoke it (and learns nothing: the same "no such token").
    expect((await flip((a) => a.revokeToken("wes", view.id)))._tag).toBe("TokenNotFound")
    expect((await flip((a) => a.revokeToken("vic", "not-a-uuid"))).message).toBe("no API token not-a-uuid")
    const revoked = await run((a) => a.revokeToken("vic", view.id))
    expect(revoked.status).toBe("revoked")
    expect(Option.isNone(await run((a) => a.bearer(token)))).toBe(true)
    const again = await run((a) => a.revokeToken("vic", view.id.toUpperCase()))
    expect(again.revokedAt).toEqual(revoked.revokedAt)
  })
})

describe("disabling users and removing permissions", () => {
  test("a disabled user's sessions and tokens stop at once and sign-in is refused; enabling restores sign-in", async () => {
    await run((a) => a.addUser("xena", "a long enough password", ["agents.manage", "providers.manage"]))
    await run((a) => a.addUser("yuri", "a long enough password", ["agents.manage"]))
    const session = await run((a) => a.signIn("yuri", "a long enough password"))
    const token = await run((a) => a.issueToken("yuri", "ci"))
    await run((a) => a.setDisabled("yuri", true, "xena"))
    expect(Option.isNone(await run((a) => a.session(session.token)))).toBe(true)
    expect(Option.isNone(await run((a) => a.bearer(token)))).toBe(true)
    const refused = await flip((a) => a.signIn("yuri", "a long enough password"))
    expect(refused.message).toBe("this user is disabled; ask an administrator")
    // A wrong password says nothing about the account's state.
    expect((await flip((a) => a.signIn("yuri", "the wrong password"))).message).toBe("unknown user or wrong password")
    expect((await run((a) => a.users)).find((u) => u.username === "yuri")?.disabledAt).not.toBeNull()
    await run((a) => a.setDisabled("yuri", false, "xena"))
    // The old session stays ended; the token works again, sign-in too.
    expect(Option.isNone(await run((a) => a.session(session.token)))).toBe(true)
    expect(Option.isSome(await run((a) => a.bearer(token)))).toBe(true)
    await run((a) => a.signIn("yuri", "a long enough password"))
  })

  test("nobody disables themselves; the last enabled holder of a permission keeps it", async () => {
    expect((await flip((a) => a.setDisabled("xena", true, "xena"))).message).toBe("you cannot disable yourself")
    // xena is the only enabled holder of providers.manage (from the test above).
    const last = await flip((a) => a.revoke("xena", "providers.manage"))
    expect(last.message).toBe("xena is the last enabled user with providers.manage; grant it to someone else first")
    expect((await flip((a) => a.setDisabled("xena", true))).message).toBe(
      "xena is the last enabled user with providers.manage; grant it to someone else first"
    )
    // agents.manage has other holders (tina, yuri), but xena is the only admin (both permissions): it stays.
    expect((await flip((a) => a.revoke("xena", "agents.manage"))).message).toBe(
      "xena is the last enabled user with every admin permission (agents.manage and providers.manage); without one nobody can manage users: make someone else an admin first"
    )
    // A permission one does not hold is a no-op.
    await run((a) => a.revoke("xena", "metrics.read"))
    expect((await run((a) => a.users)).find((u) => u.username === "xena")?.permissions).toEqual(["agents.manage", "providers.manage"])
    expect((await flip((a) => a.revoke("nobody", "agents.manage")))._tag).toBe("UnknownUser")
  })

  test("a removed permission is gone from the next lookup of a live session and token", async () => {
    await run((a) => a.grant("yuri", "providers.manage"))
    const session = await run((a) => a.signIn("yuri", "a long enough password"))
    const token = await run((a) => a.issueToken("yuri", "ci2"))
    await run((a) => a.revoke("yuri", "providers.manage"))
    const perms = (p: Option.Option<{ permissions: ReadonlySet<string> }>) => Option.map(p, (x) => [...x.permissions].sort())
    expect(perms(await run((a) => a.session(session.token)))).toEqual(Option.some(["agents.manage"]))
    expect(perms(await run((a) => a.bearer(token)))).toEqual(Option.some(["agents.manage"]))
  })
})

describe("kintsugi users", () => {
  test("add, grant and token, with the password from stdin, never from argv", async () => {
    const out: Array<string> = []
    const err: Array<string> = []
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l), stdin: async () => "a very long password\n" }
    // The commands share this file's database (a layer over the running one, not a new database per call).
    const layer = Layer.succeedContext(await db.run(Effect.context<Db>()))
    expect(await runUsersOp({ op: "add", username: "erin", grants: ["agents.manage"] }, io, layer)).toBe(0)
    expect(out.pop()).toBe("created user erin with agents.manage")
    expect(await runUsersOp({ op: "grant", username: "nobody", permission: "providers.manage" }, io, layer)).toBe(1)
    expect(err.pop()).toBe('kintsugi users: no user "nobody"')
    expect(await runUsersOp({ op: "grant", username: "erin", permission: "providers.manage" }, io, layer)).toBe(0)
    expect(await runUsersOp({ op: "token", username: "erin", name: "ci", days: 90 }, io, layer)).toBe(0)
    const token = out.pop()!
    expect(token.startsWith("kt_")).toBe(true)
    const principal = await db.run(Effect.flatMap(Access, (a) => a.bearer(token)))
    expect(Option.map(principal, (p) => [...p.permissions].sort())).toEqual(Option.some(["agents.manage", "providers.manage"]))
    expect(await runUsersOp({ op: "list" }, io, layer)).toBe(0)
    expect(
      out
        .pop()
        ?.split("\n")
        .find((l) => l.startsWith("erin "))
    ).toMatch(/^erin +agents\.manage,providers\.manage  enabled  created \S+ \S+$/)
    expect(await runUsersOp({ op: "list", json: true }, io, layer)).toBe(0)
    expect(JSON.parse(out.pop()!).find((u: { username: string }) => u.username === "erin")).toMatchObject({
      permissions: ["agents.manage", "providers.manage"],
      disabled: false
    })
    const other = { ...io, stdin: async () => "erin's next password\n" }
    expect(await runUsersOp({ op: "password", username: "erin" }, other, layer)).toBe(0)
    expect(out.pop()).toBe("set the password of erin; their sessions ended")
    await db.run(Effect.flatMap(Access, (a) => a.signIn("erin", "erin's next password")))
    expect(await runUsersOp({ op: "password", username: "erin" }, { ...io, stdin: async () => "short\n" }, layer)).toBe(1)
    expect(err.pop()).toBe("kintsugi users: a password has at least 12 characters")
  })

  test("tokens, revoke-token, revoke, disable and enable", async () => {
    const out: Array<string> = []
    const err: Array<string> = []
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l), stdin: async () => "a very long password\n" }
    const layer = Layer.succeedContext(await db.run(Effect.context<Db>()))
    expect(await runUsersOp({ op: "add", username: "fay", grants: ["agents.manage"] }, io, layer)).toBe(0)
    expect(await runUsersOp({ op: "token", username: "fay", name: "deploy", days: 7 }, io, layer)).toBe(0)
    const token = out.pop()!
    expect(await runUsersOp({ op: "tokens", username: "fay" }, io, layer)).toBe(0)
    const listing = out.pop()!
    expect(listing).not.toContain(token)
    const [line] = listing.split("\n")
    expect(line).toMatch(/^[0-9a-f-]{36}  deploy  active  created \S+ \S+  last used -  expires \S+ \S+$/)
    const id = line!.slice(0, 36)
    expect(await runUsersOp({ op: "revoke-token", username: "fay", id }, io, layer)).toBe(0)
    expect(out.pop()).toBe(`revoked token ${id} (deploy) of fay`)
    expect(Option.isNone(await db.run(Effect.flatMap(Access, (a) => a.bearer(token))))).toBe(true)
    expect(await runUsersOp({ op: "revoke-token", username: "fay", id: "nope" }, io, layer)).toBe(1)
    expect(err.pop()).toBe("kintsugi users: no API token nope")
    expect(await runUsersOp({ op: "token", username: "fay", name: "cli", days: 400 }, io, layer)).toBe(1)
    expect(err.pop()).toBe("kintsugi users: a token expires after 1 to 365 whole days")

    expect(await runUsersOp({ op: "disable", username: "fay" }, io, layer)).toBe(0)
    expect(out.pop()).toBe("disabled fay")
    expect((await db.run(Effect.flip(Effect.flatMap(Access, (a) => a.signIn("fay", "a very long password"))))).message).toBe(
      "this user is disabled; ask an administrator"
    )
    expect(await runUsersOp({ op: "enable", username: "fay" }, io, layer)).toBe(0)
    expect(await runUsersOp({ op: "revoke", username: "fay", permission: "agents.manage" }, io, layer)).toBe(0)
    expect(out.pop()).toBe("removed agents.manage from fay")
    // providers.manage: once erin loses it, xena is its last enabled holder in this file.
    expect(await runUsersOp({ op: "revoke", username: "erin", permission: "providers.manage" }, io, layer)).toBe(0)
    expect(await runUsersOp({ op: "revoke", username: "xena", permission: "providers.manage" }, io, layer)).toBe(1)
    expect(err.pop()).toBe("kintsugi users: xena is the last enabled user with providers.manage; grant it to someone else first")
    expect(await runUsersOp({ op: "disable", username: "xena" }, io, layer)).toBe(1)
  })
})
