/**
 * A project's resource limits: set through `POST` and `PUT /api/projects` (positive integers, each bad
 * value a 400 naming its field, nothing stored), and applied when the worker builds a job's envelope:
 * each of the job's `limits.resources` becomes the lower of the job's own and the project's.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Schema } from "effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { Limits } from "../../src/contract/JobSpec.ts"
import { buildEnvelope } from "../../src/worker/buildEnvelope.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { bindAgent, createAgent, useApi, type JsonObject } from "../support/api.ts"
import { createRootDir } from "../support/jobRoots.ts"

setDefaultTimeout(60_000)

const api = useApi()
/** The envelope carries the job spec undecoded (the job child decodes it); the limits are all this file reads. */
const decodeLimits = Schema.decodeUnknownSync(Schema.Struct({ limits: Limits }))

const createWorkspace = () => {
  const root = createRootDir("project-resources-")
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  return { root, readOnly: [join(root, "src")], outDir: join(root, "out") }
}

/** Queues a job through the API and returns the `limits.resources` of the envelope the worker would build for it. */
const envelopeResources = async (project: string | undefined, resources: JsonObject | undefined) => {
  const limits = { timeoutSec: 60, ...(resources === undefined ? {} : { resources }) }
  const body = { agent: "sized", task: "Look.", workspace: createWorkspace(), limits, ...(project === undefined ? {} : { project }) }
  const queued = await api.request("POST", "/api/jobs", { token: api.manager.token, json: body })
  expect(queued.status).toBe(201)
  const id: string = queued.json<JsonObject>().job.id
  const resolved = await api.run(
    Effect.flatMap(
      Effect.flatMap(JobStore, (s) => s.get(id)),
      buildEnvelope
    )
  )
  return decodeLimits(resolved.envelope.job).limits.resources
}

describe("project resources", () => {
  test("create and update store them; the project's JSON shows them; absent = none ({})", async () => {
    const token = api.manager.token
    const created = await api.request("POST", "/api/projects", {
      token,
      json: { id: "res-a", name: "A", resources: { memoryMb: 512, processes: 64 } }
    })
    expect(created.status).toBe(201)
    expect(created.json<JsonObject>().project.resources).toEqual({ memoryMb: 512, processes: 64 })
    const plain = await api.request("POST", "/api/projects", { token, json: { id: "res-b", name: "B" } })
    expect(plain.json<JsonObject>().project.resources).toEqual({})
    const updated = await api.request("PUT", "/api/projects/res-a", {
      token,
      json: { name: "A", resources: { cpuSec: 30, tmpMb: 64, outDirMb: 128 } }
    })
    expect(updated.status).toBe(200)
    expect(updated.json<JsonObject>().project.resources).toEqual({ cpuSec: 30, tmpMb: 64, outDirMb: 128 })
    expect((await api.run(Effect.flatMap(Projects, (p) => p.get("res-a")))).resources).toEqual({ cpuSec: 30, tmpMb: 64, outDirMb: 128 })
    // A PUT replaces every setting: without resources the project's jobs get the server's again.
    expect((await api.request("PUT", "/api/projects/res-a", { token, json: { name: "A" } })).json<JsonObject>().project.resources).toEqual(
      {}
    )
    expect(await api.sql("SELECT resources FROM runtime.project WHERE id = 'res-a'")).toEqual([{ resources: {} }])
  })

  test('0, -1, 1.5 and "x" are refused with 400 naming the field, on create and update; nothing stored', async () => {
    const token = api.manager.token
    expect(
      (await api.request("POST", "/api/projects", { token, json: { id: "res-c", name: "C", resources: { memoryMb: 256 } } })).status
    ).toBe(201)
    for (const bad of [0, -1, 1.5, "x"]) {
      for (const field of ["memoryMb", "processes", "cpuSec", "tmpMb", "outDirMb"]) {
        const create = await api.request("POST", "/api/projects", {
          token,
          json: { id: "res-bad", name: "Bad", resources: { [field]: bad } }
        })
        expect(create.status).toBe(400)
        const createProblems = create.json<JsonObject>().error.problems
        expect(createProblems.map((p: JsonObject) => p.path)).toEqual([`resources.${field}`])
        expect(createProblems[0].message).toBe(
          typeof bad === "number" ? `must be a positive integer, got ${bad}` : 'Expected number, actual "x"'
        )
        const update = await api.request("PUT", "/api/projects/res-c", { token, json: { name: "C", resources: { [field]: bad } } })
        expect(update.status).toBe(400)
        expect(update.json<JsonObject>().error.problems.map((p: JsonObject) => p.path)).toEqual([`resources.${field}`])
      }
    }
    // Every bad field at once, and an unknown one.
    const all = await api.request("PUT", "/api/projects/res-c", {
      token,
      json: { name: "C", resources: { memoryMb: 0, cpuSec: "x", disk: 5 } }
    })
    expect(all.status).toBe(400)
    expect(
      all
        .json<JsonObject>()
        .error.problems.map((p: JsonObject) => p.path)
        .sort()
    ).toEqual(["resources.cpuSec", "resources.disk", "resources.memoryMb"])
    expect(await api.sql("SELECT id FROM runtime.project WHERE id = 'res-bad'")).toEqual([])
    expect(await api.sql("SELECT resources FROM runtime.project WHERE id = 'res-c'")).toEqual([{ resources: { memoryMb: 256 } }])
  })

  test("the envelope gets each resource at the lower of the job's and the project's", async () => {
    await createAgent(api, "sized")
    await bindAgent(api, "sized")
    const token = api.manager.token
    const project = { id: "res-env", name: "Env", resources: { memoryMb: 256, processes: 32, cpuSec: 60 } }
    expect((await api.request("POST", "/api/projects", { token, json: project })).status).toBe(201)
    // Asking for more than the project allows gets the project's; asking for less keeps its own; a
    // field neither names stays absent (the server's setting).
    expect(await envelopeResources("res-env", { memoryMb: 2048, processes: 8, tmpMb: 100 })).toEqual({
      memoryMb: 256,
      processes: 8,
      cpuSec: 60,
      tmpMb: 100
    })
    expect(await envelopeResources("res-env", undefined)).toEqual({ memoryMb: 256, processes: 32, cpuSec: 60 })
    // The job row keeps what the job asked for; only the envelope is lowered.
    const rows = await api.sql<{ limits: JsonObject }>(
      "SELECT limits FROM runtime.job WHERE project_id = 'res-env' ORDER BY created_at LIMIT 1"
    )
    expect(rows[0]?.limits.resources).toEqual({ memoryMb: 2048, processes: 8, tmpMb: 100 })
    // A project without resources, a project id never created and no project: the job's own.
    expect((await api.request("POST", "/api/projects", { token, json: { id: "res-none", name: "None" } })).status).toBe(201)
    expect(await envelopeResources("res-none", { memoryMb: 2048 })).toEqual({ memoryMb: 2048 })
    expect(await envelopeResources("res-unknown", { processes: 9 })).toEqual({ processes: 9 })
    expect(await envelopeResources(undefined, undefined)).toBeUndefined()
    // A changed project applies to the next job.
    expect((await api.request("PUT", "/api/projects/res-env", { token, json: { name: "Env", resources: { outDirMb: 10 } } })).status).toBe(
      200
    )
    expect(await envelopeResources("res-env", { memoryMb: 2048, outDirMb: 500 })).toEqual({ memoryMb: 2048, outDirMb: 10 })
  })
})
