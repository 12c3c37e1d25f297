/**
 * History without noise: a save or re-import without a change adds no version; change
 * notes are stored with the version; a restore is recorded (who, when, from which version); shared
 * skills have versions with restore, and an agent's history lists the edits of the skills it uses.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { createAgent, createAgentFiles, createSkill, saveAgent, useApi } from "../support/api.ts"

setDefaultTimeout(30_000)

const api = useApi()
const get = (path: string) => api.request("GET", path, { token: api.reader.token })
const send = (method: string, path: string, json?: unknown) => api.request(method, path, { token: api.manager.token, json })
const versionsOf = async (name: string) =>
  (await get(`/api/admin/agents/${name}/versions`)).json().versions as Array<Record<string, unknown>>

describe("agent versions", () => {
  test("saving the same package again adds no version and answers with the current one", async () => {
    await createAgent(api, "steady", { instructions: "Same.\n" })
    const again = await send("PUT", "/api/admin/agents/steady", createAgentFiles("steady", { instructions: "Same.\n" }))
    expect(again.status).toBe(200)
    expect(again.json().agent.version).toBe(1)
    expect(await versionsOf("steady")).toHaveLength(1)
    expect((await saveAgent(api, "steady", { instructions: "Changed.\n" })).version).toBe(2)
  })

  test("re-importing the same file adds no version", async () => {
    const files = createAgentFiles("reimported", { instructions: "Imported.\n" })
    expect((await send("POST", "/api/admin/agents/import", files)).status).toBe(201)
    const again = await send("POST", "/api/admin/agents/import", files)
    expect(again.json().agent.version).toBe(1)
    expect(await versionsOf("reimported")).toHaveLength(1)
  })

  test("a change note is stored with the version; a note that is not text or too long is a 400 naming `note`", async () => {
    await createAgent(api, "noted", { instructions: "One.\n" })
    const r = await send("PUT", "/api/admin/agents/noted", {
      ...createAgentFiles("noted", { instructions: "Two.\n" }),
      note: "Shorter wording for the summary."
    })
    expect(r.status).toBe(200)
    const [latest, first] = await versionsOf("noted")
    expect(latest).toMatchObject({ version: 2, note: "saved", changeNote: "Shorter wording for the summary." })
    expect(first).not.toHaveProperty("changeNote")
    const info = (await get("/api/admin/agents/noted/versions/2")).json().info
    expect(info.changeNote).toBe("Shorter wording for the summary.")
    for (const note of [42, "x".repeat(2001)]) {
      const bad = await send("PUT", "/api/admin/agents/noted", { ...createAgentFiles("noted", { instructions: "Three.\n" }), note })
      expect(bad.status).toBe(400)
      expect(bad.json().error.problems.map((p: { path: string }) => p.path)).toEqual(["note"])
    }
    expect(await versionsOf("noted")).toHaveLength(2)
  })

  test("a restore is recorded: who, when, which version became current and which was current before", async () => {
    await createAgent(api, "restored-log", { instructions: "One.\n" })
    await saveAgent(api, "restored-log", { instructions: "Two.\n" })
    const editor = await api.createUser("restorer", ["agents.manage"])
    const r = await api.request("POST", "/api/admin/agents/restored-log/versions/1/restore", { token: editor.token })
    expect(r.status).toBe(200)
    const restores = (await get("/api/admin/agents/restored-log/restores")).json().restores
    expect(restores).toEqual([{ fromVersion: 2, toVersion: 1, restoredBy: "restorer", restoredAt: expect.any(String) }])
    // Restoring the version that is already current changes nothing and records nothing.
    await api.request("POST", "/api/admin/agents/restored-log/versions/1/restore", { token: editor.token })
    expect((await get("/api/admin/agents/restored-log/restores")).json().restores).toHaveLength(1)
  })
})

describe("shared-skill versions", () => {
  test("create is v1; each edit a new version with its note; an unchanged save adds none; restore adds one", async () => {
    await createSkill(api, "tone-guide")
    const one = (await get("/api/admin/agent-skills/tone-guide")).json().skill
    expect(one.version).toBe(1)
    const edit = await send("PUT", "/api/admin/agent-skills/tone-guide", {
      description: one.description,
      content: "Be warm.\n",
      note: "Friendlier."
    })
    expect(edit.json().skill.version).toBe(2)
    const same = await send("PUT", "/api/admin/agent-skills/tone-guide", { description: one.description, content: "Be warm.\n" })
    expect(same.json().skill.version).toBe(2)
    const versions = (await get("/api/admin/agent-skills/tone-guide/versions")).json().versions
    expect(versions.map((v: { version: number; note: string; current: boolean }) => [v.version, v.note, v.current])).toEqual([
      [2, "saved", true],
      [1, "created", false]
    ])
    expect(versions[0].changeNote).toBe("Friendlier.")
    const v1 = (await get("/api/admin/agent-skills/tone-guide/versions/1")).json()
    expect(v1.content).toBe(one.content)

    const restored = await send("POST", "/api/admin/agent-skills/tone-guide/versions/1/restore")
    expect(restored.status).toBe(200)
    expect(restored.json().skill).toMatchObject({ version: 3, content: one.content })
    const after = (await get("/api/admin/agent-skills/tone-guide/versions")).json().versions
    expect(after[0]).toMatchObject({ version: 3, note: "restored from v1", savedBy: "manager", current: true })
    expect((await get("/api/admin/agent-skills/tone-guide/versions/9")).status).toBe(404)
    expect((await get("/api/admin/agent-skills/cite-evidence/versions")).status).toBe(409)
  })

  test("skill version rows are immutable in SQL", async () => {
    await createSkill(api, "carved-skill")
    for (const statement of ["UPDATE admin.agent_skill_version SET content = 'x'", "DELETE FROM admin.agent_skill_version"]) {
      await expect(api.sql(statement)).rejects.toThrow()
    }
    const rows = await api.sql<{ content: string }>(`SELECT content FROM admin.agent_skill_version WHERE name = 'carved-skill'`)
    expect(rows).toHaveLength(1)
  })
})
