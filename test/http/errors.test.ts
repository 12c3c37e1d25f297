/**
 * The error shape: every error code the API has, each as `{ error: { code, message, problems?, agents? } }`,
 * and no stack trace or host path in any error body — a defect included. (The harness also checks
 * every error body of every test file as it passes.)
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { createAgent, createAgentFiles, createSkill, errorBodyProblem, LEAK_MARKERS, PASSWORD, useApi } from "../support/api.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const api = useApi()

/** Every code of the Agent Builder's errors (`ApiError` in src/http/respond.ts) with its status. */
const CODES: Record<string, number> = {
  "bad-request": 400,
  "agent-invalid": 400,
  "skill-invalid": 400,
  "import-rejected": 400,
  unauthenticated: 401,
  "invalid-credentials": 401,
  forbidden: 403,
  "agent-not-found": 404,
  "agent-version-not-found": 404,
  "skill-not-found": 404,
  "not-found": 404,
  "agent-exists": 409,
  "builtin-read-only": 409,
  "skill-exists": 409,
  "skill-in-use": 409,
  "payload-too-large": 413,
  "agent-unavailable": 422,
  "too-many-requests": 429
}

const m = (method: string, path: string, json?: unknown) => api.request(method, path, { token: api.manager.token, json })

describe("every error has the stable shape", () => {
  test("one request per Agent Builder error code: status, code, and only the documented keys", async () => {
    await createAgent(api, "err-agent")
    await createSkill(api, "err-skill")
    await createAgent(api, "err-user", { skills: ["err-skill"] })
    await createAgent(api, "err-member", { audience: "member" })
    const seen = new Map<string, Record<string, unknown>>()
    const expectCode = async (code: string, response: Promise<{ status: number; json: () => any }>) => {
      const r = await response
      expect({ code, status: r.status }).toEqual({ code, status: CODES[code]! })
      const error = r.json().error
      expect(error.code).toBe(code)
      seen.set(code, error)
    }
    await expectCode("bad-request", m("PATCH", "/api/admin/agents/err-agent", { enabled: 1 }))
    await expectCode("agent-invalid", m("POST", "/api/admin/agents", createAgentFiles("err-bad", { tools: ["nope"] })))
    await expectCode("skill-invalid", m("POST", "/api/admin/agent-skills", { name: "x", content: "" }))
    await expectCode("import-rejected", m("POST", "/api/admin/agents/import", { zip: Buffer.from("PK not really").toString("base64") }))
    await expectCode("unauthenticated", api.request("GET", "/api/admin/agents"))
    await expectCode(
      "invalid-credentials",
      api.request("POST", "/api/session", { json: { username: "manager", password: `${PASSWORD}!` } })
    )
    await expectCode("forbidden", api.request("DELETE", "/api/admin/agents/err-agent", { token: api.reader.token }))
    await expectCode("agent-not-found", m("GET", "/api/admin/agents/err-missing"))
    await expectCode("agent-version-not-found", m("GET", "/api/admin/agents/err-agent/versions/42"))
    await expectCode("skill-not-found", m("GET", "/api/admin/agent-skills/err-missing"))
    await expectCode("not-found", m("GET", "/api/admin/nothing-here"))
    await expectCode("agent-exists", m("POST", "/api/admin/agents", createAgentFiles("err-agent")))
    await expectCode("builtin-read-only", m("DELETE", "/api/admin/agents/codebase-inventory"))
    await expectCode("skill-exists", m("POST", "/api/admin/agent-skills", { name: "err-skill", content: "x" }))
    await expectCode("skill-in-use", m("DELETE", "/api/admin/agent-skills/err-skill"))
    await expectCode("agent-unavailable", m("GET", "/api/admin/agents/err-member/definition"))
    await expectCode("payload-too-large", api.request("POST", "/api/session", { json: { username: "x".repeat(70_000), password: "y" } }))
    // The 11th wrong password in a row for one username.
    for (let i = 0; i < 10; i++) await api.request("POST", "/api/session", { json: { username: "err-throttled", password: `wrong ${i}` } })
    await expectCode(
      "too-many-requests",
      api.request("POST", "/api/session", { json: { username: "err-throttled", password: "wrong again" } })
    )
    expect([...seen.keys()].sort()).toEqual(Object.keys(CODES).sort())

    // Which optional keys each kind carries.
    for (const code of ["bad-request", "agent-invalid", "skill-invalid", "import-rejected", "agent-unavailable"]) {
      expect(Object.keys(seen.get(code)!).sort()).toEqual(["code", "message", "problems"])
    }
    expect(Object.keys(seen.get("skill-in-use")!).sort()).toEqual(["agents", "code", "message"])
    expect(seen.get("skill-in-use")!["agents"]).toEqual(["err-user"])
    for (const code of [
      "unauthenticated",
      "invalid-credentials",
      "forbidden",
      "agent-not-found",
      "skill-not-found",
      "not-found",
      "agent-exists",
      "builtin-read-only",
      "skill-exists",
      "payload-too-large",
      "too-many-requests"
    ]) {
      expect(Object.keys(seen.get(code)!).sort()).toEqual(["code", "message"])
    }
  })

  test("an unknown API path or method is a JSON 404 for every method, not a portal page", async () => {
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
      const r = await api.request(method, "/api/admin/no-such/endpoint", { token: api.reader.token })
      expect({ method, status: r.status, type: r.headers.get("content-type") }).toEqual({
        method,
        status: 404,
        type: "application/json; charset=utf-8"
      })
      expect(r.json()).toEqual({ error: { code: "not-found", message: "no such endpoint" } })
    }
    expect((await api.request("OPTIONS", "/api/admin/agents")).status).toBe(404)
  })

  test("a defect is a generic 500: the detail goes to the log, never to the client", async () => {
    // A version row whose package no longer decodes (a corrupt row written behind the store's back).
    await api.sql(`INSERT INTO admin.agent_version (name, version, package, saved_by) VALUES ('corrupt', 1, '{"name": 42}'::jsonb, 'sql')`)
    await api.sql(`INSERT INTO admin.agent (name, audience, current_version) VALUES ('corrupt', 'runtime', 1)`)
    try {
      const logged = api.logs.length
      const r = await api.request("GET", "/api/admin/agents/corrupt", { token: api.reader.token })
      expect(r.status).toBe(500)
      expect(r.json()).toEqual({ error: { code: "internal", message: "internal server error" } })
      expect(api.logs.length).toBe(logged + 1)
      expect(api.logs.at(-1)).toStartWith("request failed:")
    } finally {
      await api.sql(`DELETE FROM admin.agent WHERE name = 'corrupt'`)
    }
  })
})

describe("no error body leaks internals", () => {
  test("every error body of this file: the shape holds and there is no stack trace, host path or node_modules", () => {
    expect(api.errors.length).toBeGreaterThanOrEqual(18)
    const bad = api.errors.flatMap((e) => {
      const problem = errorBodyProblem(e.status, e.body)
      return problem === undefined ? [] : [`${e.method} ${e.path} → ${e.status}: ${problem}`]
    })
    expect(bad).toEqual([])
    for (const e of api.errors) for (const marker of LEAK_MARKERS) expect(e.body).not.toContain(marker)
  })

  test("the scan itself catches a leak", () => {
    expect(
      errorBodyProblem(500, JSON.stringify({ error: { code: "internal", message: "boom\n    at run (/work/main/src/x.ts:1:2)" } }))
    ).toBeDefined()
    expect(errorBodyProblem(400, JSON.stringify({ error: { code: "bad-request", message: "x", stack: "…" } }))).toBeDefined()
    expect(errorBodyProblem(404, JSON.stringify({ message: "no" }))).toBeDefined()
    expect(errorBodyProblem(400, JSON.stringify({ error: { code: "bad-request", message: "x", problems: [{ path: "a" }] } }))).toBeDefined()
    expect(errorBodyProblem(404, JSON.stringify({ error: { code: "not-found", message: "no such endpoint" } }))).toBeUndefined()
  })
})
