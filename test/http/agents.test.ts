/**
 * The Agent Builder endpoints of the spec table: catalog, context, read, create, save, enable/disable,
 * delete, copy, preview, definition, versions and restore — statuses and bodies.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { KERNEL_TOOLS } from "../../src/contract/AgentDefinition.ts"
import { type Api, createAgent, createAgentFiles, createSkill, saveAgent, storeFingerprint, useApi } from "../support/api.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const api = useApi()

const BUILTINS = ["architecture-map", "codebase-inventory", "data-interfaces", "domain-rules", "risk-quality"]
const BUILTIN_SKILLS = ["cite-evidence", "structured-report"]

const get = (path: string, a: Api = api) => a.request("GET", path, { token: a.reader.token })
const send = (method: string, path: string, json?: unknown) => api.request(method, path, { token: api.manager.token, json })
const catalog = async () => (await get("/api/admin/agents")).json().agents as Array<Record<string, any>>
const definitionOf = async (name: string) => {
  const r = await get(`/api/admin/agents/${name}/definition`)
  expect(r.status).toBe(200)
  return r.json().definition as Record<string, any>
}
const builtinSkillContent = (name: string) =>
  readFileSync(join(import.meta.dir, "..", "..", "builtin-skills", name, "SKILL.md"), "utf8").replace(/^---\n[\s\S]*?\n---\n/, "")

describe("GET /api/admin/agents (catalog)", () => {
  test("lists the built-in agents: builtin, runtime audience, version, valid, enabled, no binding", async () => {
    const agents = await catalog()
    const builtins = agents.filter((a) => a.builtin === true)
    expect(builtins.map((a) => a.name).sort()).toEqual(BUILTINS)
    for (const a of builtins) {
      expect(a).toEqual({
        name: a.name,
        builtin: true,
        description: expect.any(String),
        audience: "runtime",
        // The release's number for its built-ins (their shipped `version:`), v3 since their typed answers.
        version: 3,
        enabled: true,
        problems: [],
        binding: null,
        updatedAt: null
      })
      expect(a.description.length).toBeGreaterThan(20)
    }
  })

  test("custom agents appear after creation, with their audience, version and validity", async () => {
    await createAgent(api, "catalog-runtime")
    await createAgent(api, "catalog-member", { audience: "member", tools: ["anything-goes-for-members"] })
    await saveAgent(api, "catalog-runtime", { instructions: "v2\n" })
    const agents = await catalog()
    expect(agents.find((a) => a.name === "catalog-runtime")).toEqual({
      name: "catalog-runtime",
      builtin: false,
      description: "The catalog-runtime agent.",
      audience: "runtime",
      version: 2,
      enabled: true,
      problems: [],
      binding: null,
      updatedAt: expect.any(String)
    })
    expect(agents.find((a) => a.name === "catalog-member")).toMatchObject({ builtin: false, audience: "member", version: 1, problems: [] })
  })

  test("an installation-default binding shows as binding; a project's binding does not", async () => {
    await createAgent(api, "catalog-bound")
    await api.sql(`INSERT INTO admin.agent_binding (agent_name, project_id, provider_id, model_id, thinking, updated_by)
      VALUES ('catalog-bound', 'project-1', 'p1', 'm1', NULL, 'manager')`)
    expect((await catalog()).find((a) => a.name === "catalog-bound")?.binding).toBeNull()
    await api.sql(`INSERT INTO admin.agent_binding (agent_name, project_id, provider_id, model_id, thinking, updated_by)
      VALUES ('catalog-bound', '', 'anthropic', 'claude', 'high', 'manager')`)
    expect((await catalog()).find((a) => a.name === "catalog-bound")?.binding).toMatchObject({
      agentName: "catalog-bound",
      projectId: "",
      providerId: "anthropic",
      modelId: "claude",
      thinking: "high"
    })
    const view = (await get("/api/admin/agents/catalog-bound")).json().agent
    expect(view.bindings.map((b: { projectId: string }) => b.projectId)).toEqual(["", "project-1"])
  })
})

describe("GET /api/admin/agents/context", () => {
  test("kernel tools, shared skills (built-in and custom) and the reserved built-in names", async () => {
    await createSkill(api, "context-skill")
    const r = await get("/api/admin/agents/context")
    expect(r.status).toBe(200)
    const ctx = r.json()
    expect(ctx.kernelTools).toEqual([...KERNEL_TOOLS])
    expect(ctx.kernelTools).toEqual(["read", "ls", "grep", "find", "write", "edit", "shell", "git", "codemode"])
    for (const name of BUILTIN_SKILLS) {
      expect(ctx.sharedSkills).toContainEqual({ name, description: expect.any(String), builtin: true })
    }
    expect(ctx.sharedSkills).toContainEqual({ name: "context-skill", description: "The context-skill skill.", builtin: false })
    expect([...ctx.reservedNames].sort()).toEqual(BUILTINS)
  })
})

describe("GET /api/admin/agents/:name", () => {
  test("a custom agent: manifest, instructions, local skills, package files, bindings", async () => {
    const files = createAgentFiles("read-me", {
      thinking: "low",
      skills: ["cite-evidence"],
      extra: { "skills/triage/SKILL.md": "Sort by severity.\n", "commands/scan.md": "# Scan\n" }
    })
    expect((await send("POST", "/api/admin/agents", files)).status).toBe(201)
    const r = await get("/api/admin/agents/read-me")
    expect(r.status).toBe(200)
    const agent = r.json().agent
    expect(agent).toMatchObject({
      name: "read-me",
      builtin: false,
      audience: "runtime",
      version: 1,
      enabled: true,
      problems: [],
      bindings: []
    })
    expect(agent.package).toEqual({
      name: "read-me",
      version: 1,
      description: "The read-me agent.",
      tools: ["read", "grep"],
      skills: ["cite-evidence"],
      thinking: "low",
      audience: "runtime",
      instructions: "You are read-me. Read WORKSPACE.md first.\n",
      localSkills: [{ name: "triage", content: "Sort by severity.\n" }],
      files: [{ path: "commands/scan.md", content: "# Scan\n" }]
    })
    expect(agent.files.map((f: { path: string }) => f.path)).toEqual(["read-me.md", "skills/triage/SKILL.md", "commands/scan.md"])
  })

  test("a built-in agent, with its package files", async () => {
    const agent = (await get("/api/admin/agents/codebase-inventory")).json().agent
    expect(agent).toMatchObject({ name: "codebase-inventory", builtin: true, version: 3, problems: [] })
    const paths = agent.files.map((f: { path: string }) => f.path)
    expect(paths[0]).toBe("codebase-inventory.md")
    expect(paths).toContain("skills/report-format/SKILL.md")
    expect(paths).toContain("commands/inventory.md")
    expect(paths).toContain("scripts/find-manifests.sh")
  })

  test("an unknown agent → 404 agent-not-found", async () => {
    const r = await get("/api/admin/agents/no-such-agent")
    expect(r.status).toBe(404)
    expect(r.json()).toEqual({ error: { code: "agent-not-found", message: 'no agent "no-such-agent"' } })
  })
})

describe("POST /api/admin/agents (create)", () => {
  test("→ 201 with the agent at version 1, recorded as created by the manager", async () => {
    const r = await send("POST", "/api/admin/agents", createAgentFiles("created-one"))
    expect(r.status).toBe(201)
    expect(r.json().agent).toMatchObject({ name: "created-one", builtin: false, version: 1, enabled: true, problems: [] })
    const versions = (await get("/api/admin/agents/created-one/versions")).json().versions
    expect(versions).toEqual([{ version: 1, savedBy: "manager", savedAt: expect.any(String), note: "created", current: true }])
  })

  test("a built-in's name → 409 builtin-read-only, nothing saved", async () => {
    const before = await storeFingerprint(api)
    const r = await send("POST", "/api/admin/agents", createAgentFiles("codebase-inventory"))
    expect(r.status).toBe(409)
    expect(r.json().error.code).toBe("builtin-read-only")
    expect(await storeFingerprint(api)).toBe(before)
  })

  test("a name that exists → 409 agent-exists, the agent unchanged", async () => {
    await createAgent(api, "created-twice")
    const before = await storeFingerprint(api)
    const r = await send("POST", "/api/admin/agents", createAgentFiles("created-twice", { instructions: "Other.\n" }))
    expect(r.status).toBe(409)
    expect(r.json()).toEqual({ error: { code: "agent-exists", message: 'an agent named "created-twice" already exists' } })
    expect(await storeFingerprint(api)).toBe(before)
  })

  test("bodies that are not a package → 400 naming the problem", async () => {
    const noFiles = await send("POST", "/api/admin/agents", {})
    expect(noFiles.status).toBe(400)
    expect(noFiles.json().error.problems).toContainEqual({ path: "files", message: expect.any(String) })
    const empty = await send("POST", "/api/admin/agents", { files: [] })
    expect(empty.status).toBe(400)
    expect(empty.json().error.problems).toEqual([{ path: "files", message: "must hold at least the <name>.md file" }])
    const mismatch = await send("POST", "/api/admin/agents", {
      files: [{ path: "x-agent.md", content: createAgentFiles("y-agent").files[0]!.content }]
    })
    expect(mismatch.status).toBe(400)
    expect(mismatch.json().error.problems.map((p: { path: string }) => p.path)).toContain("x-agent.md#name")
  })
})

describe("PUT /api/admin/agents/:name (save)", () => {
  test("each save is a new version and becomes current", async () => {
    await createAgent(api, "saved")
    expect((await saveAgent(api, "saved", { instructions: "Two.\n" })).version).toBe(2)
    expect((await saveAgent(api, "saved", { instructions: "Three.\n" })).version).toBe(3)
    const agent = (await get("/api/admin/agents/saved")).json().agent
    expect(agent.version).toBe(3)
    expect(agent.package.instructions).toBe("Three.\n")
    expect((await definitionOf("saved")).instructions).toBe("Three.\n")
    const versions = (await get("/api/admin/agents/saved/versions")).json().versions
    expect(versions.map((v: { version: number; note: string; current: boolean }) => [v.version, v.note, v.current])).toEqual([
      [3, "saved", true],
      [2, "saved", false],
      [1, "created", false]
    ])
  })

  test("renaming through save → 400 at <new>.md#name, nothing saved", async () => {
    await createAgent(api, "rename-me")
    const before = await storeFingerprint(api)
    const r = await send("PUT", "/api/admin/agents/rename-me", createAgentFiles("renamed"))
    expect(r.status).toBe(400)
    expect(r.json().error.problems).toEqual([{ path: "renamed.md#name", message: 'must stay "rename-me" (copy the agent to rename it)' }])
    expect(await storeFingerprint(api)).toBe(before)
  })

  test("an unknown agent → 404; a built-in → 409", async () => {
    expect((await send("PUT", "/api/admin/agents/never-created", createAgentFiles("never-created"))).status).toBe(404)
    const builtin = await send("PUT", "/api/admin/agents/codebase-inventory", createAgentFiles("codebase-inventory"))
    expect(builtin.status).toBe(409)
    expect(builtin.json().error.code).toBe("builtin-read-only")
  })
})

describe("PATCH /api/admin/agents/:name (enable / disable)", () => {
  test("disabled: the catalog says so and resolving fails with reason disabled (422); enabled again resolves", async () => {
    await createAgent(api, "switchable")
    const off = await send("PATCH", "/api/admin/agents/switchable", { enabled: false })
    expect(off.status).toBe(200)
    expect(off.json().agent).toMatchObject({ name: "switchable", enabled: false, version: 1 })
    expect((await catalog()).find((a) => a.name === "switchable")?.enabled).toBe(false)
    const resolved = await get("/api/admin/agents/switchable/definition")
    expect(resolved.status).toBe(422)
    expect(resolved.json()).toEqual({ error: { code: "agent-unavailable", message: 'agent "switchable" is disabled', problems: [] } })
    // Disabling records no version.
    expect((await get("/api/admin/agents/switchable/versions")).json().versions).toHaveLength(1)
    expect((await send("PATCH", "/api/admin/agents/switchable", { enabled: true })).json().agent.enabled).toBe(true)
    expect((await definitionOf("switchable")).id).toBe("switchable")
  })

  test("a built-in → 409; an unknown agent → 404; a body without a boolean → 400", async () => {
    expect((await send("PATCH", "/api/admin/agents/risk-quality", { enabled: false })).status).toBe(409)
    expect((await definitionOf("risk-quality")).id).toBe("risk-quality")
    expect((await send("PATCH", "/api/admin/agents/never-created", { enabled: false })).status).toBe(404)
    await createAgent(api, "switch-bad-body")
    const bad = await send("PATCH", "/api/admin/agents/switch-bad-body", { enabled: "no" })
    expect(bad.status).toBe(400)
    expect(bad.json().error.problems.map((p: { path: string }) => p.path)).toEqual(["enabled"])
  })
})

describe("DELETE /api/admin/agents/:name", () => {
  test("a custom agent → 204, then gone (404, not in the catalog); again → 404", async () => {
    await createAgent(api, "doomed")
    expect((await send("DELETE", "/api/admin/agents/doomed")).status).toBe(204)
    expect((await get("/api/admin/agents/doomed")).status).toBe(404)
    expect((await catalog()).map((a) => a.name)).not.toContain("doomed")
    expect((await send("DELETE", "/api/admin/agents/doomed")).status).toBe(404)
  })

  test("a built-in → 409, still there", async () => {
    const r = await send("DELETE", "/api/admin/agents/domain-rules")
    expect(r.status).toBe(409)
    expect(r.json().error.code).toBe("builtin-read-only")
    expect((await get("/api/admin/agents/domain-rules")).status).toBe(200)
  })
})

describe("POST /api/admin/agents/:name/copy", () => {
  test("a built-in becomes a custom agent with the same package; the built-in stays read-only", async () => {
    const r = await send("POST", "/api/admin/agents/codebase-inventory/copy", { name: "my-inventory" })
    expect(r.status).toBe(201)
    const copy = r.json().agent
    expect(copy).toMatchObject({ name: "my-inventory", builtin: false, version: 1, enabled: true, problems: [] })
    const original = (await get("/api/admin/agents/codebase-inventory")).json().agent
    expect(copy.package).toEqual({ ...original.package, name: "my-inventory" })
    const versions = (await get("/api/admin/agents/my-inventory/versions")).json().versions
    expect(versions[0].note).toBe("copied from codebase-inventory v3")
    // Same job definition, under the new id, as the copy's first version.
    expect(await definitionOf("my-inventory")).toEqual({ ...(await definitionOf("codebase-inventory")), id: "my-inventory", version: 1 })
    // The copy is editable, the built-in is not.
    expect((await saveAgent(api, "my-inventory", { instructions: "Mine now.\n" })).version).toBe(2)
    expect((await send("PUT", "/api/admin/agents/codebase-inventory", createAgentFiles("codebase-inventory"))).status).toBe(409)
    expect((await get("/api/admin/agents/codebase-inventory")).json().agent.package).toEqual(original.package)
  })

  test("a custom agent copies its current version", async () => {
    await createAgent(api, "copy-source")
    await saveAgent(api, "copy-source", { instructions: "Current.\n" })
    const r = await send("POST", "/api/admin/agents/copy-source/copy", { name: "copy-target" })
    expect(r.status).toBe(201)
    expect(r.json().agent.package.instructions).toBe("Current.\n")
    expect(r.json().agent.version).toBe(1)
  })

  test("to an existing name → 409; to a built-in's name → 409; to a bad name → 400; from an unknown agent → 404", async () => {
    await createAgent(api, "copy-a")
    await createAgent(api, "copy-b")
    expect((await send("POST", "/api/admin/agents/copy-a/copy", { name: "copy-b" })).json().error.code).toBe("agent-exists")
    expect((await send("POST", "/api/admin/agents/copy-a/copy", { name: "risk-quality" })).json().error.code).toBe("builtin-read-only")
    const bad = await send("POST", "/api/admin/agents/copy-a/copy", { name: "Bad Name" })
    expect(bad.status).toBe(400)
    expect(bad.json().error.problems.length).toBeGreaterThan(0)
    expect((await send("POST", "/api/admin/agents/nope-nope/copy", { name: "copy-c" })).status).toBe(404)
    expect((await send("POST", "/api/admin/agents/copy-a/copy", {})).status).toBe(400)
  })
})

describe("POST /api/admin/agents/preview (dry run)", () => {
  test("a valid draft: no problems and its job definition (version 0); nothing is saved", async () => {
    const before = await storeFingerprint(api)
    const catalogBefore = await catalog()
    const r = await send(
      "POST",
      "/api/admin/agents/preview",
      createAgentFiles("previewed", { skills: ["structured-report"], thinking: "high" })
    )
    expect(r.status).toBe(200)
    expect(r.json()).toEqual({
      problems: [],
      definition: {
        id: "previewed",
        version: 0,
        instructions: "You are previewed. Read WORKSPACE.md first.\n",
        skills: [{ name: "structured-report", content: builtinSkillContent("structured-report") }],
        tools: ["read", "grep"],
        thinking: "high"
      }
    })
    expect(await storeFingerprint(api)).toBe(before)
    expect(await catalog()).toEqual(catalogBefore)
    expect((await get("/api/admin/agents/previewed")).status).toBe(404)
  })

  test("an invalid draft: 200 with every problem and no definition; nothing saved", async () => {
    const before = await storeFingerprint(api)
    const r = await send(
      "POST",
      "/api/admin/agents/preview",
      createAgentFiles("preview-bad", { tools: ["read", "teleport"], skills: ["no-such-skill"] })
    )
    expect(r.status).toBe(200)
    expect(r.json().definition).toBeNull()
    expect(
      r
        .json()
        .problems.map((p: { path: string }) => p.path)
        .sort()
    ).toEqual(["preview-bad.md#skills.0", "preview-bad.md#tools.1"])
    expect(await storeFingerprint(api)).toBe(before)
  })
})

describe("GET /api/admin/agents/:name/definition", () => {
  test("the AgentDefinition: shared skills in order, then local skills by name, then package files by path", async () => {
    await createAgent(api, "defined", {
      tools: ["read", "shell"],
      skills: ["structured-report", "cite-evidence"],
      thinking: "medium",
      denyPatterns: ["rm\\s+-rf"],
      extra: {
        "skills/zeta/SKILL.md": "Zeta.\n",
        "skills/alpha/SKILL.md": "Alpha.\n",
        "workflows/flow.md": "1. Go\n",
        "commands/run.md": "# Run\n",
        "scripts/count.sh": "wc -l\n"
      }
    })
    expect(await definitionOf("defined")).toEqual({
      id: "defined",
      version: 1,
      instructions: "You are defined. Read WORKSPACE.md first.\n",
      skills: [
        { name: "structured-report", content: builtinSkillContent("structured-report") },
        { name: "cite-evidence", content: builtinSkillContent("cite-evidence") },
        { name: "alpha", content: "Alpha.\n" },
        { name: "zeta", content: "Zeta.\n" },
        { name: "command-run", content: "# Run\n" },
        { name: "script-count-sh", content: "Script `scripts/count.sh` from the agent package:\n\n```sh\nwc -l\n```" },
        { name: "workflow-flow", content: "1. Go\n" }
      ],
      tools: ["read", "shell"],
      denyCommandPatterns: ["rm\\s+-rf"],
      thinking: "medium"
    })
  })

  test("the version is the saved version number, not the front-matter label", async () => {
    await createAgent(api, "defined-versions")
    await saveAgent(api, "defined-versions", { instructions: "Second.\n" })
    await saveAgent(api, "defined-versions", { instructions: "Third.\n" })
    expect((await definitionOf("defined-versions")).version).toBe(3)
  })

  test("a built-in resolves (every kernel tool: no tools key)", async () => {
    const d = await definitionOf("codebase-inventory")
    expect(d.id).toBe("codebase-inventory")
    expect(d.version).toBe(3)
    expect("tools" in d).toBe(false)
    expect(d.skills.map((s: { name: string }) => s.name)).toContain("report-format")
  })

  test("a member agent → 422 (reason member)", async () => {
    await createAgent(api, "a-member", { audience: "member" })
    const r = await get("/api/admin/agents/a-member/definition")
    expect(r.status).toBe(422)
    expect(r.json()).toEqual({
      error: { code: "agent-unavailable", message: 'agent "a-member" is a member agent, not a runtime agent', problems: [] }
    })
  })

  test("an unknown agent → 422 agent-unavailable (reason unknown), not 404", async () => {
    const r = await get("/api/admin/agents/never-was/definition")
    expect(r.status).toBe(422)
    expect(r.json()).toEqual({ error: { code: "agent-unavailable", message: 'no agent "never-was"', problems: [] } })
  })

  test("an agent made invalid by the installation (a new shared skill takes its local skill's name) → 422 with the problems", async () => {
    await createAgent(api, "clashing", { extra: { "skills/clash-skill/SKILL.md": "Local.\n" } })
    expect((await definitionOf("clashing")).id).toBe("clashing")
    await createSkill(api, "clash-skill")
    const r = await get("/api/admin/agents/clashing/definition")
    expect(r.status).toBe(422)
    expect(r.json().error.code).toBe("agent-unavailable")
    expect(r.json().error.problems).toEqual([
      { path: "skills/clash-skill/SKILL.md", message: expect.stringContaining("already a shared skill") }
    ])
    expect((await catalog()).find((a) => a.name === "clashing")?.problems).toEqual(r.json().error.problems)
  })

  test("a new shared skill cannot make a read-only built-in agent invalid", async () => {
    // `report-format` is a local skill of every built-in agent; an admin cannot edit a built-in to rename it.
    const created = await api.request("POST", "/api/admin/agent-skills", {
      token: api.manager.token,
      json: { name: "report-format", content: "Ours.\n" }
    })
    try {
      const r = await get("/api/admin/agents/codebase-inventory/definition")
      expect(r.status).toBe(200)
      expect((await catalog()).filter((a) => a.builtin === true && a.problems.length > 0).map((a) => a.name)).toEqual([])
    } finally {
      if (created.status === 201) expect((await send("DELETE", "/api/admin/agent-skills/report-format")).status).toBe(204)
    }
  })
})

describe("GET /api/admin/agents/:name/definition: the model and thinking level a job would really get", () => {
  const jobModelOf = async (name: string, query = "") => {
    const r = await get(`/api/admin/agents/${name}/definition${query}`)
    expect(r.status).toBe(200)
    return r.json().model as Record<string, any>
  }
  const bind = async (agent: string, body: Record<string, unknown>, project = "") =>
    expect((await send("PUT", `/api/admin/agents/${agent}/bindings${project === "" ? "" : `/${project}`}`, body)).status).toBe(200)
  let provider: Promise<unknown> | undefined
  /** A custom provider whose model "gapped" has only off and high, and "full" has off, low, medium, high. */
  const thinkingProvider = () =>
    (provider ??= send("POST", "/api/admin/providers", {
      kind: "custom",
      id: "thinking-gw",
      api: "openai-completions",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: "sk-thinking-test",
      models: [
        { id: "gapped", contextWindow: 64000, maxTokens: 4000, thinkingLevels: ["off", "high"] },
        { id: "full", contextWindow: 64000, maxTokens: 4000, thinkingLevels: ["off", "low", "medium", "high"] }
      ]
    }).then((r) => expect(r.status).toBe(201)))

  test("no binding: the definition and why no job can start", async () => {
    await createAgent(api, "unbound-thinker", { thinking: "medium" })
    expect(await jobModelOf("unbound-thinker")).toEqual({
      projectId: "",
      binding: null,
      modelLevels: null,
      thinking: null,
      problem: expect.stringContaining('agent "unbound-thinker" has no model binding')
    })
  })

  test("the agent's medium on a model with off and high: the job gets high (nearest), clamped up", async () => {
    await thinkingProvider()
    await createAgent(api, "gapped-thinker", { thinking: "medium" })
    await bind("gapped-thinker", { providerId: "thinking-gw", modelId: "gapped" })
    expect(await jobModelOf("gapped-thinker")).toEqual({
      projectId: "",
      binding: { projectId: "", providerId: "thinking-gw", modelId: "gapped", thinking: null },
      modelLevels: ["off", "high"],
      thinking: { requested: "medium", requestedFrom: "agent", effective: "high", clamped: "up" },
      problem: null
    })
  })

  test("the binding's level overrides the agent's; ?project= shows that project's binding, else the installation default", async () => {
    await thinkingProvider()
    await createAgent(api, "project-thinker", { thinking: "high" })
    expect((await send("POST", "/api/projects", { id: "thinking-project", name: "Thinking" })).status).toBe(201)
    await bind("project-thinker", { providerId: "thinking-gw", modelId: "full", thinking: "off" })
    await bind("project-thinker", { providerId: "thinking-gw", modelId: "gapped" }, "thinking-project")
    expect((await jobModelOf("project-thinker")).thinking).toEqual({
      requested: "off",
      requestedFrom: "binding",
      effective: "off",
      clamped: "none"
    })
    expect(await jobModelOf("project-thinker", "?project=thinking-project")).toEqual({
      projectId: "thinking-project",
      binding: { projectId: "thinking-project", providerId: "thinking-gw", modelId: "gapped", thinking: null },
      modelLevels: ["off", "high"],
      thinking: { requested: "high", requestedFrom: "agent", effective: "high", clamped: "none" },
      problem: null
    })
    // A project without its own binding falls back to the installation default, as the worker does.
    expect((await jobModelOf("project-thinker", "?project=other")).binding).toMatchObject({ projectId: "", modelId: "full" })
  })

  test("an agent without a thinking level and a binding without one: off", async () => {
    await thinkingProvider()
    await createAgent(api, "quiet-thinker")
    await bind("quiet-thinker", { providerId: "thinking-gw", modelId: "full" })
    expect((await jobModelOf("quiet-thinker")).thinking).toEqual({
      requested: "off",
      requestedFrom: "default",
      effective: "off",
      clamped: "none"
    })
  })
})

describe("versions and restore", () => {
  test("GET …/versions lists every version, newest first, with savedBy, note and the current one", async () => {
    await createAgent(api, "historic", { instructions: "One.\n" })
    const other = await api.createUser("editor", ["agents.manage"])
    const r = await api.request("PUT", "/api/admin/agents/historic", {
      token: other.token,
      json: createAgentFiles("historic", { instructions: "Two.\n" })
    })
    expect(r.status).toBe(200)
    const versions = (await get("/api/admin/agents/historic/versions")).json().versions
    expect(versions).toEqual([
      { version: 2, savedBy: "editor", savedAt: expect.any(String), note: "saved", current: true },
      { version: 1, savedBy: "manager", savedAt: expect.any(String), note: "created", current: false }
    ])
  })

  test("GET …/versions/:version: the info and the package as it was", async () => {
    await createAgent(api, "versioned", { instructions: "First.\n" })
    await saveAgent(api, "versioned", { instructions: "Second.\n" })
    const r = await get("/api/admin/agents/versioned/versions/1")
    expect(r.status).toBe(200)
    const body = r.json()
    expect(body.info).toEqual({ version: 1, savedBy: "manager", savedAt: expect.any(String), note: "created", current: false })
    expect(body.view.package.instructions).toBe("First.\n")
    expect(body.view.version).toBe(1)
  })

  test("an unknown version → 404; a version that is not a number → 400; a built-in has no history (409)", async () => {
    await createAgent(api, "versioned-errors")
    const missing = await get("/api/admin/agents/versioned-errors/versions/99")
    expect(missing.status).toBe(404)
    expect(missing.json()).toEqual({ error: { code: "agent-version-not-found", message: 'agent "versioned-errors" has no version 99' } })
    for (const bad of ["abc", "0", "-1", "1.5"]) {
      const r = await get(`/api/admin/agents/versioned-errors/versions/${bad}`)
      expect(r.status).toBe(400)
      expect(r.json().error.problems).toEqual([{ path: "version", message: `"${bad}" is not a version number` }])
    }
    expect((await get("/api/admin/agents/never-created/versions")).status).toBe(404)
    expect((await get("/api/admin/agents/codebase-inventory/versions")).status).toBe(409)
  })

  test("restore makes v1 current: its definition equals v1's; the next save gets a new number", async () => {
    await createAgent(api, "restorable", { instructions: "Original.\n", thinking: "low" })
    const v1 = await definitionOf("restorable")
    await saveAgent(api, "restorable", { instructions: "Changed.\n", tools: ["read"] })
    await saveAgent(api, "restorable", { instructions: "Changed again.\n" })
    expect((await definitionOf("restorable")).instructions).toBe("Changed again.\n")

    const r = await send("POST", "/api/admin/agents/restorable/versions/1/restore")
    expect(r.status).toBe(200)
    expect(r.json().agent).toMatchObject({ name: "restorable", version: 1 })
    expect(await definitionOf("restorable")).toEqual(v1)
    const versions = (await get("/api/admin/agents/restorable/versions")).json().versions
    expect(versions.filter((v: { current: boolean }) => v.current).map((v: { version: number }) => v.version)).toEqual([1])
    expect(versions).toHaveLength(3)
    expect((await saveAgent(api, "restorable", { instructions: "Fourth.\n" })).version).toBe(4)
  })

  test("restore of an unknown version → 404, of a built-in → 409, with a bad number → 400", async () => {
    await createAgent(api, "restore-errors")
    expect((await send("POST", "/api/admin/agents/restore-errors/versions/7/restore")).status).toBe(404)
    expect((await send("POST", "/api/admin/agents/codebase-inventory/versions/1/restore")).status).toBe(409)
    expect((await send("POST", "/api/admin/agents/restore-errors/versions/x/restore")).status).toBe(400)
  })
})
