/**
 * API tokens and user administration over HTTP: create (session only, shown once), list (never the
 * value or hash), revoke and expire (401 from the next request), disable users and remove permissions
 * (401 / 403 from the next request), and the lock-out guards.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { PASSWORD, useApi } from "../support/api.ts"

setDefaultTimeout(30_000)

const api = useApi()
const AGENTS = "/api/admin/agents"

describe("your own API tokens", () => {
  test("a session creates a token shown once; the list never shows a value or hash; revoking gives 401 at once", async () => {
    await api.createUser("tok-owner", ["agents.manage"])
    const session = await api.signIn("tok-owner", PASSWORD)
    const made = await api.request("POST", "/api/tokens", { session, json: { name: "laptop", expiresInDays: 30 } })
    expect(made.status).toBe(201)
    const { token, secret } = made.json<{
      token: { id: string; name: string; status: string; expiresAt: string; createdAt: string }
      secret: string
    }>()
    expect(secret).toStartWith("kt_")
    expect(token.name).toBe("laptop")
    expect(token.status).toBe("active")
    expect(Math.round((Date.parse(token.expiresAt) - Date.parse(token.createdAt)) / 86_400_000)).toBe(30)
    expect(JSON.stringify(made.json().token)).not.toContain(secret)

    expect((await api.request("GET", AGENTS, { token: secret })).status).toBe(200)
    const list = await api.request("GET", "/api/tokens", { token: secret })
    const [hash] = await api.sql<{ tokenHash: string }>(`SELECT token_hash FROM admin.api_token WHERE id = '${token.id}'`)
    expect(list.text).not.toContain(secret)
    expect(list.text).not.toContain(hash!.tokenHash)
    const listed = list.json<{ tokens: Array<Record<string, unknown>> }>().tokens
    expect(listed.map((t) => t["name"])).toEqual(["laptop", "tok-owner-test"])
    expect(Object.keys(listed[0]!).sort()).toEqual(["createdAt", "expiresAt", "id", "lastUsedAt", "name", "revokedAt", "status"])
    expect(listed[0]!["lastUsedAt"]).not.toBeNull()

    expect((await api.request("DELETE", `/api/tokens/${token.id}`, { token: secret })).status).toBe(204)
    const after = await api.request("GET", AGENTS, { token: secret })
    expect(after.status).toBe(401)
    expect(after.json().error.code).toBe("unauthenticated")
    const states = (await api.request("GET", "/api/tokens", { session })).json<{ tokens: Array<{ name: string; status: string }> }>().tokens
    expect(states.map((t) => [t.name, t.status])).toEqual([
      ["laptop", "revoked"],
      ["tok-owner-test", "active"]
    ])
  })

  test("an expired token gets 401 on its next request", async () => {
    const user = await api.createUser("tok-expiring", [])
    expect((await api.request("GET", AGENTS, { token: user.token })).status).toBe(200)
    await api.sql(`UPDATE admin.api_token SET expires_at = now() - interval '1 second' WHERE name = 'tok-expiring-test'`)
    expect((await api.request("GET", AGENTS, { token: user.token })).status).toBe(401)
    const session = await api.signIn("tok-expiring", PASSWORD)
    const listed = (await api.request("GET", "/api/tokens", { session })).json<{ tokens: Array<{ status: string }> }>().tokens
    expect(listed.map((t) => t.status)).toEqual(["expired"])
  })

  test("bad input is a 400 naming every problem; no never, no more than a year", async () => {
    const session = await api.signIn("reader", PASSWORD)
    const r = await api.request("POST", "/api/tokens", { session, json: { name: "", expiresInDays: 366 } })
    expect(r.status).toBe(400)
    expect(r.json().error.problems).toEqual([
      { path: "name", message: "must not be empty" },
      { path: "expiresInDays", message: "must be between 1 and 365" }
    ])
    for (const expiresInDays of [null, 0, 1.5, "never"]) {
      expect((await api.request("POST", "/api/tokens", { session, json: { name: "x", expiresInDays } })).status).toBe(400)
    }
    expect((await api.request("POST", "/api/tokens", { session, json: { name: "a\u0007b" } })).json().error.problems).toEqual([
      { path: "name", message: "contains the control character U+0007, which cannot be stored" }
    ])
  })

  test("someone else's token id, or no uuid at all, is a 404 and revokes nothing", async () => {
    const other = await api.createUser("tok-other", [])
    const [row] = await api.sql<{ id: string }>(`SELECT id FROM admin.api_token WHERE name = 'tok-other-test'`)
    expect((await api.request("DELETE", `/api/tokens/${row!.id}`, { token: api.reader.token })).status).toBe(404)
    expect((await api.request("DELETE", "/api/tokens/not-a-uuid", { token: api.reader.token })).status).toBe(404)
    expect((await api.request("GET", AGENTS, { token: other.token })).status).toBe(200)
  })
})

describe("user administration (every permission)", () => {
  test("a disabled user's session and token get 401 at once and sign-in is refused; enabling restores them", async () => {
    const user = await api.createUser("adm-target", ["agents.manage"])
    const session = await api.signIn("adm-target", PASSWORD)
    const r = await api.request("PATCH", "/api/admin/users/adm-target", { token: api.manager.token, json: { disabled: true } })
    expect(r.status).toBe(200)
    expect(r.json().user).toMatchObject({ username: "adm-target", disabled: true, permissions: ["agents.manage"] })
    expect((await api.request("GET", AGENTS, { token: user.token })).status).toBe(401)
    expect((await api.request("GET", AGENTS, { session })).status).toBe(401)
    const signIn = await api.request("POST", "/api/session", { json: { username: "adm-target", password: PASSWORD } })
    expect(signIn.status).toBe(401)
    expect(signIn.json().error.message).toBe("this user is disabled; ask an administrator")
    const users = (await api.request("GET", "/api/admin/users", { token: api.manager.token })).json<{
      users: Array<{ username: string; disabled: boolean }>
    }>().users
    expect(users.find((u) => u.username === "adm-target")?.disabled).toBe(true)

    expect(
      (await api.request("PATCH", "/api/admin/users/adm-target", { token: api.manager.token, json: { disabled: false } })).status
    ).toBe(200)
    expect((await api.request("GET", AGENTS, { token: user.token })).status).toBe(200)
    await api.signIn("adm-target", PASSWORD)
  })

  test("a removed permission gives 403 on the next request", async () => {
    const user = await api.createUser("adm-perm", ["agents.manage"])
    const session = await api.signIn("adm-perm", PASSWORD)
    const body = { name: "adm-perm-project", id: "adm-perm-project" }
    expect((await api.request("POST", "/api/projects", { token: user.token, json: body })).status).toBe(201)
    expect((await api.request("DELETE", "/api/admin/users/adm-perm/permissions/agents.manage", { token: api.manager.token })).status).toBe(
      204
    )
    const next = await api.request("POST", "/api/projects", { token: user.token, json: { ...body, id: "adm-perm-2" } })
    expect(next.status).toBe(403)
    expect((await api.request("POST", "/api/projects", { session, json: { ...body, id: "adm-perm-3" } })).status).toBe(403)
    expect(
      (await api.request("DELETE", "/api/admin/users/adm-perm/permissions/superuser", { token: api.manager.token })).json().error.message
    ).toBe('no permission "superuser" (there are agents.manage, providers.manage, metrics.read, transcripts.read)')
  })

  test("nobody disables themselves or removes the last enabled holder of a permission", async () => {
    const self = await api.request("PATCH", "/api/admin/users/manager", { token: api.manager.token, json: { disabled: true } })
    expect(self.status).toBe(403)
    expect(self.json().error.message).toBe("you cannot disable yourself")
    // The manager is the only enabled holder of providers.manage in this file.
    const last = await api.request("DELETE", "/api/admin/users/manager/permissions/providers.manage", { token: api.manager.token })
    expect(last.status).toBe(403)
    expect(last.json().error.message).toBe("manager is the last enabled user with providers.manage; grant it to someone else first")
    expect((await api.request("GET", "/api/admin/users", { token: api.manager.token })).status).toBe(200)
    expect(
      (await api.request("PATCH", "/api/admin/users/nobody-here", { token: api.manager.token, json: { disabled: true } })).status
    ).toBe(404)
  })

  test("an admin lists and revokes another user's tokens, never seeing their values", async () => {
    const user = await api.createUser("adm-tokens", [])
    const list = await api.request("GET", "/api/admin/users/adm-tokens/tokens", { token: api.manager.token })
    expect(list.text).not.toContain(user.token)
    const [t] = list.json<{ tokens: Array<{ id: string }> }>().tokens
    expect((await api.request("DELETE", `/api/admin/users/adm-tokens/tokens/${t!.id}`, { token: api.manager.token })).status).toBe(204)
    expect((await api.request("GET", AGENTS, { token: user.token })).status).toBe(401)
    expect((await api.request("GET", "/api/admin/users/nobody-here/tokens", { token: api.manager.token })).status).toBe(404)
  })
})
