/**
 * The Projects service (the one owner of `runtime.project`) through the API and directly: a taken id
 * is a 409 naming it, an unknown id is ProjectNotFound, a root outside the job roots is
 * ProjectRootInvalid listing its problem (never the host path), and the list is ordered by id; an
 * update (`PUT /api/projects/<id>`) replaces name and root with the same checks, never the id.
 */
import { describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Projects } from "../../src/worker/Projects.ts"
import { useApi, type JsonObject } from "../support/api.ts"
import { createRootDir } from "../support/jobRoots.ts"

const api = useApi()
const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-projects-")))
process.on("exit", () => rmSync(elsewhere, { recursive: true, force: true }))

describe("Projects", () => {
  test("create, a taken id refused with 409, list ordered by id, get", async () => {
    const token = api.manager.token
    expect((await api.request("POST", "/api/projects", { token, json: { id: "pz", name: "Zed" } })).status).toBe(201)
    expect((await api.request("POST", "/api/projects", { token, json: { id: "pa", name: "Ay" } })).status).toBe(201)
    const again = await api.request("POST", "/api/projects", { token, json: { id: "pz", name: "Other" } })
    expect(again.status).toBe(409)
    expect(again.json<JsonObject>().error).toEqual({ code: "project-exists", message: 'a project "pz" already exists' })
    const ids = (await api.request("GET", "/api/projects", { token })).json<JsonObject>().projects.map((p: JsonObject) => p.id)
    expect(ids.filter((id: string) => id === "pa" || id === "pz")).toEqual(["pa", "pz"])
    const got = await api.run(Effect.flatMap(Projects, (p) => p.get("pz")))
    expect({ id: got.id, name: got.name, root: got.root }).toEqual({ id: "pz", name: "Zed", root: null })
  })

  test("an unknown id is ProjectNotFound; a root outside the job roots is ProjectRootInvalid, nothing stored", async () => {
    const missing = await api.run(Effect.flip(Effect.flatMap(Projects, (p) => p.get("nope"))))
    expect(missing._tag).toBe("ProjectNotFound")
    const bad = await api.run(Effect.flip(Effect.flatMap(Projects, (p) => p.create({ id: "outside", name: "Outside", root: elsewhere }))))
    expect(bad._tag === "ProjectRootInvalid" ? bad.problems : []).toEqual([
      { path: "root", message: "resolves outside the job roots (symbolic links followed)" }
    ])
    const res = await api.request("POST", "/api/projects", {
      token: api.manager.token,
      json: { id: "outside", name: "Outside", root: elsewhere }
    })
    expect(res.status).toBe(400)
    expect(res.text).not.toContain(elsewhere)
    expect(await api.sql("SELECT id FROM runtime.project WHERE id = 'outside'")).toEqual([])
  })

  test("PUT /api/projects/<id>: name and root replaced with the create checks; bad input 400 naming every field, nothing stored", async () => {
    const token = api.manager.token
    const root = createRootDir("proj-")
    expect((await api.request("POST", "/api/projects", { token, json: { id: "pu", name: "Before" } })).status).toBe(201)
    const saved = await api.request("PUT", "/api/projects/pu", { token, json: { name: "After", root } })
    expect(saved.status).toBe(200)
    expect(saved.json<JsonObject>().project).toMatchObject({ id: "pu", name: "After", root })
    // Both problems at once; the stored project is unchanged.
    const bad = await api.request("PUT", "/api/projects/pu", { token, json: { name: "", root: "" } })
    expect(bad.status).toBe(400)
    expect(
      bad
        .json<JsonObject>()
        .error.problems.map((p: JsonObject) => p.path)
        .sort()
    ).toEqual(["name", "root"])
    const outside = await api.request("PUT", "/api/projects/pu", { token, json: { name: "Out", root: elsewhere } })
    expect(outside.status).toBe(400)
    expect(outside.text).not.toContain(elsewhere)
    expect(await api.sql("SELECT name, root FROM runtime.project WHERE id = 'pu'")).toEqual([{ name: "After", root }])
    // No root: the project's jobs may work anywhere in the job roots again.
    expect((await api.request("PUT", "/api/projects/pu", { token, json: { name: "After" } })).json<JsonObject>().project.root).toBeNull()
    expect((await api.request("PUT", "/api/projects/nope", { token, json: { name: "X" } })).status).toBe(404)
    // Reading is not enough to change a project.
    expect((await api.request("PUT", "/api/projects/pu", { token: api.reader.token, json: { name: "Mine" } })).status).toBe(403)
    const missing = await api.run(Effect.flip(Effect.flatMap(Projects, (p) => p.update("nope", { name: "X" }))))
    expect(missing._tag).toBe("ProjectNotFound")
  })
})
