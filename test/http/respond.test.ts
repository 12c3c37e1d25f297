/**
 * API errors are the domain's tagged errors (and the edge's own, src/http/errors.ts), each with its
 * status in respond.ts: the response carries the class's tag as the code, its message, and only the
 * documented extra fields.
 */
import { describe, expect, test } from "bun:test"
import { Cause, Effect, Exit } from "effect"
import { AgentNotFound, AgentUnavailable, SkillInUse } from "../../src/agents/errors.ts"
import { BadRequest, Forbidden, TooManyRequests } from "../../src/http/errors.ts"
import { badRequest, errorResponse, forbidden, fromExit, notFound, statusOf, type ApiError } from "../../src/http/respond.ts"
import { ProviderInUse } from "../../src/providers/errors.ts"
import { JobNotFound } from "../../src/worker/JobStore.ts"

const body = async (r: Response) => (await r.json()) as { error: Record<string, unknown> }

describe("API errors", () => {
  test("a domain error class is the route's failure: its status, kebab-case code, message; no other field", async () => {
    const cases: Array<[ApiError, number, string]> = [
      [new AgentNotFound({ name: "ghost" }), 404, "agent-not-found"],
      [new AgentUnavailable({ name: "x", reason: "disabled", problems: [] }), 422, "agent-unavailable"],
      [new ProviderInUse({ id: "p", agents: ["a"] }), 409, "provider-in-use"],
      [new JobNotFound({ id: "j" }), 404, "job-not-found"]
    ]
    for (const [error, status, code] of cases) {
      const r = errorResponse(error)
      expect(r.status).toBe(status)
      expect(statusOf(error)).toBe(status)
      const { error: e } = await body(r)
      expect(e["code"]).toBe(code)
      expect(e["message"]).toBe(error.message)
      // Domain fields (name, id, reason) stay server-side; only problems and agents are part of the body.
      expect(Object.keys(e).sort()).toEqual(
        ["code", "message", ...("agents" in error ? ["agents"] : []), ...("problems" in error ? ["problems"] : [])].sort()
      )
    }
  })

  test("the edge's helpers make the edge's classes", async () => {
    expect(badRequest([{ path: "a", message: "b" }])).toBeInstanceOf(BadRequest)
    expect(forbidden("no")).toBeInstanceOf(Forbidden)
    expect(notFound("no")._tag).toBe("NotFound")
    const r = errorResponse(new TooManyRequests({ message: "slow down", retryAfterSeconds: 7 }))
    expect(r.status).toBe(429)
    expect(r.headers.get("retry-after")).toBe("7")
    expect((await body(errorResponse(new SkillInUse({ name: "s", agents: ["a", "b"] })))).error["agents"]).toEqual(["a", "b"])
  })

  test("a failed Effect of a route becomes its class's response; a defect a bare 500", async () => {
    const failed = await Effect.runPromiseExit(Effect.fail(new AgentNotFound({ name: "ghost" })))
    expect(fromExit(failed as Exit.Exit<Response, ApiError>, () => undefined).status).toBe(404)
    const logged: Array<string> = []
    const died = fromExit(Exit.failCause(Cause.die(new Error("boom at /work/secret/path"))), (l) => logged.push(l))
    expect(died.status).toBe(500)
    expect(await died.text()).not.toContain("/work/secret")
    expect(logged.join("")).toContain("boom")
  })
})
