/**
 * The portal's user administration and password pages through app.handle: create a user (refused
 * input at its fields), set permissions with checkboxes (the only admin cannot drop its own), reset a
 * password, and change your own (the current one checked, the new one twice, this session kept).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { PASSWORD, useApi } from "../support/api.ts"

setDefaultTimeout(30_000)

const api = useApi()
const form = (fields: Record<string, string | ReadonlyArray<string>>) => {
  const f = new URLSearchParams()
  for (const [k, v] of Object.entries(fields)) for (const one of typeof v === "string" ? [v] : v) f.append(k, one)
  return f
}

describe("/users: user administration", () => {
  test("an admin creates a user with permissions; bad input is shown at its fields", async () => {
    const admin = await api.signIn("manager", PASSWORD)
    const list = await api.request("GET", "/users", { session: admin })
    expect(list.text).toContain("New user")
    const made = await api.request("POST", "/users", {
      session: admin,
      form: form({ username: "portal-ann", password: PASSWORD, permissions: ["", "agents.manage"] })
    })
    expect(made.status).toBe(303)
    expect(made.headers.get("location")).toBe("/users/portal-ann?added=portal-ann")
    const page = await api.request("GET", "/users/portal-ann?added=portal-ann", { session: admin })
    expect(page.text).toContain("Added portal-ann.")
    expect(page.text).toMatch(/value="agents.manage" checked/)
    await api.signIn("portal-ann", PASSWORD)

    const bad = await api.request("POST", "/users", {
      session: admin,
      form: form({ username: "Bad Name", password: "short", permissions: "root" })
    })
    expect(bad.status).toBe(400)
    expect(bad.text).toContain("must be one of agents.manage, providers.manage, metrics.read, transcripts.read")
    expect(bad.text).toContain("a username is 1-64 characters")
    expect(bad.text).toContain("a password has at least 12 characters")
    expect(bad.text).toContain('value="Bad Name"')
    const short = await api.request("POST", "/users", { session: admin, form: form({ username: "portal-bo", password: "short" }) })
    expect(short.status).toBe(400)
    expect(short.text).toContain("a password has at least 12 characters")
    const taken = await api.request("POST", "/users", { session: admin, form: form({ username: "portal-ann", password: PASSWORD }) })
    expect(taken.status).toBe(409)
    expect(taken.text).toContain("user &quot;portal-ann&quot; already exists")
  })

  test("permissions are set with checkboxes; the only admin cannot drop one of its own", async () => {
    const admin = await api.signIn("manager", PASSWORD)
    const set = await api.request("POST", "/users/portal-ann/permissions", {
      session: admin,
      form: form({ permissions: ["", "agents.manage", "providers.manage"] })
    })
    expect(set.status).toBe(303)
    expect(set.headers.get("location")).toStartWith("/users/portal-ann?updated=")
    const cleared = await api.request("POST", "/users/portal-ann/permissions", { session: admin, form: form({ permissions: "" }) })
    expect(cleared.status).toBe(303)
    expect(
      (await api.request("GET", "/api/admin/users", { token: api.manager.token }))
        .json()
        .users.find((u: { username: string }) => u.username === "portal-ann").permissions
    ).toEqual([])
    const own = await api.request("POST", "/users/manager/permissions", {
      session: admin,
      form: form({ permissions: ["", "agents.manage"] })
    })
    expect(own.status).toBe(403)
    expect(own.text).toContain("manager is the last enabled user with")
    expect((await api.request("GET", "/users/nobody", { session: admin })).status).toBe(404)
  })

  test("a reset sets the password and ends the user's sessions", async () => {
    const admin = await api.signIn("manager", PASSWORD)
    const theirs = await api.signIn("portal-ann", PASSWORD)
    const reset = await api.request("POST", "/users/portal-ann/password", {
      session: admin,
      form: form({ password: "portal reset password" })
    })
    expect(reset.status).toBe(303)
    expect((await api.request("GET", "/account", { session: theirs })).status).toBe(303)
    await api.signIn("portal-ann", "portal reset password")
    const short = await api.request("POST", "/users/portal-ann/password", { session: admin, form: form({ password: "short" }) })
    expect(short.status).toBe(400)
    expect(short.text).toContain("a password has at least 12 characters")
  })
})

describe("/account/password: your own password", () => {
  test("the new one twice and the current one: refusals at their fields; then changed, this session kept", async () => {
    await api.createUser("portal-cy", [])
    const here = await api.signIn("portal-cy", PASSWORD)
    const there = await api.signIn("portal-cy", PASSWORD)
    expect((await api.request("GET", "/account/password", { session: here })).text).toContain('autocomplete="current-password"')
    const change = (fields: Record<string, string>) => api.request("POST", "/account/password", { session: here, form: form(fields) })
    const mismatch = await change({ currentPassword: PASSWORD, newPassword: "a new long password", confirmPassword: "another one" })
    expect(mismatch.status).toBe(400)
    expect(mismatch.text).toContain("is not the same as the new password")
    const wrong = await change({
      currentPassword: "not it at all",
      newPassword: "a new long password",
      confirmPassword: "a new long password"
    })
    expect(wrong.status).toBe(400)
    expect(wrong.text).toContain("is not your current password")
    const changed = await change({ currentPassword: PASSWORD, newPassword: "a new long password", confirmPassword: "a new long password" })
    expect(changed.status).toBe(303)
    expect(changed.headers.get("location")).toStartWith("/account?updated=")
    expect((await api.request("GET", "/account", { session: here })).status).toBe(200)
    expect((await api.request("GET", "/account", { session: there })).status).toBe(303)
    await api.signIn("portal-cy", "a new long password")
  })
})
