/**
 * Users while serving, over HTTP: an admin creates a user, sets their permissions and resets their
 * password, each applied at the next request (no restart); the only admin cannot remove a permission
 * from itself; a user changes their own password (this session stays, the others end, the current
 * password is throttled like a sign-in). Every refusal is a 4xx naming what is wrong.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { PASSWORD, useApi } from "../support/api.ts"

setDefaultTimeout(60_000)

const api = useApi()
const AGENTS = "/api/admin/agents"
const asManager = (method: string, path: string, json?: unknown) => api.request(method, path, { token: api.manager.token, json })

describe("an admin creates a user, grants and resets while serving", () => {
  test("created with a permission: signs in at once; granted another: it applies to the live session", async () => {
    const made = await asManager("POST", "/api/admin/users", { username: "ann", password: PASSWORD, permissions: ["agents.manage"] })
    expect(made.status).toBe(201)
    expect(made.json().user).toMatchObject({ username: "ann", permissions: ["agents.manage"], disabled: false })
    const session = await api.signIn("ann", PASSWORD)
    expect((await api.request("GET", "/api/admin/users", { session })).status).toBe(403)
    const put = await asManager("PUT", "/api/admin/users/ann/permissions", { permissions: ["agents.manage", "providers.manage"] })
    expect(put.status).toBe(200)
    expect(put.json().user.permissions).toEqual(["agents.manage", "providers.manage"])
    // Her live session holds both from its next request: an admin, she manages users herself.
    expect((await api.request("GET", "/api/session", { session })).json().user.permissions).toEqual(["agents.manage", "providers.manage"])
    expect((await api.request("GET", "/api/admin/users", { session })).status).toBe(200)
    expect((await asManager("PUT", "/api/admin/users/ann/permissions", { permissions: [] })).json().user.permissions).toEqual([])
    expect((await api.request("GET", "/api/admin/users", { session })).status).toBe(403)
  })

  test("a reset ends the user's sessions; the new password signs in, the old one not", async () => {
    await asManager("POST", "/api/admin/users", { username: "bo", password: PASSWORD })
    const session = await api.signIn("bo", PASSWORD)
    expect((await asManager("POST", "/api/admin/users/bo/password", { password: "the reset password" })).status).toBe(204)
    expect((await api.request("GET", AGENTS, { session })).status).toBe(401)
    expect((await api.request("POST", "/api/session", { json: { username: "bo", password: PASSWORD } })).status).toBe(401)
    await api.signIn("bo", "the reset password")
  })

  test("refusals name what is wrong: 400 with every problem, 404, 409; never a 500", async () => {
    const bad = await asManager("POST", "/api/admin/users", {
      username: "Not Valid",
      password: "short",
      permissions: ["root", "agents.manage"],
      extra: 1
    })
    expect(bad.status).toBe(400)
    expect(bad.json().error.problems).toEqual([
      { path: "extra", message: 'is unexpected, expected: "username" | "password" | "permissions"' },
      { path: "username", message: "a username is 1-64 characters: a-z, 0-9, . _ @ -, starting with a letter or digit" },
      { path: "password", message: "a password has at least 12 characters" },
      { path: "permissions.0", message: "must be one of agents.manage, providers.manage, metrics.read, transcripts.read" }
    ])
    const badName = await asManager("POST", "/api/admin/users", { username: "Not Valid", password: PASSWORD })
    expect(badName.json().error.problems).toEqual([
      { path: "username", message: "a username is 1-64 characters: a-z, 0-9, . _ @ -, starting with a letter or digit" }
    ])
    const short = await asManager("POST", "/api/admin/users", { username: "cy", password: "short" })
    expect(short.json().error.problems).toEqual([{ path: "password", message: "a password has at least 12 characters" }])
    expect((await asManager("POST", "/api/admin/users", { username: "cy" })).json().error.problems).toEqual([
      { path: "password", message: "is missing" }
    ])
    const taken = await asManager("POST", "/api/admin/users", { username: "reader", password: PASSWORD })
    expect({ status: taken.status, error: taken.json().error }).toEqual({
      status: 409,
      error: { code: "user-exists", message: 'user "reader" already exists' }
    })
    expect((await asManager("PUT", "/api/admin/users/nobody/permissions", { permissions: [] })).status).toBe(404)
    expect((await asManager("PUT", "/api/admin/users/reader/permissions", { permissions: "agents.manage" })).status).toBe(400)
    expect((await asManager("POST", "/api/admin/users/nobody/password", { password: PASSWORD })).status).toBe(404)
    expect((await asManager("POST", "/api/admin/users/reader/password", { password: "short" })).json().error.problems).toEqual([
      { path: "password", message: "a password has at least 12 characters" }
    ])
    expect(api.errors.filter((e) => e.status >= 500)).toEqual([])
  })
})

describe("the last admin", () => {
  test("the only holder of both permissions cannot remove its own providers.manage, though another user holds it", async () => {
    await asManager("POST", "/api/admin/users", { username: "keyholder", password: PASSWORD, permissions: ["providers.manage"] })
    const message =
      "manager is the last enabled user with every admin permission (agents.manage and providers.manage); without one nobody can manage users: make someone else an admin first"
    const put = await asManager("PUT", "/api/admin/users/manager/permissions", { permissions: ["agents.manage"] })
    expect({ status: put.status, error: put.json().error }).toEqual({ status: 403, error: { code: "forbidden", message } })
    const removed = await asManager("DELETE", "/api/admin/users/manager/permissions/providers.manage")
    expect(removed.status).toBe(403)
    expect(removed.json().error.message).toBe(message)
    const session = await api.signIn("manager", PASSWORD)
    expect((await api.request("DELETE", "/api/admin/users/manager/permissions/providers.manage", { session })).status).toBe(403)
    // Still an admin: users can still be managed.
    expect((await asManager("GET", "/api/admin/users")).status).toBe(200)
  })
})

describe("your own password", () => {
  test("changed with the current one: 204, this session stays, your other sessions end", async () => {
    await asManager("POST", "/api/admin/users", { username: "dee", password: PASSWORD })
    const here = await api.signIn("dee", PASSWORD)
    const there = await api.signIn("dee", PASSWORD)
    const r = await api.request("POST", "/api/account/password", {
      session: here,
      json: { currentPassword: PASSWORD, newPassword: "dee's own new password" }
    })
    expect(r.status).toBe(204)
    expect((await api.request("GET", "/api/session", { session: here })).status).toBe(200)
    expect((await api.request("GET", "/api/session", { session: there })).status).toBe(401)
    await api.signIn("dee", "dee's own new password")
  })

  test("a wrong current password or a weak new one is a 400 naming the field; wrong ones are throttled per client", async () => {
    await asManager("POST", "/api/admin/users", { username: "eve", password: PASSWORD })
    const session = await api.signIn("eve", PASSWORD)
    const change = (currentPassword: string, newPassword = "a valid new password") =>
      api.request("POST", "/api/account/password", { session, json: { currentPassword, newPassword } })
    expect((await change("wrong password", "short")).json().error.problems).toEqual([
      { path: "newPassword", message: "a password has at least 12 characters" }
    ])
    expect((await change("wrong password")).json().error.problems).toEqual([
      { path: "currentPassword", message: "is not your current password" }
    ])
    const statuses: Array<number> = []
    for (let i = 0; i < 10; i++) statuses.push((await change(`wrong ${i}`)).status)
    expect(statuses).toEqual([...Array(9).fill(400), 429])
    expect((await change(PASSWORD)).status).toBe(429)
    expect(
      (await api.request("POST", "/api/account/password", { session, json: { currentPassword: PASSWORD } })).json().error.problems
    ).toEqual([{ path: "newPassword", message: "is missing" }])
  })
})
