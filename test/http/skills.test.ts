/**
 * Shared skills: list, create, get, update (applies to every agent that uses it at its next
 * resolution), delete (refused while in use, naming the agents), built-ins read-only.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { createAgent, createAgentFiles, createSkill, saveAgent, storeFingerprint, useApi } from "../support/api.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const api = useApi()

const get = (path: string) => api.request("GET", path, { token: api.reader.token })
const send = (method: string, path: string, json?: unknown) => api.request(method, path, { token: api.manager.token, json })
const skillsOf = async () => (await get("/api/admin/agent-skills")).json().skills as Array<Record<string, any>>

describe("GET /api/admin/agent-skills", () => {
  test("the built-in skills first (builtin, read-only), then custom ones with who changed them and who uses them", async () => {
    await createSkill(api, "listed-skill")
    await createAgent(api, "skill-user", { skills: ["listed-skill", "cite-evidence"] })
    const skills = await skillsOf()
    expect(skills.slice(0, 2).map((s) => [s.name, s.builtin])).toEqual([
      ["cite-evidence", true],
      ["structured-report", true]
    ])
    expect(skills[0]).toEqual({
      name: "cite-evidence",
      description: "Back every claim about the code with the file and line it came from.",
      content: expect.stringMatching(/^# Cite evidence\n/),
      builtin: true,
      license: null,
      skillVersion: null,
      version: null,
      metadata: {},
      resources: [],
      updatedBy: null,
      updatedAt: null,
      usedBy: expect.any(Array)
    })
    expect(skills.find((s) => s.name === "listed-skill")).toEqual({
      name: "listed-skill",
      description: "The listed-skill skill.",
      content: "# listed-skill\nDo it well.\n",
      builtin: false,
      license: null,
      skillVersion: null,
      metadata: {},
      resources: [],
      version: 1,
      updatedBy: "manager",
      updatedAt: expect.any(String),
      usedBy: ["skill-user"]
    })
  })

  test("a built-in skill's usedBy names the custom agents that list it", async () => {
    await createAgent(api, "builtin-skill-user", { skills: ["structured-report"] })
    expect((await skillsOf()).find((s) => s.name === "structured-report")?.usedBy).toEqual(["builtin-skill-user"])
    expect((await get("/api/admin/agent-skills/structured-report")).json().skill.usedBy).toEqual(["builtin-skill-user"])
  })
})

describe("POST /api/admin/agent-skills", () => {
  test("→ 201 with the skill; the editor's context offers it", async () => {
    const r = await send("POST", "/api/admin/agent-skills", { name: "new-skill", content: "Be precise.\n" })
    expect(r.status).toBe(201)
    expect(r.json().skill).toMatchObject({
      name: "new-skill",
      description: "",
      content: "Be precise.\n",
      builtin: false,
      updatedBy: "manager",
      usedBy: []
    })
    const ctx = (await get("/api/admin/agents/context")).json()
    expect(ctx.sharedSkills).toContainEqual({ name: "new-skill", description: "", builtin: false })
  })

  test("a name that exists → 409 skill-exists; a built-in's name → 409 builtin-read-only", async () => {
    await createSkill(api, "taken-skill")
    const dup = await send("POST", "/api/admin/agent-skills", { name: "taken-skill", content: "Other.\n" })
    expect(dup.status).toBe(409)
    expect(dup.json()).toEqual({ error: { code: "skill-exists", message: 'a shared skill named "taken-skill" already exists' } })
    expect((await get("/api/admin/agent-skills/taken-skill")).json().skill.content).toBe("# taken-skill\nDo it well.\n")
    const builtin = await send("POST", "/api/admin/agent-skills", { name: "cite-evidence", content: "Mine.\n" })
    expect(builtin.status).toBe(409)
    expect(builtin.json().error.code).toBe("builtin-read-only")
  })

  test("a bad name and empty content → one 400 listing both", async () => {
    const r = await send("POST", "/api/admin/agent-skills", { name: "Bad Name", content: "" })
    expect(r.status).toBe(400)
    expect(r.json().error.code).toBe("skill-invalid")
    expect(r.json().error.problems).toEqual([
      { path: "name", message: "must match [a-z][a-z0-9-]* (at most 64 characters)" },
      { path: "content", message: "must not be empty" }
    ])
  })
})

describe("GET /api/admin/agent-skills/:name", () => {
  test("a built-in, a custom one, an unknown one (404)", async () => {
    expect((await get("/api/admin/agent-skills/structured-report")).json().skill).toMatchObject({
      name: "structured-report",
      builtin: true
    })
    await createSkill(api, "got-skill")
    expect((await get("/api/admin/agent-skills/got-skill")).json().skill).toMatchObject({ name: "got-skill", builtin: false })
    const missing = await get("/api/admin/agent-skills/no-such-skill")
    expect(missing.status).toBe(404)
    expect(missing.json()).toEqual({ error: { code: "skill-not-found", message: 'no shared skill "no-such-skill"' } })
  })
})

describe("PUT /api/admin/agent-skills/:name", () => {
  test("an edit shows up in the definition of every agent that uses it, without re-saving the agent", async () => {
    await createSkill(api, "evolving", "Old advice.\n")
    await createAgent(api, "evolving-user", { skills: ["evolving"] })
    const skillsIn = async () => (await get("/api/admin/agents/evolving-user/definition")).json().definition.skills
    expect(await skillsIn()).toEqual([{ name: "evolving", content: "Old advice.\n" }])

    const r = await send("PUT", "/api/admin/agent-skills/evolving", { description: "Newer.", content: "New advice.\n" })
    expect(r.status).toBe(200)
    expect(r.json().skill).toMatchObject({ name: "evolving", description: "Newer.", content: "New advice.\n", usedBy: ["evolving-user"] })
    expect(await skillsIn()).toEqual([{ name: "evolving", content: "New advice.\n" }])
    const versions = (await get("/api/admin/agents/evolving-user/versions")).json().versions
    expect(versions.map((v: { version: number }) => v.version)).toEqual([1])
  })

  test("renaming → 400; an unknown skill → 404; invalid content → 400", async () => {
    await createSkill(api, "fixed-name")
    const rename = await send("PUT", "/api/admin/agent-skills/fixed-name", { name: "other-name", content: "x" })
    expect(rename.status).toBe(400)
    expect(rename.json().error.problems).toEqual([{ path: "name", message: "cannot rename a shared skill" }])
    expect((await get("/api/admin/agent-skills/other-name")).status).toBe(404)
    expect((await send("PUT", "/api/admin/agent-skills/never-made", { content: "x" })).status).toBe(404)
    const empty = await send("PUT", "/api/admin/agent-skills/fixed-name", { content: "" })
    expect(empty.status).toBe(400)
    expect(empty.json().error.problems).toEqual([{ path: "content", message: "must not be empty" }])
  })

  test("a malformed body → 400 naming every field; nothing stored", async () => {
    await createSkill(api, "kept-text", "Kept.\n")
    const bad = await send("PUT", "/api/admin/agent-skills/kept-text", { name: 7, description: ["x"], content: 42 })
    expect(bad.status).toBe(400)
    expect(
      bad
        .json()
        .error.problems.map((p: { path: string }) => p.path)
        .sort()
    ).toEqual(["content", "description", "name"])
    const list = await send("PUT", "/api/admin/agent-skills/kept-text", ["Kept.\n"])
    expect(list.status).toBe(400)
    expect((await get("/api/admin/agent-skills/kept-text")).json().skill).toMatchObject({ content: "Kept.\n", version: 1 })
  })
})

describe("DELETE /api/admin/agent-skills/:name", () => {
  test("in use → 409 whose body names the agents (disabled ones too); unused → 204", async () => {
    await createSkill(api, "popular")
    await createAgent(api, "fan-one", { skills: ["popular"] })
    await createAgent(api, "fan-two", { skills: ["cite-evidence", "popular"] })
    expect((await send("PATCH", "/api/admin/agents/fan-two", { enabled: false })).status).toBe(200)
    const before = await storeFingerprint(api)
    const r = await send("DELETE", "/api/admin/agent-skills/popular")
    expect(r.status).toBe(409)
    expect(r.json()).toEqual({
      error: { code: "skill-in-use", message: 'shared skill "popular" is used by fan-one, fan-two', agents: ["fan-one", "fan-two"] }
    })
    expect(await storeFingerprint(api)).toBe(before)

    // Once no current version lists it, it can go.
    await saveAgent(api, "fan-one", { instructions: "Fan one, again.\n" })
    await send("DELETE", "/api/admin/agents/fan-two")
    expect((await send("DELETE", "/api/admin/agent-skills/popular")).status).toBe(204)
    expect((await get("/api/admin/agent-skills/popular")).status).toBe(404)
    expect((await send("DELETE", "/api/admin/agent-skills/popular")).status).toBe(404)
  })

  test("an agent that lists a skill which no longer exists cannot be saved (400 at #skills.N)", async () => {
    await createSkill(api, "short-lived")
    expect((await send("DELETE", "/api/admin/agent-skills/short-lived")).status).toBe(204)
    const r = await send("POST", "/api/admin/agents", createAgentFiles("late-user", { skills: ["short-lived"] }))
    expect(r.status).toBe(400)
    expect(r.json().error.problems).toEqual([{ path: "late-user.md#skills.0", message: 'shared skill "short-lived" does not exist' }])
  })

  test("built-in skills are read-only: PUT and DELETE → 409", async () => {
    const put = await send("PUT", "/api/admin/agent-skills/cite-evidence", { content: "Mine.\n" })
    expect(put.status).toBe(409)
    expect(put.json()).toEqual({
      error: { code: "builtin-read-only", message: '"cite-evidence" is a built-in shared skill: it is read-only and its name is reserved' }
    })
    expect((await send("DELETE", "/api/admin/agent-skills/structured-report")).status).toBe(409)
    expect((await get("/api/admin/agent-skills/cite-evidence")).json().skill.content).toStartWith("# Cite evidence\n")
  })
})
