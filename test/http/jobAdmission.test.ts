/**
 * One admission check for POST /api/jobs and the portal's run form: a job whose
 * agent is unknown, disabled, member-only or bound to no model is refused before it is queued — with the workspace's
 * problems in the same answer — instead of becoming a failed job record. The jobs list pages by cursor
 * and filters by project; an abort records who asked.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { bindAgent, createAgent, PASSWORD, useApi, type JsonObject } from "../support/api.ts"
import { createRootDir } from "../support/jobRoots.ts"

setDefaultTimeout(60_000)

const api = useApi()
const countJobs = async () => (await api.sql<{ n: number }>("SELECT count(*)::int AS n FROM runtime.job"))[0]?.n ?? -1

const workspace = () => {
  const root = createRootDir("admit-")
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  return { root, readOnly: [join(root, "src")], outDir: join(root, "out") }
}
const body = (agent: string, ws = workspace(), extra: Record<string, unknown> = {}) => ({
  agent,
  task: "Look.",
  workspace: ws,
  limits: { timeoutSec: 60 },
  ...extra
})

describe("admitting a job", () => {
  test("POST /api/jobs: unknown, disabled and member agents are 400 naming the agent, with the workspace problems, nothing queued", async () => {
    await createAgent(api, "off-duty")
    expect((await api.request("PATCH", "/api/admin/agents/off-duty", { token: api.manager.token, json: { enabled: false } })).status).toBe(
      200
    )
    await createAgent(api, "helper", { audience: "member" })
    const before = await countJobs()
    for (const [agent, message] of [
      ["no-such-agent", 'no agent "no-such-agent"'],
      ["off-duty", 'agent "off-duty" is disabled'],
      ["helper", "is a member agent"]
    ] as const) {
      const r = await api.request("POST", "/api/jobs", { token: api.manager.token, json: body(agent) })
      expect(r.status).toBe(400)
      expect(r.json<JsonObject>().error.problems).toEqual([{ path: "agent", message: expect.stringContaining(message) }])
    }
    // Every problem at once: the agent and a relative root together.
    const both = await api.request("POST", "/api/jobs", {
      token: api.manager.token,
      json: body("off-duty", { root: "rel", readOnly: ["rel/src"], outDir: "rel/out" })
    })
    expect(both.status).toBe(400)
    const paths = both.json<JsonObject>().error.problems.map((p: { path: string }) => p.path)
    expect(paths).toContain("agent")
    expect(paths.some((p: string) => p.startsWith("workspace"))).toBe(true)
    expect(await countJobs()).toBe(before)
  })

  test("an agent with no model binding (none for its project, no installation default): 400 naming the agent and where to bind it, nothing queued", async () => {
    await createAgent(api, "unbound-one")
    const before = await countJobs()
    const r = await api.request("POST", "/api/jobs", { token: api.manager.token, json: body("unbound-one") })
    expect(r.status).toBe(400)
    expect(r.json<JsonObject>().error.problems).toEqual([
      {
        path: "agent",
        message:
          'agent "unbound-one" is not bound to a model: bind it to a provider in Bindings (/agents/unbound-one/binding), then start the job again'
      }
    ])
    const inProject = await api.request("POST", "/api/jobs", {
      token: api.manager.token,
      json: body("unbound-one", workspace(), { project: "alpha" })
    })
    expect(inProject.status).toBe(400)
    expect(inProject.json<JsonObject>().error.problems[0].message).toStartWith(
      'agent "unbound-one" has no model binding for project "alpha" and no installation default: bind it'
    )
    // With the workspace's problems in the same answer.
    const both = await api.request("POST", "/api/jobs", {
      token: api.manager.token,
      json: body("unbound-one", { root: "rel", readOnly: ["rel/src"], outDir: "rel/out" })
    })
    expect(both.json<JsonObject>().error.problems.map((p: { path: string }) => p.path)).toContain("agent")
    expect(both.json<JsonObject>().error.problems.some((p: { path: string }) => p.path.startsWith("workspace"))).toBe(true)
    expect(await countJobs()).toBe(before)
  })

  test("the portal's run form: the same check, problems on the form (400), nothing queued", async () => {
    await createAgent(api, "benched")
    expect((await api.request("PATCH", "/api/admin/agents/benched", { token: api.manager.token, json: { enabled: false } })).status).toBe(
      200
    )
    const session = await api.signIn(api.manager.username, PASSWORD)
    const ws = workspace()
    const form = new URLSearchParams({
      task: "Look.",
      root: ws.root,
      readOnly: ws.readOnly.join("\n"),
      outDir: ws.outDir,
      timeoutSec: "60",
      idempotencyKey: crypto.randomUUID()
    })
    const before = await countJobs()
    const r = await api.request("POST", "/agents/benched/run", { session, form })
    expect(r.status).toBe(400)
    expect(r.headers.get("content-type")).toStartWith("text/html")
    expect(r.text).toContain("agent &quot;benched&quot; is disabled")
    expect(await countJobs()).toBe(before)
  })

  test("GET /api/jobs: filters by project, pages by cursor; an abort records who asked", async () => {
    await bindAgent(api, "codebase-inventory")
    const ids: Array<string> = []
    for (const project of ["alpha", "alpha", "beta"]) {
      const r = await api.request("POST", "/api/jobs", {
        token: api.manager.token,
        json: body("codebase-inventory", workspace(), { project })
      })
      expect(r.status).toBe(201)
      ids.push(r.json<JsonObject>().job.id)
    }
    const alpha = await api.request("GET", "/api/jobs?project=alpha&limit=1", { token: api.manager.token })
    const page1 = alpha.json<JsonObject>()
    expect(page1.jobs.map((j: JsonObject) => j.id)).toEqual([ids[1]])
    const page2 = (
      await api.request("GET", `/api/jobs?project=alpha&limit=1&before=${page1.nextCursor}`, { token: api.manager.token })
    ).json<JsonObject>()
    expect(page2.jobs.map((j: JsonObject) => j.id)).toEqual([ids[0]])
    const page3 = (
      await api.request("GET", `/api/jobs?project=alpha&limit=1&before=${page2.nextCursor}`, { token: api.manager.token })
    ).json<JsonObject>()
    expect(page3).toEqual({ jobs: [], nextCursor: null })

    const aborted = await api.request("POST", `/api/jobs/${ids[2]}/abort`, { token: api.manager.token })
    expect(aborted.status).toBe(202)
    expect(aborted.json<JsonObject>().job).toMatchObject({ status: "failed", reason: "aborted", abortedBy: api.manager.username })
    expect(typeof aborted.json<JsonObject>().job.abortedAt).toBe("string")
  })
})
