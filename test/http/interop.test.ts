/**
 * Agents people already have (issue 16, Interop): a corpus of 10 Claude Code subagent files and 5
 * Agent Skills, written for these tests in the shapes of public ones (test/agents/corpus/), all import
 * through POST /api/admin/agents/import and pass `kintsugi agents validate`; the tool mapping and the
 * notes are in the result; unknown tools are problems showing the mapping, all in one round.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { readTree } from "../../src/agents/builtins.ts"
import { agentsValidateMain } from "../../src/agents/validateCommand.ts"
import { writeZip } from "../../src/agents/zip.ts"
import { useApi } from "../support/api.ts"

setDefaultTimeout(60_000)

const api = useApi()
const CORPUS = join(import.meta.dir, "..", "agents", "corpus")
const AGENTS_DIR = join(CORPUS, "claude-agents")
const SKILLS_DIR = join(CORPUS, "agent-skills")
const agentFiles = readdirSync(AGENTS_DIR).filter((f) => f.endsWith(".md")).sort()
const skillDirs = readdirSync(SKILLS_DIR).sort()

const importFiles = (files: Array<{ path: string; content?: string; contentBase64?: string }>) =>
  api.request("POST", "/api/admin/agents/import", { token: api.manager.token, json: { files } })
const asFiles = (dir: string, folder: string) =>
  readTree(dir).map((f) => ({ path: `${folder}/${f.path}`, contentBase64: Buffer.from(f.content).toString("base64") }))
const validate = async (target: string) => {
  const out: Array<string> = []
  const code = await agentsValidateMain([target], { out: (l) => out.push(l), err: (l) => out.push(l) }, {}, { mcpServers: "" })
  return { code, out }
}

describe("the corpus", () => {
  test("holds at least 10 Claude Code subagent files and 5 Agent Skills covering the keys seen in the wild", () => {
    expect(agentFiles.length).toBeGreaterThanOrEqual(10)
    expect(skillDirs.length).toBeGreaterThanOrEqual(5)
    const agentText = agentFiles.map((f) => readFileSync(join(AGENTS_DIR, f), "utf8")).join("\n")
    for (const key of ["name:", "description:", "tools:", "model:", "color:", "permissionMode:", "disallowedTools:", "hooks:", "maxTurns:"]) expect(agentText).toContain(key)
    const skillText = skillDirs.map((d) => readFileSync(join(SKILLS_DIR, d, "SKILL.md"), "utf8")).join("\n")
    for (const key of ["name:", "description:", "license:", "allowed-tools:", "metadata:", "version:", "compatibility:"]) expect(skillText).toContain(key)
    const trees = skillDirs.flatMap((d) => readTree(join(SKILLS_DIR, d)).map((f) => f.path))
    for (const folder of ["scripts/", "references/", "assets/"]) expect(trees.some((p) => p.startsWith(folder))).toBe(true)
  })
})

describe("Claude Code subagent files import via the API", () => {
  test.each(agentFiles)("%s imports (201) with its notes and tool mapping", async (file) => {
    const r = await importFiles([{ path: file, content: readFileSync(join(AGENTS_DIR, file), "utf8") }])
    expect(r.status).toBe(201)
    const body = r.json<{ agent: { name: string; version: number; problems: Array<unknown>; package: { metadata?: Record<string, unknown>; tools?: Array<string> } }; notes: Array<string>; toolMapping: Array<{ from: string; to: string | null }> }>()
    expect(body.agent.problems).toEqual([])
    expect(body.agent.name).toMatch(/^[a-z][a-z0-9-]*$/)
    expect(body.toolMapping.every((m) => m.to !== null)).toBe(true)
  })

  test("the mapping, metadata, default version, name from the file and plugin prefix, as stored", async () => {
    const get = async (name: string) => (await api.request("GET", `/api/admin/agents/${name}`, { token: api.manager.token })).json<{ agent: Record<string, any> }>().agent
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
    expect(git.package.metadata).toMatchObject({ model: "haiku", disallowedTools: "Write", maxTurns: 20, hooks: { PreToolUse: [{ matcher: "Bash" }] } })
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

  test("unknown tools are problems showing the mapping, reported with every other problem in one round", async () => {
    const r = await importFiles([{
      path: "researcher.md",
      content: "---\nname: researcher\ndescription: Researches.\ntools: Read, WebFetch, WebSearch, Bash(git:*)\nthinking: lots\nmodel: sonnet\n---\n\n"
    }])
    expect(r.status).toBe(400)
    const problems = r.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems
    const at = (path: string) => problems.filter((p) => p.path === path).map((p) => p.message).join("\n")
    expect(at("researcher.md#tools.1")).toContain('unknown tool "WebFetch"')
    expect(at("researcher.md#tools.1")).toContain("Read→read, Grep→grep, Glob→find, LS→ls, Bash→shell, Write→write, Edit/MultiEdit→edit")
    expect(at("researcher.md#tools.2")).toContain('unknown tool "WebSearch"')
    expect(at("researcher.md#tools.3")).toContain('tool patterns such as "Bash(git:*)" are not supported')
    expect(at("researcher.md#thinking")).not.toBe("")
    expect(at("researcher.md#body")).not.toBe("")
    // Nothing was saved.
    expect((await api.request("GET", "/api/admin/agents/researcher", { token: api.manager.token })).status).toBe(404)
  })
})

describe("Agent Skills import as shared skills", () => {
  test.each(skillDirs)("%s (its folder with resources) imports (201) as a shared skill", async (dir) => {
    const r = await importFiles(asFiles(join(SKILLS_DIR, dir), dir))
    expect(r.status).toBe(201)
    const body = r.json<{ skill: { name: string; resources: Array<{ path: string }> }; created: boolean }>()
    expect(body.skill.name).toBe(dir)
    expect(body.created).toBe(true)
    expect(body.skill.resources.map((x) => x.path).sort()).toEqual(readTree(join(SKILLS_DIR, dir)).map((f) => f.path).filter((p) => p !== "SKILL.md").sort())
  })

  test("license, version, metadata and mapped allowed-tools are kept; binary assets stored verbatim; a ZIP and a lone SKILL.md import too", async () => {
    const skill = async (name: string) => (await api.request("GET", `/api/admin/agent-skills/${name}`, { token: api.manager.token })).json<{ skill: Record<string, any> }>().skill
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
      (await import("effect")).Effect.flatMap((await import("../../src/agents/SkillStore.ts")).SkillStore, (s) => s.resources(["brand-guidelines"]))
    )
    expect(Buffer.from(brand.get("brand-guidelines")![0]!.content)).toEqual(readFileSync(join(SKILLS_DIR, "brand-guidelines", "assets", "logo.png")))

    const zip = writeZip(readTree(join(SKILLS_DIR, "data-analysis")).map((f) => ({ path: `data-analysis/${f.path}`, content: f.content })))
    const z = await api.request("POST", "/api/admin/agents/import", { token: api.manager.token, json: { zip: Buffer.from(zip).toString("base64") } })
    expect(z.status).toBe(201)
    expect(z.json<{ created: boolean }>().created).toBe(false)
    const lone = await importFiles([{ path: "SKILL.md", content: "---\nname: lone-skill\ndescription: A skill on its own.\n---\nDo the thing.\n" }])
    expect(lone.status).toBe(201)
    // An agent can list an imported skill.
    const agent = await importFiles([{ path: "uses-skill.md", content: "---\nname: uses-skill\ndescription: Uses it.\ntools: Read\nskills: [data-analysis, lone-skill]\n---\nWork.\n" }])
    expect(agent.status).toBe(201)
  })

  test("a SKILL.md with problems: every one at once, nothing saved", async () => {
    const r = await importFiles([
      { path: "SKILL.md", content: "---\nname: Bad Name\nlicense: 3\n---\n\n" },
      { path: "../escape.txt", content: "x" }
    ])
    expect(r.status).toBe(400)
    const paths = r.json<{ error: { problems: Array<{ path: string }> } }>().error.problems.map((p) => p.path).sort()
    expect(paths).toEqual(["../escape.txt", "SKILL.md#body", "SKILL.md#description", "SKILL.md#name"])
  })
})

describe("the CLI agents validate", () => {
  test.each(agentFiles)("accepts the Claude Code subagent file %s", async (file) => {
    const { code, out } = await validate(join(AGENTS_DIR, file))
    expect(out.filter((l) => !l.startsWith("note:") && !l.startsWith("tools:") && !l.startsWith("ok:"))).toEqual([])
    expect(code).toBe(0)
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
    const before = (await api.request("GET", "/api/admin/agents/security-auditor", { token: api.reader.token })).json<{ agent: Record<string, any> }>().agent
    const again = await importFiles([{ path: "security-auditor.md", content: r.text }])
    expect(again.status).toBe(201)
    const after = again.json<{ agent: Record<string, any> }>().agent
    // The same package: importing it back adds no version (a no-op save never does).
    expect(after.version).toBe(before.version)
    expect(after.package).toEqual(before.package)
  })

  test("kernel tools without a Claude equivalent are named in a comment; local skills become sections; a bad format is 400", async () => {
    const md = "---\nname: native-one\nversion: 3\ndescription: Native.\ntools: [read, git, codemode]\nmetadata:\n  audience: runtime\n---\nWork carefully.\n"
    expect((await importFiles([{ path: "native-one.md", content: md }, { path: "skills/notes/SKILL.md", content: "Take notes.\n" }])).status).toBe(201)
    const r = await api.request("GET", "/api/admin/agents/native-one/export?format=claude", { token: api.reader.token })
    expect(r.text).toBe('---\nname: native-one\ndescription: "Native."\ntools: "Read"\n# Kintsugi tools without a Claude Code equivalent, left out: git, codemode\n---\nWork carefully.\n\n\n## Skill: notes\n\nTake notes.\n')
    expect((await api.request("GET", "/api/admin/agents/native-one/export?format=yaml", { token: api.reader.token })).status).toBe(400)
    expect((await api.request("GET", "/api/admin/agents/architecture-map/export?format=claude", { token: api.reader.token })).status).toBe(200)
  })
})
