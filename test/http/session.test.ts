/**
 * Portal sessions: sign-in, the `__Host-` cookie, CSRF token plus Origin / Sec-Fetch-Site checks on
 * every change made with a session, and sign-out.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { makeApp } from "../../src/http/app.ts"
import { listen } from "../../src/http/serve.ts"
import { createAgentFiles, ORIGIN, PASSWORD, type Session, storeFingerprint, useApi } from "../support/api.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const api = useApi()

const INVALID = { error: { code: "invalid-credentials", message: "unknown user or wrong password" } }

describe("sign-in", () => {
  test("a wrong password → 401 with the stable error body and no cookie", async () => {
    const r = await api.request("POST", "/api/session", { json: { username: "manager", password: "wrong password, long enough" } })
    expect(r.status).toBe(401)
    expect(r.json()).toEqual(INVALID)
    expect(r.headers.get("set-cookie")).toBeNull()
  })

  test("an unknown user → the same 401 body as a wrong password", async () => {
    const r = await api.request("POST", "/api/session", { json: { username: "nobody", password: PASSWORD } })
    expect(r.status).toBe(401)
    expect(r.json()).toEqual(INVALID)
  })

  test("a body without a password → 400 naming the field", async () => {
    const r = await api.request("POST", "/api/session", { json: { username: "manager" } })
    expect(r.status).toBe(400)
    expect(r.json().error.code).toBe("bad-request")
    expect(r.json().error.problems.map((p: { path: string }) => p.path)).toContain("password")
  })

  test("the right password → 200, the user with a CSRF token, and a __Host- cookie: Secure, HttpOnly, SameSite=Lax, Path=/, no Domain", async () => {
    const r = await api.request("POST", "/api/session", { json: { username: "manager", password: PASSWORD } })
    expect(r.status).toBe(200)
    const user = r.json().user
    expect(user.username).toBe("manager")
    expect(user.permissions).toEqual(["agents.manage", "providers.manage"])
    expect(user.csrfToken).toMatch(/^[A-Za-z0-9_-]{40,}$/)

    const cookie = r.headers.get("set-cookie") ?? ""
    const [pair = "", ...attributes] = cookie.split(";").map((s) => s.trim())
    expect(pair).toMatch(/^__Host-kintsugi-session=[A-Za-z0-9_-]{40,}$/)
    const names = attributes.map((a) => a.split("=")[0]?.toLowerCase())
    expect(names).toContain("secure")
    expect(names).toContain("httponly")
    expect(attributes).toContain("SameSite=Lax")
    expect(attributes).toContain("Path=/")
    expect(names).not.toContain("domain")
    // The session token is only in the cookie, never in the body.
    expect(r.text).not.toContain(pair.split("=")[1] ?? "(none)")
  })

  test("GET /api/session: the session's user and CSRF token; an API token has none", async () => {
    const session = await api.signIn("reader", PASSWORD)
    const viaSession = await api.request("GET", "/api/session", { session, csrf: false })
    expect(viaSession.status).toBe(200)
    expect(viaSession.json().user).toEqual({ username: "reader", permissions: [], csrfToken: session.csrfToken })
    const viaToken = await api.request("GET", "/api/session", { token: api.manager.token })
    expect(viaToken.json().user).toEqual({ username: "manager", permissions: ["agents.manage", "providers.manage"], csrfToken: null })
  })
})

describe("a change made with a session must come from our own pages", () => {
  let session: Session
  let other: Session
  beforeAll(async () => {
    session = await api.signIn("manager", PASSWORD)
    other = await api.signIn("manager", PASSWORD)
  })

  let n = 0
  /** POST /api/admin/agents with the session cookie and exactly the given extra headers. */
  const create = (headers: Record<string, string>) =>
    api.request("POST", "/api/admin/agents", { session, csrf: false, json: createAgentFiles(`csrf-agent-${++n}`), headers })
  const refused = async (headers: Record<string, string>, message: string) => {
    const before = await storeFingerprint(api)
    const r = await create(headers)
    expect(r.status).toBe(403)
    expect(r.json().error).toEqual({ code: "forbidden", message })
    expect(await storeFingerprint(api)).toBe(before)
  }

  test("no CSRF header (same origin) → 403, nothing saved", async () => {
    await refused({ origin: ORIGIN, "sec-fetch-site": "same-origin" }, "missing or wrong CSRF token")
  })

  test("a wrong CSRF token, or another session's → 403", async () => {
    await refused({ "x-csrf-token": "x".repeat(43), origin: ORIGIN }, "missing or wrong CSRF token")
    await refused({ "x-csrf-token": other.csrfToken, origin: ORIGIN }, "missing or wrong CSRF token")
    await refused({ "x-csrf-token": "", origin: ORIGIN }, "missing or wrong CSRF token")
  })

  test("the right token from a foreign Origin → 403", async () => {
    await refused({ "x-csrf-token": session.csrfToken, origin: "https://evil.example" }, "the request's Origin is not this site")
    await refused({ "x-csrf-token": session.csrfToken, origin: "http://localhost.evil.example" }, "the request's Origin is not this site")
    await refused({ "x-csrf-token": session.csrfToken, origin: "null" }, "the request's Origin is not this site")
  })

  test("the right token with Sec-Fetch-Site: cross-site (or same-site) → 403", async () => {
    await refused({ "x-csrf-token": session.csrfToken, origin: ORIGIN, "sec-fetch-site": "cross-site" }, "cross-site requests are refused")
    await refused({ "x-csrf-token": session.csrfToken, "sec-fetch-site": "cross-site" }, "cross-site requests are refused")
    await refused({ "x-csrf-token": session.csrfToken, "sec-fetch-site": "same-site" }, "cross-site requests are refused")
  })

  test("a cross-site POST without a token → 403", async () => {
    await refused({ origin: "https://evil.example", "sec-fetch-site": "cross-site" }, "cross-site requests are refused")
  })

  test("the right token and same origin → 201; without Origin and fetch metadata (a non-browser client) too", async () => {
    expect((await create({ "x-csrf-token": session.csrfToken, origin: ORIGIN, "sec-fetch-site": "same-origin" })).status).toBe(201)
    expect((await create({ "x-csrf-token": session.csrfToken })).status).toBe(201)
    expect((await create({ "x-csrf-token": session.csrfToken, "sec-fetch-site": "none" })).status).toBe(201)
  })

  test("an API token needs no CSRF token, whatever the Origin", async () => {
    const r = await api.request("POST", "/api/admin/agents", {
      token: api.manager.token,
      json: createAgentFiles("token-agent"),
      headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" }
    })
    expect(r.status).toBe(201)
  })

  test("through a real server: the browser's own Origin passes, a foreign one does not", async () => {
    const app = makeApp({ runtime: api.runtime, log: () => {} })
    const server = listen(app, { hostname: "127.0.0.1", port: 0 })
    try {
      const base = `http://127.0.0.1:${server.port}`
      const post = (name: string, origin: string) =>
        fetch(`${base}/api/admin/agents`, {
          method: "POST",
          headers: { cookie: session.cookie, "x-csrf-token": session.csrfToken, origin, "content-type": "application/json" },
          body: JSON.stringify(createAgentFiles(name))
        })
      const own = await post("served-agent", base)
      expect(own.status).toBe(201)
      const foreign = await post("served-agent-2", "http://127.0.0.1:1")
      expect(foreign.status).toBe(403)
    } finally {
      await server.stop(true)
    }
  })
})

describe("sign-out and expiry", () => {
  test("DELETE /api/session clears the cookie and ends the session: the next GET → 401", async () => {
    const session = await api.signIn("reader", PASSWORD)
    expect((await api.request("GET", "/api/admin/agents", { session, csrf: false })).status).toBe(200)
    const out = await api.request("DELETE", "/api/session", { session })
    expect(out.status).toBe(204)
    const cleared = out.headers.get("set-cookie") ?? ""
    expect(cleared).toMatch(/^__Host-kintsugi-session=;/)
    expect(cleared).toContain("Max-Age=0")
    const after = await api.request("GET", "/api/admin/agents", { session, csrf: false })
    expect(after.status).toBe(401)
    expect(after.json().error.code).toBe("unauthenticated")
  })

  test("sign-out is a change: without the CSRF token it is refused and the session lives on", async () => {
    const session = await api.signIn("reader", PASSWORD)
    expect((await api.request("DELETE", "/api/session", { session, csrf: false })).status).toBe(403)
    expect((await api.request("GET", "/api/session", { session, csrf: false })).status).toBe(200)
  })

  test("signing out one session leaves the user's other sessions alone", async () => {
    const a = await api.signIn("manager", PASSWORD)
    const b = await api.signIn("manager", PASSWORD)
    expect((await api.request("DELETE", "/api/session", { session: a })).status).toBe(204)
    expect((await api.request("GET", "/api/session", { session: b, csrf: false })).status).toBe(200)
  })

  test("an expired session → 401", async () => {
    const session = await api.signIn("reader", PASSWORD)
    await api.sql(`UPDATE admin.session SET expires_at = now() - interval '1 second'`)
    expect((await api.request("GET", "/api/session", { session, csrf: false })).status).toBe(401)
  })
})
