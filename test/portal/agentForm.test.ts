/**
 * The editor's form model: packages round-trip through the form, posted fields are read as a browser
 * sends them, and every problem the store's checks report lands at the field it concerns.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Either } from "effect"
import { serializeAgentPackage } from "../../src/agents/AgentPackage.ts"
import { builtinAgents } from "../../src/agents/builtins.ts"
import { checkAgentPackage } from "../../src/agents/validateAgent.ts"
import { KERNEL_TOOLS } from "../../src/contract/AgentDefinition.ts"
import { blankForm, filesOfForm, formFromFields, formFromPackage, placeProblems, type AgentForm } from "../../views/forms/agentForm.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const kernel: ReadonlyArray<string> = KERNEL_TOOLS
const offered = { kernelTools: kernel, mcpGrants: ["mcp__kb__*", "mcp__kb__search"] }

const filesOf = (form: AgentForm) => {
  const files = filesOfForm(form)
  if (Either.isLeft(files)) throw new Error(JSON.stringify(files.left))
  return files.right
}

const problemsOf = (form: AgentForm) => {
  const checked = checkAgentPackage(filesOf(form), { sharedSkills: new Set(["house-style"]) })
  return Either.isLeft(checked) ? checked.left : []
}

describe("agent form", () => {
  test("every built-in agent round-trips through the form to the same package files", () => {
    expect(builtinAgents().size).toBeGreaterThan(0)
    for (const pkg of builtinAgents().values()) {
      expect(filesOf(formFromPackage(pkg, offered))).toEqual(serializeAgentPackage(pkg))
    }
  })

  test("the output contract and grounding: one output per line (a schema after a space), back to the same front matter; a bad line is a problem at its line", () => {
    const pkg = { ...builtinAgents().get("risk-quality")!, grounding: "required" as const }
    const form = formFromPackage(pkg, offered)
    expect([form.outputs, form.grounding]).toEqual(["risks.md\nrisks.json schemas/risks.schema.json", "required"])
    expect(filesOf(form)).toEqual(serializeAgentPackage(pkg))
    expect(filesOf(form)[0]?.content).toContain(
      'grounding: required\noutputs:\n  - "risks.md"\n  - { file: "risks.json", schema: "schemas/risks.schema.json" }\n'
    )
    const bad = filesOfForm({ ...form, outputs: "risks.md\n\na b c" })
    expect(Either.isLeft(bad) ? bad.left : []).toEqual([
      {
        path: "risk-quality.md#outputs",
        message: "line 3: write a file name, or a file name and its schema (schemas/<name>.json), separated by a space"
      }
    ])
    const missing = problemsOf({ ...form, outputs: "risks.md\nrisks.json schemas/nope.json" })
    const placed = placeProblems({ ...form, outputs: "risks.md\nrisks.json schemas/nope.json" }, missing)
    expect(placed.bySlot.get("outputs")?.map((p) => p.message)).toEqual(["line 2: schemas/nope.json is not in the package"])
  })

  test("the typed answer: its schema path in a field of its own, back to the same front matter; a missing schema is a problem at the field", () => {
    const pkg = builtinAgents().get("risk-quality")!
    const form = formFromPackage(pkg, offered)
    expect(form.answer).toBe("schemas/answer.schema.json")
    expect(filesOf(form)[0]?.content).toContain('answer: { schema: "schemas/answer.schema.json" }\n')
    expect(formFromFields(new URLSearchParams({ answer: " schemas/a.json " })).answer).toBe("schemas/a.json")
    expect(filesOf({ ...form, answer: "" })[0]?.content).not.toContain("answer:")
    const missing = { ...form, answer: "schemas/nope.json" }
    const placed = placeProblems(missing, problemsOf(missing))
    expect(placed.bySlot.get("answer")?.map((p) => p.message)).toEqual(["schemas/nope.json is not in the package"])
  })

  test("gate: evals survives the form: a package with it comes back with it, and the posted checkbox sets it", () => {
    const pkg = { ...builtinAgents().get("risk-quality")!, gate: "evals" as const }
    const form = formFromPackage(pkg, offered)
    expect(form.gate).toBe("evals")
    expect(filesOf(form)).toEqual(serializeAgentPackage(pkg))
    expect(filesOf(form)[0]?.content).toContain("\ngate: evals\n")
    expect(filesOf({ ...form, gate: "" })[0]?.content).not.toContain("gate:")
    expect(formFromFields(new URLSearchParams([["gate", "evals"]])).gate).toBe("evals")
    expect(formFromFields(new URLSearchParams([["gate", "anything"]])).gate).toBe("")
  })

  test("explicit tools split into checkboxes (kernel, registered MCP) and other lines, and come back in one list", () => {
    const pkg = { ...[...builtinAgents().values()][0]!, tools: ["read", "mcp__kb__search", "mcp__wiki__*", "shell"] }
    const form = formFromPackage(pkg, offered)
    expect([form.toolsMode, form.tools, form.otherTools]).toEqual(["selected", ["read", "mcp__kb__search", "shell"], "mcp__wiki__*"])
    expect(filesOf(form)[0]?.content).toContain('tools:\n  - read\n  - mcp__kb__search\n  - shell\n  - "mcp__wiki__*"\n')
  })

  test("posted fields: CRLF becomes LF, rows pair up, bad row keys are replaced, blank rows are dropped", () => {
    const f = new URLSearchParams()
    for (const [k, v] of [
      ["name", " notes "],
      ["version", "1.10"],
      ["description", "Line one\r\nline two"],
      ["audience", "member"],
      ["toolsMode", "selected"],
      ["tools", "read"],
      ["instructions", "Do it.\r\n"],
      ["lsKey", "k1"],
      ["lsName", "tone"],
      ["lsContent", "Short.\r\n"],
      ["lsKey", '"><x'],
      ["lsName", ""],
      ["lsContent", "  "],
      ["fileKey", "f9"],
      ["fileName", "commands/go.md"],
      ["fileContent", "Go."]
    ])
      f.append(k!, v!)
    const form = formFromFields(f)
    expect(form.name).toBe("notes")
    expect(form.description).toBe("Line one\nline two")
    expect(form.localSkills).toEqual([
      { key: "k1", name: "tone", content: "Short.\n" },
      { key: "s1", name: "", content: "  " }
    ])
    const files = filesOf(form)
    expect(files.map((x) => x.path)).toEqual(["notes.md", "skills/tone/SKILL.md", "commands/go.md"])
    expect(files[0]?.content).toBe(
      '---\nname: notes\nversion: "1.10"\ndescription: "Line one\\nline two"\ntools:\n  - read\nmetadata:\n  audience: member\n---\nDo it.\n'
    )
  })

  test("a select value the page never offers is refused, at its field", () => {
    const files = filesOfForm({ ...blankForm(kernel), name: "x", audience: "runtime\nevil: 1", thinking: "huge" })
    expect(Either.isLeft(files)).toBe(true)
    const problems = Either.isLeft(files) ? files.left : []
    expect(problems.map((p) => p.path)).toEqual(["x.md#metadata.audience", "x.md#thinking"])
    const placed = placeProblems({ ...blankForm(kernel), name: "x" }, problems)
    expect([...placed.bySlot.keys()]).toEqual(["audience", "thinking"])
  })

  test("each problem of the store's checks lands at its field", () => {
    const form: AgentForm = {
      ...blankForm(kernel),
      name: "notes",
      description: "",
      otherTools: "mcp__kb__search\n\ntelnet",
      skills: ["house-style", "missing-skill"],
      denyPatterns: "rm\\s+-rf\n(a)\\1",
      instructions: "  \n",
      localSkills: [
        { key: "a", name: "ok-skill", content: "x" },
        { key: "b", name: "Bad Name", content: "y" }
      ],
      files: [{ key: "c", name: "notes/extra.md", content: "z" }]
    }
    const placed = placeProblems(form, problemsOf(form))
    const at = (slot: string) => (placed.bySlot.get(slot) ?? []).map((p) => p.message)
    expect(at("description").length).toBe(1)
    expect(at("otherTools")).toEqual([expect.stringMatching(/^line 3: unknown tool "telnet"/)])
    expect(at("skills")).toEqual(['shared skill "missing-skill" does not exist'])
    expect(at("deny")).toEqual([expect.stringMatching(/^line 2: /)])
    expect(at("instructions").length).toBe(1)
    expect(at("ls-b")).toEqual([expect.stringContaining('"Bad Name" must match')])
    expect(at("ls-a")).toEqual([])
    expect(at("file-c").length).toBe(1)
    expect(placed.general).toEqual([])
  })

  test("a name problem lands at the name; problems of the package as a whole go to the general list", () => {
    const form: AgentForm = { ...blankForm(kernel), name: "Bad_Name", description: "d", instructions: "i" }
    const placed = placeProblems(form, [...problemsOf(form), { path: "(package)", message: "too large" }])
    expect((placed.bySlot.get("name") ?? []).length).toBeGreaterThan(0)
    expect(placed.general).toEqual([{ path: "(package)", message: "too large" }])
  })
})
