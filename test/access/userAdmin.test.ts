/**
 * User administration on a real database: permissions set in one transaction under the last-holder
 * rules (the only admin cannot remove a permission from itself, even when another user holds it alone),
 * a concurrent pair of changes that would together lock everyone out, password reset and change.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { Access, AccessLive } from "../../src/access/Access.ts"
import { useTestDb } from "../support/db.ts"

setDefaultTimeout(30_000)

const db = useTestDb(AccessLive)
const run = <A, E>(f: (a: Access["Type"]) => Effect.Effect<A, E>) => db.run(Effect.flatMap(Access, f))
const flip = <A, E>(f: (a: Access["Type"]) => Effect.Effect<A, E>) => db.run(Effect.flip(Effect.flatMap(Access, f)))
const permissionsOf = async (username: string) => (await run((a) => a.user(username))).permissions
const PASSWORD = "a long enough password"

describe("the last admin", () => {
  test("the only holder of both permissions cannot remove one from itself, though another user holds it", async () => {
    await run((a) => a.addUser("root", PASSWORD, ["agents.manage", "providers.manage"]))
    await run((a) => a.addUser("keys", PASSWORD, ["providers.manage"]))
    const revoked = await flip((a) => a.revoke("root", "providers.manage"))
    expect(revoked).toMatchObject({
      _tag: "WouldLockOut",
      message:
        "root is the last enabled user with every admin permission (agents.manage and providers.manage); without one nobody can manage users: make someone else an admin first"
    })
    const set = await flip((a) => a.setPermissions("root", ["agents.manage"]))
    expect(set._tag).toBe("WouldLockOut")
    expect((await flip((a) => a.setDisabled("root", true)))._tag).toBe("WouldLockOut")
    expect(await permissionsOf("root")).toEqual(["agents.manage", "providers.manage"])
    // keys' providers.manage may go: root still holds it.
    expect(await run((a) => a.setPermissions("keys", []))).toMatchObject({ username: "keys", permissions: [] })
  })

  test("with a second admin, either may step down; the permissions are replaced whole", async () => {
    await run((a) => a.addUser("second", PASSWORD, []))
    expect((await run((a) => a.setPermissions("second", ["providers.manage", "agents.manage", "agents.manage"]))).permissions).toEqual([
      "agents.manage",
      "providers.manage"
    ])
    expect((await run((a) => a.setPermissions("root", ["metrics.read"]))).permissions).toEqual(["metrics.read"])
    // Now second is the last admin and the last holder of each permission.
    expect((await flip((a) => a.setPermissions("second", ["agents.manage"]))).message).toBe(
      "second is the last enabled user with providers.manage; grant it to someone else first"
    )
    await run((a) => a.setPermissions("root", ["agents.manage", "providers.manage"]))
    expect((await flip((a) => a.setPermissions("nobody", []))).message).toBe('no user "nobody"')
  })

  test("two admins removing each other at the same moment: one change waits for the other, and one is refused", async () => {
    // root and second are the admins: each change alone would be fine, both together leave none.
    const both = await Promise.all([
      db.runExit(Effect.flatMap(Access, (a) => a.setPermissions("root", []))),
      db.runExit(Effect.flatMap(Access, (a) => a.setPermissions("second", [])))
    ])
    expect(both.map((e) => e._tag).sort()).toEqual(["Failure", "Success"])
    const admins = (await run((a) => a.users)).filter(
      (u) => u.permissions.includes("agents.manage") && u.permissions.includes("providers.manage")
    )
    expect(admins.length).toBe(1)
  })

  test("disabling the last admin is refused even when every permission has another holder", async () => {
    const admin = (await run((a) => a.users)).find((u) => u.permissions.length === 2)!.username
    await run((a) => a.addUser("agents-only", PASSWORD, ["agents.manage"]))
    await run((a) => a.addUser("providers-only", PASSWORD, ["providers.manage"]))
    expect((await flip((a) => a.setDisabled(admin, true)))._tag).toBe("WouldLockOut")
    expect((await run((a) => a.user(admin))).disabledAt).toBeNull()
  })
})

describe("passwords", () => {
  test("a reset sets the password and ends every session of the user; their tokens keep working", async () => {
    await run((a) => a.addUser("pat", PASSWORD, []))
    const session = await run((a) => a.signIn("pat", PASSWORD))
    const token = await run((a) => a.issueToken("pat", "ci"))
    await run((a) => a.setPassword("pat", "a brand new password"))
    expect(Option.isNone(await run((a) => a.session(session.token)))).toBe(true)
    expect(Option.isSome(await run((a) => a.bearer(token)))).toBe(true)
    expect((await flip((a) => a.signIn("pat", PASSWORD)))._tag).toBe("InvalidCredentials")
    await run((a) => a.signIn("pat", "a brand new password"))
    expect(await flip((a) => a.setPassword("pat", "short"))).toMatchObject({
      _tag: "InvalidUser",
      field: "password",
      message: "a password has at least 12 characters"
    })
    expect((await flip((a) => a.setPassword("ghost", "a long enough one")))._tag).toBe("UnknownUser")
  })

  test("a change checks the current password, keeps the given session and ends the others", async () => {
    await run((a) => a.addUser("quinn", PASSWORD, []))
    const here = await run((a) => a.signIn("quinn", PASSWORD))
    const elsewhere = await run((a) => a.signIn("quinn", PASSWORD))
    const hash = () =>
      db.run(
        Effect.flatMap(SqlClient, (sql) => sql<{ passwordHash: string }>`SELECT password_hash FROM admin.app_user WHERE username = 'quinn'`)
      )
    const before = await hash()
    expect((await flip((a) => a.changePassword("quinn", "not the password", "another long password", here.token)))._tag).toBe(
      "InvalidCredentials"
    )
    // The new password is judged before the current one is checked: a weak one costs no guess.
    expect(await flip((a) => a.changePassword("quinn", "not the password", "short", here.token))).toMatchObject({
      _tag: "InvalidUser",
      field: "password"
    })
    expect(await hash()).toEqual(before)
    await run((a) => a.changePassword("quinn", PASSWORD, "another long password", here.token))
    expect(Option.isSome(await run((a) => a.session(here.token)))).toBe(true)
    expect(Option.isNone(await run((a) => a.session(elsewhere.token)))).toBe(true)
    await run((a) => a.signIn("quinn", "another long password"))
  })

  test("a new user's name and password are judged with the field named; a taken name is UserExists", async () => {
    expect(await flip((a) => a.addUser("Bad Name", PASSWORD, []))).toMatchObject({ _tag: "InvalidUser", field: "username" })
    expect(await flip((a) => a.addUser("okname", "x".repeat(1025), []))).toMatchObject({
      _tag: "InvalidUser",
      field: "password",
      message: "a password has at most 1024 characters"
    })
    const taken = await Promise.all([
      db.runExit(Effect.flatMap(Access, (a) => a.addUser("twin", PASSWORD, []))),
      db.runExit(Effect.flatMap(Access, (a) => a.addUser("twin", PASSWORD, [])))
    ])
    expect(taken.map((e) => e._tag).sort()).toEqual(["Failure", "Success"])
    expect((await flip((a) => a.addUser("twin", PASSWORD, []))).message).toBe('user "twin" already exists')
  })
})
