/**
 * Agents people already have: a corpus of Claude Code subagent files and 5 Agent Skills, written for
 * these tests in the shapes of public ones (test/agents/corpus/), all import through POST
 * /api/admin/agents/import and pass `kintsugi agents validate`; the tool mapping, the warnings (Claude
 * Code tools without an equivalent, dropped) and the notes are in the result; a strict import refuses
 * those tools; unknown tools are problems listing the allowed tools once, all in one round.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { readTree } from "../../src/agents/builtins.ts"
import { agentsValidate } from "../../src/agents/validateCommand.ts"
import { writeZip } from "../../src/agents/zip.ts"
import { PASSWORD, useApi } from "../support/api.ts"

setDefaultTimeout(60_000)

const api = useApi()
const CORPUS = join(import.meta.dir, "..", "agents", "corpus")
const AGENTS_DIR = join(CORPUS, "claude-agents")
const SKILLS_DIR = join(CORPUS, "agent-skills")
const agentFiles = readdirSync(AGENTS_DIR)
  .filter((f) => f.endsWith(".md"))
  .sort()
const skillDirs = readdirSync(SKILLS_DIR).sort()

const importFiles = (files: Array<{ path: string; content?: string; contentBase64?: string }>, strict?: boolean) =>
  api.request("POST", "/api/admin/agents/import", { token: api.manager.token, json: strict === undefined ? { files } : { files, strict } })
const asFiles = (dir: string, folder: string) =>
  readTree(dir).map((f) => ({ path: `${folder}/${f.path}`, contentBase64: Buffer.from(f.content).toString("base64") }))
const validate = async (target: string, strict?: boolean) => {
  const out: Array<string> = []
  const code = await agentsValidate(
    target,
    { out: (l) => out.push(l), err: (l) => out.push(l) },
    {},
    { mcpServers: "", ...(strict === undefined ? {} : { strict }) }
  )
  return { code, out }
}
const TEAM_LEAD = readFileSync(join(AGENTS_DIR, "team-lead.md"), "utf8")

describe("the corpus", () => {
  test("holds at least 10 Claude Code subagent files and 5 Agent Skills covering the keys seen in the wild", () => {
    expect(agentFiles.length).toBeGreaterThanOrEqual(10)
    expect(skillDirs.length).toBeGreaterThanOrEqual(5)
    const agentText = agentFiles.map((f) => readFileSync(join(AGENTS_DIR, f), "utf8")).join("\n")
    for (const key of ["name:", "description:", "tools:", "model:", "color:", "permissionMode:", "disallowedTools:", "hooks:", "maxTurns:"])
      expect(agentText).toContain(key)
    const skillText = skillDirs.map((d) => readFileSync(join(SKILLS_DIR, d, "SKILL.md"), "utf8")).join("\n")
    for (const key of ["name:", "description:", "license:", "allowed-tools:", "metadata:", "version:", "compatibility:"])
      expect(skillText).toContain(key)
    const trees = skillDirs.flatMap((d) => readTree(join(SKILLS_DIR, d)).map((f) => f.path))
    for (const folder of ["scripts/", "references/", "assets/"]) expect(trees.some((p) => p.startsWith(folder))).toBe(true)
  })
})

describe("Claude Code subagent files import via the API", () => {
  test.each(agentFiles)("%s imports (201) with its notes and tool mapping; a warning for each tool dropped", async (file) => {
    const r = await importFiles([{ path: file, content: readFileSync(join(AGENTS_DIR, file), "utf8") }])
    expect(r.status).toBe(201)
    const body = r.json<{
      agent: {
        name: string
        version: number
        problems: Array<unknown>
        package: { metadata?: Record<string, unknown>; tools?: Array<string> }
      }
      notes: Array<string>
      warnings: Array<string>
      toolMapping: Array<{ from: string; to: string | null }>
    }>()
    expect(body.agent.problems).toEqual([])
    expect(body.agent.name).toMatch(/^[a-z][a-z0-9-]*$/)
    // Every tool without a Kintsugi equivalent is named by exactly one warning.
    const dropped = body.toolMapping.filter((m) => m.to === null).map((m) => m.from)
    expect(body.warnings).toHaveLength(dropped.length)
    for (const t of dropped) expect(body.warnings.filter((w) => w.includes(`tool "${t}" dropped`))).toHaveLength(1)
  })

  test("a real Claude Code subagent (team-lead.md: Agent, TodoWrite, WebFetch): imported with one warning per tool dropped, WebFetch as web_fetch", async () => {
    const r = await importFiles([{ path: "team-lead.md", content: TEAM_LEAD }])
    expect(r.status).toBe(201)
    const body = r.json<{
      agent: { name: string; package: { tools?: Array<string>; metadata?: Record<string, unknown> } }
      notes: Array<string>
      warnings: Array<string>
      toolMapping: Array<{ from: string; to: string | null }>
    }>()
    expect(body.agent.name).toBe("team-lead")
    expect(body.agent.package.tools).toEqual(["read", "grep", "find", "shell", "web_fetch"])
    expect(body.agent.package.metadata).toEqual({ model: "opus", color: "purple" })
    expect(body.warnings).toEqual([
      'team-lead.md: tool "Agent" dropped: it starts subagents in Claude Code; Kintsugi has no equivalent',
      'team-lead.md: tool "TodoWrite" dropped: it keeps the session\'s to-do list in Claude Code; Kintsugi has no equivalent'
    ])
    expect(body.toolMapping).toContainEqual({ from: "WebFetch", to: "web_fetch" })
    expect(body.toolMapping).toContainEqual({ from: "Agent", to: null })
    // The web tool still needs the project's grant: the note says so.
    expect(body.notes.join("\n")).toContain("a job gets web_fetch only where its project's web settings grant web tools to this agent")
    // Short lines: no warning or note repeats the list of allowed tools.
    for (const line of [...body.warnings, ...body.notes]) expect(line).not.toContain("mcp__<server>")
  })

  test("strict: the same file is refused (400), one short problem per tool without an equivalent, nothing saved", async () => {
    const strict = TEAM_LEAD.replace("name: team-lead", "name: team-lead-strict")
    const r = await importFiles([{ path: "team-lead-strict.md", content: strict }], true)
    expect(r.status).toBe(400)
    const problems = r.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems
    expect(problems.map((p) => p.path)).toEqual(["team-lead-strict.md#tools.0", "team-lead-strict.md#tools.6"])
    expect(problems[0]?.message).toBe(
      'unknown tool "Agent": it starts subagents in Claude Code; Kintsugi has no equivalent (an import that is not strict drops it with a warning)'
    )
    for (const p of problems) expect(p.message.length).toBeLessThan(160)
    expect((await api.request("GET", "/api/admin/agents/team-lead-strict", { token: api.manager.token })).status).toBe(404)
    // strict: false is the default.
    const relaxed = await importFiles([{ path: "team-lead-strict.md", content: strict }], false)
    expect(relaxed.status).toBe(201)
  })

  test("the mapping, metadata, default version, name from the file and plugin prefix, as stored", async () => {
    const get = async (name: string) =>
      (await api.request("GET", `/api/admin/agents/${name}`, { token: api.manager.token })).json<{ agent: Record<string, any> }>().agent
    const reviewer = await get("code-reviewer")
    expect(reviewer.package.tools).toEqual(["read", "grep", "find", "shell"])
    expect(reviewer.package.metadata).toEqual({ model: "sonnet" })
    expect(reviewer.package.version).toBe(1)
    // The stored file round-trips: metadata is written back to the front matter.
    expect(reviewer.files[0].content).toContain("  model: sonnet\n")
    const docs = await get("docs-writer")
    expect(docs.package.tools).toEqual(["read", "write", "edit"])
    expect((await get("code-simplifier")).package.metadata).toEqual({ model: "opus" })
    const git = await get("git-helper")
    expect(git.package.metadata).toMatchObject({
      model: "haiku",
      disallowedTools: "Write",
      maxTurns: 20,
      hooks: { PreToolUse: [{ matcher: "Bash" }] }
    })
    expect((await get("test-runner")).package.tools).toBeUndefined()

    const r = await importFiles([{ path: "refactorer.md", content: readFileSync(join(AGENTS_DIR, "refactorer.md"), "utf8") }])
    const body = r.json<{ notes: Array<string>; toolMapping: Array<{ from: string; to: string }> }>()
    expect(body.toolMapping).toEqual([
      { from: "Read", to: "read" },
      { from: "Edit", to: "edit" },
      { from: "MultiEdit", to: "edit" },
      { from: "Write", to: "write" },
      { from: "Grep", to: "grep" },
      { from: "Glob", to: "find" },
      { from: "LS", to: "ls" }
    ])
    expect(body.notes.join("\n")).toContain('"permissionMode: acceptEdits" is not used by Kintsugi; kept in metadata.permissionMode')
  })

  test("unknown tools are problems listing the allowed tools and the mapping once, reported with every other problem in one round", async () => {
    const r = await importFiles([
      {
        path: "researcher.md",
        content:
          "---\nname: researcher\ndescription: Researches.\ntools: Read, WebFetch, WebSearch, Browser, Bash(git:*)\nthinking: lots\nmodel: sonnet\n---\n\n"
      }
    ])
    expect(r.status).toBe(400)
    const problems = r.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems
    const at = (path: string) =>
      problems
        .filter((p) => p.path === path)
        .map((p) => p.message)
        .join("\n")
    // WebFetch and WebSearch map to the web tools: no problem.
    expect(at("researcher.md#tools.1") + at("researcher.md#tools.2")).toBe("")
    expect(at("researcher.md#tools.3")).toContain('unknown tool "Browser"')
    expect(at("researcher.md#tools.3")).toContain("mcp__<server>__<tool>")
    expect(at("researcher.md#tools.3")).toContain(
      "Read→read, Grep→grep, Glob→find, LS→ls, Bash→shell, Write→write, Edit/MultiEdit→edit, WebFetch→web_fetch, WebSearch→web_search"
    )
    expect(at("researcher.md#tools.4")).toBe(
      'unknown tool "Bash(git:*)" (the tools a runtime agent may use are listed at researcher.md#tools.3); tool patterns are not supported: grant the tool itself and restrict commands with deny-command-patterns'
    )
    expect(at("researcher.md#thinking")).not.toBe("")
    expect(at("researcher.md#body")).not.toBe("")
    // Nothing was saved.
    expect((await api.request("GET", "/api/admin/agents/researcher", { token: api.manager.token })).status).toBe(404)
  })
})

describe("the portal's import form", () => {
  test("team-lead.md imports with its warnings listed once; the strict checkbox refuses it instead", async () => {
    const session = await api.signIn(api.manager.username, PASSWORD)
    const form = await api.request("GET", "/agents/-/import", { session })
    expect(form.text).toContain('<input type="checkbox" name="strict" value="1">')
    const upload = (name: string, strict: boolean) => {
      const data = new FormData()
      data.append("files", new File([TEAM_LEAD.replace("name: team-lead", `name: ${name}`)], `${name}.md`, { type: "text/markdown" }))
      if (strict) data.append("strict", "1")
      return data
    }
    const strict = await api.request("POST", "/agents/-/import", {
      session,
      form: upload("portal-lead", true),
      headers: { "hx-request": "true" }
    })
    expect(strict.text).toContain("Nothing was imported.")
    expect(strict.text).toContain("portal-lead.md#tools.0")
    expect(strict.text).toContain("portal-lead.md#tools.6")
    expect((await api.request("GET", "/api/admin/agents/portal-lead", { token: api.manager.token })).status).toBe(404)

    const relaxed = await api.request("POST", "/agents/-/import", {
      session,
      form: upload("portal-lead", false),
      headers: { "hx-request": "true" }
    })
    expect(relaxed.text).toContain("Agent imported.")
    expect(relaxed.text).toContain("Imported without 2 tools:")
    // Each dropped tool named once, in its warning (and as "dropped" in the mapping table).
    expect(relaxed.text.split("tool &quot;Agent&quot; dropped").length - 1).toBe(1)
    expect(relaxed.text).toContain("<td>dropped</td>")
    expect(relaxed.text).toContain("<td>web_fetch</td>")
    expect(relaxed.text).not.toContain("mcp__&lt;server&gt;")
  })
})

describe("Agent Skills import as shared skills", () => {
  test.each(skillDirs)("%s (its folder with resources) imports (201) as a shared skill", async (dir) => {
    const r = await importFiles(asFiles(join(SKILLS_DIR, dir), dir))
    expect(r.status).toBe(201)
    const body = r.json<{ skill: { name: string; resources: Array<{ path: string }> }; created: boolean }>()
    expect(body.skill.name).toBe(dir)
    expect(body.created).toBe(true)
    expect(body.skill.resources.map((x) => x.path).sort()).toEqual(
      readTree(join(SKILLS_DIR, dir))
        .map((f) => f.path)
        .filter((p) => p !== "SKILL.md")
        .sort()
    )
  })

  test("license, version, metadata and mapped allowed-tools are kept; binary assets stored verbatim; a ZIP and a lone SKILL.md import too", async () => {
    const skill = async (name: string) =>
      (await api.request("GET", `/api/admin/agent-skills/${name}`, { token: api.manager.token })).json<{ skill: Record<string, any> }>()
        .skill
    const pdf = await skill("pdf-processing")
    expect(pdf.license).toBe("Proprietary. LICENSE.txt has complete terms")
    expect(pdf.content).toContain("# PDF Processing")
    expect(pdf.content).not.toContain("license:")
    const changelog = await skill("changelog-writer")
    expect(changelog.skillVersion).toBe("2.0.0")
    expect(changelog.metadata).toEqual({ "allowed-tools": ["read", "write"], compatibility: "Requires git" })
    const webapp = await skill("webapp-testing")
    expect(webapp.skillVersion).toBe("1.2")
    expect(webapp.metadata).toEqual({ author: "example-org", version: "1.2", "allowed-tools": ["read", "shell", "grep"] })
    const brand = await api.runtime.runPromise(
      (await import("effect")).Effect.flatMap((await import("../../src/agents/SkillStore.ts")).SkillStore, (s) =>
        s.resources(["brand-guidelines"])
      )
    )
    expect(Buffer.from(brand.get("brand-guidelines")![0]!.content)).toEqual(
      readFileSync(join(SKILLS_DIR, "brand-guidelines", "assets", "logo.png"))
    )

    const zip = writeZip(readTree(join(SKILLS_DIR, "data-analysis")).map((f) => ({ path: `data-analysis/${f.path}`, content: f.content })))
    const z = await api.request("POST", "/api/admin/agents/import", {
      token: api.manager.token,
      json: { zip: Buffer.from(zip).toString("base64") }
    })
    expect(z.status).toBe(201)
    expect(z.json<{ created: boolean }>().created).toBe(false)
    const lone = await importFiles([
      { path: "SKILL.md", content: "---\nname: lone-skill\ndescription: A skill on its own.\n---\nDo the thing.\n" }
    ])
    expect(lone.status).toBe(201)
    // An agent can list an imported skill.
    const agent = await importFiles([
      {
        path: "uses-skill.md",
        content: "---\nname: uses-skill\ndescription: Uses it.\ntools: Read\nskills: [data-analysis, lone-skill]\n---\nWork.\n"
      }
    ])
    expect(agent.status).toBe(201)
  })

  test("a SKILL.md with problems: every one at once, nothing saved", async () => {
    const r = await importFiles([
      { path: "SKILL.md", content: "---\nname: Bad Name\nlicense: 3\n---\n\n" },
      { path: "../escape.txt", content: "x" }
    ])
    expect(r.status).toBe(400)
    const paths = r
      .json<{ error: { problems: Array<{ path: string }> } }>()
      .error.problems.map((p) => p.path)
      .sort()
    expect(paths).toEqual(["../escape.txt", "SKILL.md#body", "SKILL.md#description", "SKILL.md#name"])
  })
})

describe("the CLI agents validate", () => {
  test.each(agentFiles)("accepts the Claude Code subagent file %s", async (file) => {
    const { code, out } = await validate(join(AGENTS_DIR, file))
    expect(out.filter((l) => !/^(note|warning|tools|ok):/.test(l))).toEqual([])
    expect(code).toBe(0)
  })

  test("team-lead.md: a warning per tool dropped and ok; with --strict the two problems and exit 1", async () => {
    const relaxed = await validate(join(AGENTS_DIR, "team-lead.md"))
    expect(relaxed.code).toBe(0)
    expect(relaxed.out.filter((l) => l.startsWith("warning:"))).toHaveLength(2)
    expect(relaxed.out).toContain(
      "tools: Agent→(dropped), Read→read, Grep→grep, Glob→find, Bash→shell, WebFetch→web_fetch, TodoWrite→(dropped)"
    )
    expect(relaxed.out.at(-1)).toBe("ok: team-lead v1 (runtime)")
    const strict = await validate(join(AGENTS_DIR, "team-lead.md"), true)
    expect(strict.code).toBe(1)
    expect(strict.out.filter((l) => l.startsWith("team-lead.md#tools."))).toEqual([
      'team-lead.md#tools.0: unknown tool "Agent": it starts subagents in Claude Code; Kintsugi has no equivalent (an import that is not strict drops it with a warning)',
      'team-lead.md#tools.6: unknown tool "TodoWrite": it keeps the session\'s to-do list in Claude Code; Kintsugi has no equivalent (an import that is not strict drops it with a warning)'
    ])
  })

  test.each(skillDirs)("accepts the Agent Skill folder %s and its SKILL.md alone", async (dir) => {
    const folder = await validate(join(SKILLS_DIR, dir))
    expect(folder.code).toBe(0)
    expect(folder.out.at(-1)).toContain(`ok: ${dir}`)
    expect(folder.out.at(-1)).toContain("(shared skill)")
    expect((await validate(join(SKILLS_DIR, dir, "SKILL.md"))).code).toBe(0)
  })

  test("shows the mapping", async () => {
    const { out } = await validate(join(AGENTS_DIR, "code-reviewer.md"))
    expect(out).toContain("tools: Read→read, Grep→grep, Glob→find, Bash→shell")
  })
})

describe("export in the Claude Code format", () => {
  test("?format=claude writes one subagent file that imports back to the same tools and metadata", async () => {
    await importFiles([{ path: "security-auditor.md", content: readFileSync(join(AGENTS_DIR, "security-auditor.md"), "utf8") }])
    const r = await api.request("GET", "/api/admin/agents/security-auditor/export?format=claude", { token: api.reader.token })
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toBe("text/markdown; charset=utf-8")
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="security-auditor.md"')
    expect(r.text).toContain('tools: "Read, Grep, Glob"\n')
    expect(r.text).toContain("model: opus\n")
    expect(r.text).toContain("color: red\n")
    expect(r.text).not.toContain("audience")
    const before = (await api.request("GET", "/api/admin/agents/security-auditor", { token: api.reader.token })).json<{
      agent: Record<string, any>
    }>().agent
    const again = await importFiles([{ path: "security-auditor.md", content: r.text }])
    expect(again.status).toBe(201)
    const after = again.json<{ agent: Record<string, any> }>().agent
    // The same package: importing it back adds no version (a no-op save never does).
    expect(after.version).toBe(before.version)
    expect(after.package).toEqual(before.package)
  })

  test("kernel tools without a Claude equivalent are named in a comment; local skills become sections; a bad format is 400", async () => {
    const md =
      "---\nname: native-one\nversion: 3\ndescription: Native.\ntools: [read, git, codemode]\nmetadata:\n  audience: runtime\n---\nWork carefully.\n"
    expect(
      (
        await importFiles([
          { path: "native-one.md", content: md },
          { path: "skills/notes/SKILL.md", content: "Take notes.\n" }
        ])
      ).status
    ).toBe(201)
    const r = await api.request("GET", "/api/admin/agents/native-one/export?format=claude", { token: api.reader.token })
    expect(r.text).toBe(
      '---\nname: native-one\ndescription: "Native."\ntools: "Read"\n# Kintsugi tools without a Claude Code equivalent, left out: git, codemode\n---\nWork carefully.\n\n\n## Skill: notes\n\nTake notes.\n'
    )
    expect((await api.request("GET", "/api/admin/agents/native-one/export?format=yaml", { token: api.reader.token })).status).toBe(400)
    expect((await api.request("GET", "/api/admin/agents/architecture-map/export?format=claude", { token: api.reader.token })).status).toBe(
      200
    )
  })
})
