/**
 * The HTTP edge: JSON depth bounds, NUL / control characters / unpaired surrogates and invalid UTF-8
 * refused with 400 (body, form, path and query) and nothing stored; `nosniff` on every kind of
 * response; the Host allowlist; sign-in refused from other sites (login CSRF).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { makeApp } from "../../src/http/app.ts"
import { allowedHostsFromEnv, hostAllowed, parseHostRule } from "../../src/http/edge.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { createAgent, ORIGIN, PASSWORD, storeFingerprint, useApi } from "../support/api.ts"

setDefaultTimeout(30_000)

const api = useApi()

const jobBody = (metadata: Record<string, unknown>) => ({
  agent: "edge-agent",
  task: "Survey it.",
  workspace: { root: "/nonexistent/ws", readOnly: ["/nonexistent/ws/src"], outDir: "/nonexistent/ws/out" },
  limits: { timeoutSec: 60 },
  metadata
})
/** `depth` nested arrays around a string. */
const nested = (depth: number): unknown => {
  let v: unknown = "bottom"
  for (let i = 0; i < depth; i++) v = [v]
  return v
}
const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  api.request("POST", path, { token: api.manager.token, body, headers: { "content-type": "application/json", ...headers } })

/** The request is a 400 with exactly these problems, and nothing in the store changed. */
const refusedWith = async (
  send: () => Promise<{ status: number; json: () => any }>,
  problems: ReadonlyArray<{ path: string; message: unknown }>
) => {
  const before = await storeFingerprint(api)
  const r = await send()
  expect({ status: r.status, problems: r.json().error.problems }).toEqual({ status: 400, problems })
  expect(await storeFingerprint(api)).toBe(before)
}

describe("JSON bodies: depth, characters, encoding", () => {
  test("metadata nested 65 deep → 400 naming the bound; 5,000 deep too, without parsing it", async () => {
    const deeper = [{ path: "(body)", message: "nests arrays and objects deeper than 64 levels" }]
    await refusedWith(() => post("/api/jobs", JSON.stringify(jobBody({ deep: nested(64) }))), deeper)
    await refusedWith(() => post("/api/jobs", JSON.stringify(jobBody({ deep: nested(5000) }))), deeper)
    // Brackets inside strings are text, not nesting.
    await refusedWith(
      () => post("/api/admin/agents", JSON.stringify({ files: "[".repeat(500) })),
      [{ path: "files", message: expect.any(String) }]
    )
  })

  test("a NUL in a stored string → 400 naming the field (PostgreSQL cannot store it), not 500", async () => {
    const nul = "contains the control character U+0000, which cannot be stored"
    await refusedWith(() => post("/api/jobs", JSON.stringify(jobBody({ note: "a\u0000b" }))), [{ path: "metadata.note", message: nul }])
    await refusedWith(
      () => post("/api/jobs", JSON.stringify(jobBody({ list: ["ok", { deep: "\u0000" }] }))),
      [{ path: "metadata.list.1.deep", message: nul }]
    )
    await refusedWith(() => post("/api/jobs", JSON.stringify({ ...jobBody({}), task: "x\u0000" })), [{ path: "task", message: nul }])
    await refusedWith(
      () => post("/api/jobs", JSON.stringify(jobBody({ "k\u0000": 1 }))),
      [{ path: 'metadata."k\\u0000"', message: `the key ${nul}` }]
    )
  })

  test("other control characters and unpaired surrogates → 400; tab, newline and carriage return are text", async () => {
    await refusedWith(
      () => post("/api/jobs", JSON.stringify(jobBody({ bell: "\u0007", esc: "\u001b[31m" }))),
      [
        { path: "metadata.bell", message: "contains the control character U+0007, which cannot be stored" },
        { path: "metadata.esc", message: "contains the control character U+001B, which cannot be stored" }
      ]
    )
    await refusedWith(
      () => post("/api/jobs", '{"agent":"a","task":"\\ud800 lone","workspace":{},"limits":{}}'),
      [{ path: "task", message: "contains an unpaired surrogate (not Unicode text), which cannot be stored" }]
    )
    const fine = await post("/api/admin/agent-skills", JSON.stringify({ name: "edge-tabs", content: "a\tb\r\nc 😀\n" }))
    expect(fine.status).toBe(201)
  })

  test("invalid UTF-8 in a JSON body → 400, never repaired into U+FFFD and saved", async () => {
    const prefix = new TextEncoder().encode('{"name":"edge-latin1","content":"caf')
    const bytes = new Uint8Array([...prefix, 0xe9, ...new TextEncoder().encode('"}')])
    await refusedWith(
      () =>
        api.request("POST", "/api/admin/agent-skills", {
          token: api.manager.token,
          body: bytes,
          headers: { "content-type": "application/json" }
        }),
      [{ path: "(body)", message: "is not valid UTF-8" }]
    )
    expect((await api.sql(`SELECT 1 FROM admin.agent_skill WHERE name = 'edge-latin1'`)).length).toBe(0)
  })

  test("sign-in with a NUL in the username → 400 naming it, not 500", async () => {
    const r = await api.request("POST", "/api/session", { json: { username: "manager\u0000", password: PASSWORD } })
    expect(r.status).toBe(400)
    expect(r.json().error.problems).toEqual([
      { path: "username", message: "contains the control character U+0000, which cannot be stored" }
    ])
  })
})

describe("forms, paths and query strings", () => {
  test("a portal form with invalid UTF-8 or a NUL → 400 naming the field, nothing saved", async () => {
    const session = await api.signIn("manager", PASSWORD)
    const form = (content: string) => `name=edge-form&description=&content=${content}`
    const send = (content: string) =>
      api.request("POST", "/agent-skills", {
        session,
        body: `${form(content)}&_csrf=${session.csrfToken}`,
        headers: { "content-type": "application/x-www-form-urlencoded" }
      })
    for (const [content, message] of [
      ["caf%E9", "is not valid UTF-8 percent-encoding"],
      ["a%00b", "contains the control character U+0000, which cannot be stored"]
    ] as const) {
      const before = await storeFingerprint(api)
      const r = await send(content)
      expect({ content, status: r.status, named: r.text.includes("content") && r.text.includes(message) }).toEqual({
        content,
        status: 400,
        named: true
      })
      expect(await storeFingerprint(api)).toBe(before)
    }
    expect((await send("caf%C3%A9")).status).toBe(303)
  })

  test("portal sign-in with a NUL in the username → 400, not 500", async () => {
    const r = await api.request("POST", "/sign-in", {
      body: `username=manager%00&password=x`,
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    expect(r.status).toBe(400)
  })

  test("a NUL or bad percent-encoding in a path parameter or query → 400 before any SQL, not 500", async () => {
    const t = { token: api.reader.token }
    for (const path of ["/api/admin/agents/a%00b", "/api/admin/agents/a%ffb", "/api/jobs/%00", "/agent-skills/x%00"]) {
      const r = await api.request("GET", path, t)
      expect({ path, status: r.status }).toEqual({ path, status: 400 })
    }
    const q = await api.request("GET", "/api/jobs?agent=%00", t)
    expect({ status: q.status, problems: q.json().error.problems }).toEqual({
      status: 400,
      problems: [{ path: "query.agent", message: "contains the control character U+0000, which cannot be stored" }]
    })
    expect((await api.request("GET", "/api/jobs?agent=caf%C3%A9", t)).status).toBe(200)
    expect(api.logs.filter((l) => l.includes("request failed"))).toEqual([])
  })
})

describe("nosniff on every response", () => {
  test("health, JSON, errors, 404s, 421, the export ZIP, SSE, portal pages and static files", async () => {
    await createAgent(api, "edge-export")
    const job = await api.run(Effect.flatMap(JobStore, (s) => s.enqueue(jobBody({}), "manager")))
    const sse = await api.app.handle(
      new Request(`${ORIGIN}/api/jobs/${job.id}/events`, { headers: { host: "localhost", authorization: `Bearer ${api.reader.token}` } })
    )
    expect(sse.headers.get("content-type")).toStartWith("text/event-stream")
    await sse.body?.cancel()
    const signInPage = await api.request("GET", "/sign-in")
    const asset = /src="(\/static\/portal\.[0-9a-f]+\.js)"/.exec(signInPage.text)?.[1] ?? "(no script)"
    const responses: Record<string, Promise<{ headers: Headers; status: number }> | { headers: Headers; status: number }> = {
      healthz: api.request("GET", "/healthz"),
      json: api.request("GET", "/api/session", { token: api.reader.token }),
      unauthenticated: api.request("GET", "/api/admin/agents"),
      apiNotFound: api.request("GET", "/api/nothing", { token: api.reader.token }),
      pageNotFound: api.request("GET", "/nothing-here"),
      misdirected: api.request("GET", "/sign-in", { headers: { host: "evil.example" } }),
      exportZip: api.request("GET", "/api/admin/agents/edge-export/export", { token: api.reader.token }),
      sse,
      page: signInPage,
      staticFile: api.request("GET", asset),
      redirect: api.request("GET", "/")
    }
    const seen: Record<string, string | null> = {}
    for (const [name, response] of Object.entries(responses)) seen[name] = (await response).headers.get("x-content-type-options")
    expect(seen).toEqual(Object.fromEntries(Object.keys(responses).map((k) => [k, "nosniff"])))
  })
})

describe("the Host allowlist (DNS rebinding)", () => {
  test("Host: evil.example → 421 on sign-in (API and portal) and portal pages, before any route runs", async () => {
    const evil = { host: "evil.example" }
    const signIn = await api.request("POST", "/api/session", { json: { username: "manager", password: PASSWORD }, headers: evil })
    expect(signIn.status).toBe(421)
    expect(signIn.json().error.code).toBe("misdirected-request")
    expect(signIn.headers.get("set-cookie")).toBeNull()
    expect(
      (
        await api.request("POST", "/sign-in", {
          body: `username=manager&password=${encodeURIComponent(PASSWORD)}`,
          headers: { ...evil, "content-type": "application/x-www-form-urlencoded" }
        })
      ).status
    ).toBe(421)
    expect((await api.request("GET", "/agents", { token: api.reader.token, headers: evil })).status).toBe(421)
    expect(
      (await api.request("GET", "/api/admin/agents", { token: api.reader.token, headers: { host: "localhost.evil.example:80" } })).status
    ).toBe(421)
  })

  test("our own names pass with any port; /healthz answers any Host (probes use the pod's address)", async () => {
    for (const host of ["localhost", "localhost:7777", "127.0.0.1:1234", "[::1]:7777", "LOCALHOST"]) {
      expect({ host, status: (await api.request("GET", "/api/session", { token: api.reader.token, headers: { host } })).status }).toEqual({
        host,
        status: 200
      })
    }
    expect((await api.request("GET", "/healthz", { headers: { host: "10.1.2.3:7777" } })).status).toBe(200)
  })

  test("KINTSUGI_ALLOWED_HOSTS replaces the default list; an entry with a port allows only that port", async () => {
    expect(allowedHostsFromEnv({})).toEqual(["localhost", "127.0.0.1", "[::1]"])
    expect(allowedHostsFromEnv({ HOST: "0.0.0.0" })).toEqual(["localhost", "127.0.0.1", "[::1]", "0.0.0.0"])
    expect(allowedHostsFromEnv({ KINTSUGI_ALLOWED_HOSTS: "kintsugi.example.com, 10.0.0.5:7777", HOST: "x" })).toEqual([
      "kintsugi.example.com",
      "10.0.0.5:7777"
    ])
    const rules = ["kintsugi.example.com", "10.0.0.5:7777", "::1"].map((h) => parseHostRule(h)!)
    expect(["kintsugi.example.com:443", "kintsugi.example.com.", "10.0.0.5:7777", "[::1]:80"].map((h) => hostAllowed(rules, h))).toEqual([
      true,
      true,
      true,
      true
    ])
    expect(["10.0.0.5:8080", "10.0.0.5", "evil.example", "kintsugi.example.com@evil", ""].map((h) => hostAllowed(rules, h))).toEqual([
      false,
      false,
      false,
      false,
      false
    ])

    const app = makeApp({ runtime: api.runtime, log: () => {}, allowedHosts: ["kintsugi.example.com"] })
    const ask = (host: string) =>
      app.handle(new Request("http://kintsugi.example.com/api/session", { headers: { host, authorization: `Bearer ${api.reader.token}` } }))
    expect((await ask("kintsugi.example.com:8443")).status).toBe(200)
    expect((await ask("localhost")).status).toBe(421)
  })
})

describe("sign-in from another site is refused (login CSRF)", () => {
  const attempt = (headers: Record<string, string>) =>
    api.request("POST", "/api/session", { json: { username: "manager", password: PASSWORD }, headers })

  test("POST /api/session cross-site or with a foreign Origin → 403, no cookie", async () => {
    const cases: ReadonlyArray<Record<string, string>> = [
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      { origin: "https://evil.example" },
      { origin: "null" }
    ]
    for (const headers of cases) {
      const r = await attempt(headers)
      expect({ headers, status: r.status, cookie: r.headers.get("set-cookie") }).toEqual({ headers, status: 403, cookie: null })
    }
  })

  test("programs without Origin or fetch metadata, and our own pages, sign in", async () => {
    expect((await attempt({})).status).toBe(200)
    expect((await attempt({ origin: ORIGIN, "sec-fetch-site": "same-origin" })).status).toBe(200)
  })

  test("the portal's sign-in form: cross-site → 403", async () => {
    const r = await api.request("POST", "/sign-in", {
      body: `username=manager&password=${encodeURIComponent(PASSWORD)}`,
      headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "cross-site" }
    })
    expect(r.status).toBe(403)
    expect(r.headers.get("set-cookie")).toBeNull()
  })
})
