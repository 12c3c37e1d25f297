/**
 * The portal's API tokens page and users page through app.handle: a token shown once and never
 * again, refused input at its fields, revoking, no token minted with a token, and user administration.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { PASSWORD, useApi } from "../support/api.ts"

setDefaultTimeout(30_000)

const api = useApi()
const form = (fields: Record<string, string>) => new URLSearchParams(fields)

describe("/account: your API tokens", () => {
  test("a token is shown once after creating it, works at once, and is never shown again", async () => {
    await api.createUser("acct-user", [])
    const session = await api.signIn("acct-user", PASSWORD)
    const page = await api.request("GET", "/account", { session })
    expect(page.status).toBe(200)
    expect(page.text).toContain("acct-user-test")

    const made = await api.request("POST", "/account/tokens", { session, form: form({ name: "portal-made", expiresInDays: "30" }) })
    expect(made.status).toBe(200)
    expect(made.headers.get("cache-control")).toBe("no-store")
    const secret = /value="(kt_[A-Za-z0-9_-]+)"/.exec(made.text)?.[1]
    expect(secret).toBeDefined()
    expect((await api.request("GET", "/api/admin/agents", { token: secret! })).status).toBe(200)
    const again = await api.request("GET", "/account", { session })
    expect(again.text).toContain("portal-made")
    expect(again.text).not.toContain(secret!)

    const [row] = await api.sql<{ id: string }>(`SELECT id FROM admin.api_token WHERE name = 'portal-made'`)
    const revoked = await api.request("POST", `/account/tokens/${row!.id}/revoke`, { session })
    expect(revoked.status).toBe(303)
    expect(revoked.headers.get("location")).toBe("/account?revoked=portal-made")
    expect((await api.request("GET", "/api/admin/agents", { token: secret! })).status).toBe(401)
    expect((await api.request("GET", "/account?revoked=portal-made", { session })).text).toContain("Revoked the token portal-made.")
  })

  test("bad input is shown at its fields with a 400; a Bearer token cannot mint a token here either", async () => {
    const session = await api.signIn("reader", PASSWORD)
    const bad = await api.request("POST", "/account/tokens", { session, form: form({ name: "", expiresInDays: "400" }) })
    expect(bad.status).toBe(400)
    expect(bad.text).toContain("fill this in")
    expect(bad.text).toContain("must be between 1 and 365")
    expect(bad.text).not.toMatch(/value="kt_/)
    const viaToken = await api.request("POST", "/account/tokens", {
      token: api.reader.token,
      form: form({ name: "x" }),
      headers: { "sec-fetch-site": "same-origin" }
    })
    expect(viaToken.status).toBe(403)
    expect(viaToken.text).toContain("an API token cannot create API tokens")
  })
})

describe("/users: user administration", () => {
  test("only holders of every permission see it; disabling stops a user's token at once; no self-disable, no last holder", async () => {
    const target = await api.createUser("acct-target", ["agents.manage"])
    const admin = await api.signIn("manager", PASSWORD)
    const reader = await api.signIn("reader", PASSWORD)
    expect((await api.request("GET", "/users", { session: reader })).status).toBe(403)
    const page = await api.request("GET", "/users", { session: admin })
    expect(page.status).toBe(200)
    expect(page.text).toContain("acct-target")

    const disabled = await api.request("POST", "/users/acct-target/disabled", { session: admin, form: form({ disabled: "true" }) })
    expect(disabled.status).toBe(303)
    expect((await api.request("GET", "/api/admin/agents", { token: target.token })).status).toBe(401)
    const signIn = await api.request("POST", "/sign-in", {
      form: form({ username: "acct-target", password: PASSWORD }),
      headers: { "sec-fetch-site": "same-origin" }
    })
    expect(signIn.status).toBe(401)
    expect(signIn.text).toContain("this user is disabled")
    expect((await api.request("POST", "/users/acct-target/disabled", { session: admin, form: form({ disabled: "false" }) })).status).toBe(
      303
    )
    expect((await api.request("GET", "/api/admin/agents", { token: target.token })).status).toBe(200)

    const self = await api.request("POST", "/users/manager/disabled", { session: admin, form: form({ disabled: "true" }) })
    expect(self.status).toBe(403)
    expect(self.text).toContain("you cannot disable yourself")
    const last = await api.request("POST", "/users/manager/permissions/providers.manage/remove", { session: admin })
    expect(last.status).toBe(403)
    expect(last.text).toContain("manager is the last enabled user with providers.manage")
    const removed = await api.request("POST", "/users/acct-target/permissions/agents.manage/remove", { session: admin })
    expect(removed.status).toBe(303)
    expect((await api.request("POST", "/api/projects", { token: target.token, json: { id: "acct-p", name: "P" } })).status).toBe(403)
  })
})
