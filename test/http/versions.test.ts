/**
 * Versions under concurrency and in SQL: concurrent saves get distinct numbers, a number is never
 * reused (not even after delete and re-create), and version rows are immutable in PostgreSQL itself.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Cause, Effect, Either, Exit, Option } from "effect"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { DbWrites } from "../../src/db/DbWrites.ts"
import { createAgent, createAgentFiles, saveAgent, useApi } from "../support/api.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const api = useApi()

const get = (path: string) => api.request("GET", path, { token: api.reader.token })
const versionsOf = async (name: string) =>
  (await get(`/api/admin/agents/${name}/versions`)).json().versions as Array<{
    version: number
    savedBy: string
    savedAt: string
    current: boolean
    note: string
  }>

describe("concurrent saves", () => {
  test("20 concurrent PUTs of one agent → 20 distinct version numbers, all in the history, the last one current", async () => {
    await createAgent(api, "contended")
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.request("PUT", "/api/admin/agents/contended", {
          token: api.manager.token,
          json: createAgentFiles("contended", { instructions: `Save ${i}.\n` })
        })
      )
    )
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
    const numbers = results.map((r) => r.json().agent.version as number)
    expect(new Set(numbers).size).toBe(20)
    expect([...numbers].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2))

    const versions = await versionsOf("contended")
    expect(versions.map((v) => v.version)).toEqual(Array.from({ length: 21 }, (_, i) => 21 - i))
    expect(versions.filter((v) => v.current).map((v) => v.version)).toEqual([21])
    // The current version is the save that got 21, and its content is what that save sent.
    const last = results.find((r) => r.json().agent.version === 21)!.json().agent
    expect((await get("/api/admin/agents/contended/definition")).json().definition.instructions).toBe(last.package.instructions)
    const rows = await api.sql<{ n: string }>(`SELECT count(*)::text AS n FROM admin.agent_version WHERE name = 'contended'`)
    expect(rows[0]?.n).toBe("21")
  })

  test("10 concurrent creates of one name → one 201, nine 409 agent-exists, one version", async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api.request("POST", "/api/admin/agents", {
          token: api.manager.token,
          json: createAgentFiles("raced", { instructions: `Create ${i}.\n` })
        })
      )
    )
    expect(results.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(409)])
    for (const r of results.filter((r) => r.status === 409)) expect(r.json().error.code).toBe("agent-exists")
    expect((await versionsOf("raced")).map((v) => v.version)).toEqual([1])
  })
})

describe("a version number is never reused", () => {
  test("delete, then re-create the same name: the new version is higher than any used before; the old history stays hidden", async () => {
    await createAgent(api, "phoenix", { instructions: "First life.\n" })
    await saveAgent(api, "phoenix", { instructions: "First life, v2.\n" })
    await saveAgent(api, "phoenix", { instructions: "First life, v3.\n" })
    expect((await api.request("DELETE", "/api/admin/agents/phoenix", { token: api.manager.token })).status).toBe(204)
    const reborn = await createAgent(api, "phoenix", { instructions: "Second life.\n" })
    expect(reborn.version).toBe(4)
    expect(await versionsOf("phoenix")).toEqual([
      { version: 4, savedBy: "manager", savedAt: expect.any(String), note: "created", current: true }
    ])
    expect((await get("/api/admin/agents/phoenix/definition")).json().definition).toMatchObject({
      version: 4,
      instructions: "Second life.\n"
    })
    // The first life's versions are still stored (immutable) but are not this agent's to restore.
    expect((await get("/api/admin/agents/phoenix/versions/2")).status).toBe(404)
    expect((await api.request("POST", "/api/admin/agents/phoenix/versions/2/restore", { token: api.manager.token })).status).toBe(404)
    const stored = await api.sql<{ version: number }>(`SELECT version FROM admin.agent_version WHERE name = 'phoenix' ORDER BY version`)
    expect(stored.map((r) => Number(r.version))).toEqual([1, 2, 3, 4])
    expect((await saveAgent(api, "phoenix", { instructions: "Second life, v5.\n" })).version).toBe(5)
  })

  test("restore does not hand out a number: the save after a restore continues the count", async () => {
    await createAgent(api, "counted")
    await saveAgent(api, "counted", { instructions: "Two.\n" })
    expect((await api.request("POST", "/api/admin/agents/counted/versions/1/restore", { token: api.manager.token })).status).toBe(200)
    expect((await saveAgent(api, "counted", { instructions: "Three.\n" })).version).toBe(3)
  })
})

describe("version rows are immutable in SQL", () => {
  const failing = async (statement: string) => {
    const exit = await api.runExit(Effect.flatMap(SqlClient, (sql) => sql.unsafe(statement)))
    expect(Exit.isFailure(exit)).toBe(true)
    if (Exit.isSuccess(exit)) return ""
    const failure = Cause.failureOption(exit.cause)
    expect(Option.isSome(failure)).toBe(true)
    const error = Option.getOrThrow(failure)
    expect(error._tag).toBe("SqlError")
    return `${error.message} ${String((error as { cause?: unknown }).cause)}`
  }

  test("UPDATE, DELETE and TRUNCATE of admin.agent_version all fail in PostgreSQL; the rows are unchanged", async () => {
    await createAgent(api, "carved", { instructions: "In stone.\n" })
    await saveAgent(api, "carved", { instructions: "Still in stone.\n" })
    const snapshot = `SELECT name, version, note, saved_by, package::text AS package FROM admin.agent_version ORDER BY name, version`
    const before = await api.sql(snapshot)
    expect(before.length).toBeGreaterThanOrEqual(2)

    expect(await failing(`UPDATE admin.agent_version SET note = 'x'`)).toContain("agent versions are immutable")
    expect(await failing(`UPDATE admin.agent_version SET package = '{}'::jsonb WHERE name = 'carved' AND version = 1`)).toContain(
      "agent versions are immutable"
    )
    expect(await failing(`DELETE FROM admin.agent_version`)).toContain("agent versions are immutable")
    expect(await failing(`DELETE FROM admin.agent_version WHERE name = 'carved' AND version = 1`)).toContain("agent versions are immutable")
    expect(await failing(`TRUNCATE admin.agent_version`)).toContain("agent versions are immutable")

    expect(await api.sql(snapshot)).toEqual(before)
    expect((await get("/api/admin/agents/carved/versions/1")).json().view.package.instructions).toBe("In stone.\n")
  })
})

describe("one meaning of an agent's version", () => {
  const labelled = (name: string, label: string) => {
    const files = createAgentFiles(name)
    return {
      files: files.files.map((f) =>
        f.path === `${name}.md` ? { ...f, content: f.content.replace("version: 1\n", `version: ${JSON.stringify(label)}\n`) } : f
      )
    }
  }
  const write = async (method: "POST" | "PUT", path: string, name: string, label: string) => {
    const r = await api.request(method, path, { token: api.manager.token, json: labelled(name, label) })
    expect(r.status).toBe(method === "POST" ? 201 : 200)
    return r.json<{ agent: { version: unknown; package: { version: unknown } } }>().agent
  }

  test("version is the store's number in the API, the catalog and the job definition; the front-matter label stays in the package", async () => {
    const created = await write("POST", "/api/admin/agents", "labelled", "2.0-beta")
    expect(created.version).toBe(1)
    expect(created.package.version).toBe("2.0-beta")
    const saved = await write("PUT", "/api/admin/agents/labelled", "labelled", "7")
    expect(saved.version).toBe(2)
    expect(saved.package.version).toBe("7")
    const catalog = (await get("/api/admin/agents")).json<{ agents: Array<{ name: string; builtin: boolean; version: unknown }> }>().agents
    expect(catalog.find((a) => a.name === "labelled")?.version).toBe(2)
    // Built-ins have a number too (the release's), never a label.
    for (const b of catalog.filter((a) => a.builtin)) expect(Number.isInteger(b.version)).toBe(true)
    const definition = (await get("/api/admin/agents/labelled/definition")).json<{ definition: { version: unknown } }>().definition
    expect(definition.version).toBe(2)
  })

  test("AgentStore.definition refuses what a job cannot run: disabled, member, unknown", async () => {
    await createAgent(api, "sleeper")
    expect((await api.request("PATCH", "/api/admin/agents/sleeper", { token: api.manager.token, json: { enabled: false } })).status).toBe(
      200
    )
    await createAgent(api, "helper", { audience: "member" })
    const reasons = await api.run(
      Effect.flatMap(AgentStore, (store) =>
        Effect.forEach(["sleeper", "helper", "nobody"], (name) =>
          Effect.map(Effect.flip(store.definition(name)), (e) => [e._tag, e.reason])
        )
      )
    )
    expect(reasons).toEqual([
      ["AgentUnavailable", "disabled"],
      ["AgentUnavailable", "member"],
      ["AgentUnavailable", "unknown"]
    ])
    const builtin = await api.run(Effect.flatMap(AgentStore, (store) => store.definition("codebase-inventory")))
    expect(builtin.version).toBe(3)
    expect(builtin.id).toBe("codebase-inventory")
  })

  test("AgentStore.definition is answered from memory until the catalog is written, and an unavailable agent is read each time", async () => {
    await createAgent(api, "remembered")
    const definition = (name: string) => api.run(Effect.flatMap(AgentStore, (store) => Effect.either(store.definition(name))))
    const statements = () => api.run(Effect.map(DbWrites, (w) => w.statements()))
    const first = await definition("remembered")
    const before = await statements()
    const again = await definition("remembered")
    expect(await statements()).toBe(before)
    // The same definition object: nothing was read or built again.
    expect(Either.getOrThrow(again)).toBe(Either.getOrThrow(first))
    // A new version is a catalog write: the next job runs it.
    await saveAgent(api, "remembered", { instructions: "You help, more.\n" })
    const saved = await definition("remembered")
    expect(saved._tag === "Right" ? [saved.right.version, saved.right.instructions.includes("more")] : saved.left).toEqual([2, true])
    // Disabled: refused; the refusal is not kept, so enabling it (a write too) runs it again.
    expect(
      (await api.request("PATCH", "/api/admin/agents/remembered", { token: api.manager.token, json: { enabled: false } })).status
    ).toBe(200)
    const disabled = await definition("remembered")
    expect(disabled._tag === "Left" ? disabled.left.reason : disabled).toBe("disabled")
    const beforeAgain = await statements()
    await definition("remembered")
    expect(await statements()).toBeGreaterThan(beforeAgain)
  })
})
