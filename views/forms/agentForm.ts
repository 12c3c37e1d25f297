/**
 * The agent editor's form: read from posted fields, filled from a package, turned into package files
 * (serializeAgentPackage; the store's checks judge them), and each package problem placed at its field.
 */
import { Either } from "effect"
import { localSkillPath } from "../../src/agents/agentChecks.ts"
import { Audience, serializeAgentPackage, type AgentPackage } from "../../src/agents/AgentPackage.ts"
import { displayName } from "../../src/contract/packagePaths.ts"
import { ThinkingLevel } from "../../src/contract/AgentDefinition.ts"
import { decodeAll, type Problem } from "../../src/contract/Problem.ts"

/** A repeated row: a local skill (`name` = skill name) or a package file (`name` = its path). */
export interface FormRow {
  /** Stable id of the row in the page, so problems find it again. */
  readonly key: string
  readonly name: string
  readonly content: string
}

export interface AgentForm {
  readonly name: string
  /** The author's version label as typed. */
  readonly version: string
  readonly description: string
  readonly audience: string
  /** `all` = no `tools` key (every kernel tool); `selected` = exactly the tools listed. */
  readonly toolsMode: "all" | "selected"
  /** Checked kernel tools. */
  readonly tools: ReadonlyArray<string>
  /** Other tools (MCP grants, member tools), one per line. */
  readonly otherTools: string
  /** Shared skills, in prompt order. */
  readonly skills: ReadonlyArray<string>
  /** "" = not set. */
  readonly thinking: string
  /** Deny-command patterns, one per line. */
  readonly denyPatterns: string
  /** "required" or "" (not set). */
  readonly grounding: string
  /** "evals" or "" (not set): a new version goes live only when its evals pass. */
  readonly gate: string
  /** The output contract, one file per line: `report.md`, or `findings.json schemas/findings.schema.json`. */
  readonly outputs: string
  /** The typed answer's schema (`schemas/<name>.json`), "" = none. */
  readonly answer: string
  readonly instructions: string
  readonly localSkills: ReadonlyArray<FormRow>
  readonly files: ReadonlyArray<FormRow>
}

/** What the form needs of a posted body (FormData or URLSearchParams). */
export interface Fields {
  readonly get: (name: string) => unknown
  readonly getAll: (name: string) => ReadonlyArray<unknown>
}

const ROW_KEY = /^[A-Za-z0-9_-]{1,32}$/

// Browsers send textarea line breaks as CRLF; the package is LF.
const text = (v: unknown): string => (typeof v === "string" ? v.replace(/\r\n?/g, "\n") : "")
const line = (v: unknown): string => text(v).replace(/\n/g, " ")

const rows = (f: Fields, prefix: string, keyPrefix: string): Array<FormRow> => {
  const keys = f.getAll(`${prefix}Key`)
  const names = f.getAll(`${prefix}Name`)
  const contents = f.getAll(`${prefix}Content`)
  const out: Array<FormRow> = []
  for (let i = 0; i < Math.max(names.length, contents.length); i++) {
    const key = line(keys[i])
    out.push({ key: ROW_KEY.test(key) ? key : `${keyPrefix}${i}`, name: line(names[i]), content: text(contents[i]) })
  }
  return out
}

/** The form as posted. `name` is the URL's agent when editing (the field is not editable then). */
export const formFromFields = (f: Fields, fixedName?: string): AgentForm => ({
  name: fixedName ?? line(f.get("name")).trim(),
  version: line(f.get("version")).trim(),
  description: text(f.get("description")),
  audience: line(f.get("audience")),
  toolsMode: line(f.get("toolsMode")) === "all" ? "all" : "selected",
  tools: f.getAll("tools").map(line),
  otherTools: text(f.get("otherTools")),
  skills: f.getAll("skills").map(line),
  thinking: line(f.get("thinking")),
  denyPatterns: text(f.get("denyPatterns")),
  grounding: line(f.get("grounding")) === "required" ? "required" : "",
  gate: line(f.get("gate")) === "evals" ? "evals" : "",
  outputs: text(f.get("outputs")),
  answer: line(f.get("answer")).trim(),
  instructions: text(f.get("instructions")),
  localSkills: rows(f, "ls", "s"),
  files: rows(f, "file", "f")
})

/** The tools the editor offers as checkboxes: the kernel's, and grants of the registered MCP servers. */
export interface OfferedTools {
  readonly kernelTools: ReadonlyArray<string>
  readonly mcpGrants: ReadonlyArray<string>
}

/** The form showing a package: offered tools become checkboxes, any other tool a line of its own. */
export const formFromPackage = (pkg: AgentPackage, offered: OfferedTools): AgentForm => {
  const checkable = [...offered.kernelTools, ...offered.mcpGrants]
  return {
    name: pkg.name,
    version: String(pkg.version),
    description: pkg.description,
    audience: pkg.audience,
    toolsMode: pkg.tools === undefined ? "all" : "selected",
    tools: pkg.tools === undefined ? [...offered.kernelTools] : pkg.tools.filter((t) => checkable.includes(t)),
    otherTools: (pkg.tools ?? []).filter((t) => !checkable.includes(t)).join("\n"),
    skills: pkg.skills ?? [],
    thinking: pkg.thinking ?? "",
    denyPatterns: (pkg.denyCommandPatterns ?? []).join("\n"),
    grounding: pkg.grounding ?? "",
    gate: pkg.gate ?? "",
    outputs: (pkg.outputs ?? []).map((o) => (typeof o === "string" ? o : `${o.file} ${o.schema}`)).join("\n"),
    answer: pkg.answer?.schema ?? "",
    instructions: pkg.instructions,
    localSkills: pkg.localSkills.map((s, i) => ({ key: `s${i}`, name: s.name, content: s.content })),
    // Eval files and fixtures (docs/evals.md) are rows like the other package files, so a save keeps them.
    files: [...pkg.files, ...(pkg.evals ?? [])].map((f, i) => ({ key: `f${i}`, name: f.path, content: f.content }))
  }
}

/** A new agent's starting point: read-only kernel tools, runtime audience, version 1. */
export const blankForm = (kernelTools: ReadonlyArray<string>): AgentForm => ({
  name: "",
  version: "1",
  description: "",
  audience: "runtime",
  toolsMode: "selected",
  tools: ["read", "ls", "grep", "find"].filter((t) => kernelTools.includes(t)),
  otherTools: "",
  skills: [],
  thinking: "",
  denyPatterns: "",
  grounding: "",
  gate: "",
  outputs: "",
  answer: "",
  instructions: "",
  localSkills: [],
  files: []
})

/** Non-empty lines with their 1-based line numbers. */
const listLines = (value: string): Array<{ text: string; line: number }> =>
  value.split("\n").flatMap((t, i) => (t.trim() === "" ? [] : [{ text: t, line: i + 1 }]))

const isBlank = (r: FormRow) => r.name.trim() === "" && r.content.trim() === ""

/** `3` stays a number, `1.10` a string: the label keeps the type YAML would give it. */
const versionLabel = (v: string): string | number => {
  const n = Number(v)
  return v !== "" && Number.isFinite(n) && String(n) === v ? n : v
}

/** The tools the form grants: undefined = every kernel tool. */
export const toolsOf = (form: AgentForm): ReadonlyArray<string> | undefined =>
  form.toolsMode === "all" ? undefined : [...form.tools, ...listLines(form.otherTools).map((l) => l.text.trim())]

export const mainFile = (form: AgentForm): string => `${displayName(form.name)}.md`

/**
 * The package files the form describes, or the problems of the two select fields (a value the page
 * never offers): the store's checks judge everything else.
 */
export const filesOfForm = (form: AgentForm): Either.Either<Array<{ path: string; content: string }>, Array<Problem>> => {
  const problems: Array<Problem> = []
  const audience = decodeAll(Audience)(form.audience)
  if (Either.isLeft(audience))
    problems.push(...audience.left.map((p) => ({ path: `${mainFile(form)}#metadata.audience`, message: p.message })))
  const thinking = form.thinking === "" ? Either.right(undefined) : decodeAll(ThinkingLevel)(form.thinking)
  if (Either.isLeft(thinking)) problems.push(...thinking.left.map((p) => ({ path: `${mainFile(form)}#thinking`, message: p.message })))
  // One output per line: a file name, or a file name and its schema's path.
  const outputs = listLines(form.outputs).map((l) => ({ ...l, words: l.text.trim().split(/\s+/) }))
  for (const o of outputs.filter((o) => o.words.length > 2)) {
    problems.push({
      path: `${mainFile(form)}#outputs`,
      message: `line ${o.line}: write a file name, or a file name and its schema (schemas/<name>.json), separated by a space`
    })
  }
  if (Either.isLeft(audience) || Either.isLeft(thinking) || problems.length > 0) return Either.left(problems)
  const tools = toolsOf(form)
  const deny = listLines(form.denyPatterns).map((l) => l.text)
  const contract = outputs.map(({ words: [file = "", schema] }) => (schema === undefined ? file : { file, schema }))
  const pkg: AgentPackage = {
    name: form.name,
    version: versionLabel(form.version),
    description: form.description,
    ...(tools !== undefined ? { tools } : {}),
    ...(form.skills.length > 0 ? { skills: form.skills } : {}),
    ...(thinking.right !== undefined ? { thinking: thinking.right } : {}),
    ...(deny.length > 0 ? { denyCommandPatterns: deny } : {}),
    ...(form.grounding === "required" ? { grounding: "required" as const } : {}),
    ...(form.gate === "evals" ? { gate: "evals" as const } : {}),
    ...(contract.length > 0 ? { outputs: contract } : {}),
    ...(form.answer !== "" ? { answer: { schema: form.answer } } : {}),
    audience: audience.right,
    instructions: form.instructions,
    localSkills: form.localSkills.filter((r) => !isBlank(r)).map((r) => ({ name: r.name.trim(), content: r.content })),
    files: form.files.filter((r) => !isBlank(r)).map((r) => ({ path: r.name.trim(), content: r.content }))
  }
  return Either.right(serializeAgentPackage(pkg))
}

/** Where problems show: a field slot (`description`, `ls-<key>`, …) or the general list at the top. */
export interface PlacedProblems {
  readonly bySlot: ReadonlyMap<string, ReadonlyArray<Problem>>
  readonly general: ReadonlyArray<Problem>
}

export const FIELD_SLOTS = [
  "name",
  "version",
  "description",
  "audience",
  "tools",
  "otherTools",
  "skills",
  "thinking",
  "deny",
  "grounding",
  "gate",
  "outputs",
  "answer",
  "instructions"
] as const

const FRONT_MATTER_SLOT: ReadonlyArray<readonly [RegExp, string]> = [
  [/^name$/, "name"],
  [/^version$/, "version"],
  [/^description$/, "description"],
  [/^skills(\.|$)/, "skills"],
  [/^thinking$/, "thinking"],
  [/^deny-command-patterns(\.|$)/, "deny"],
  [/^grounding$/, "grounding"],
  [/^gate$/, "gate"],
  [/^outputs(\.|$)/, "outputs"],
  [/^answer(\.|$)/, "answer"],
  [/^metadata(\.|$)/, "audience"],
  [/^body$/, "instructions"]
]

const within = (problemPath: string, file: string) => problemPath === file || problemPath.startsWith(`${file}#`)
const index = (field: string) => Number(/\.(\d+)$/.exec(field)?.[1] ?? "-1")

/** Places each problem by its package path (docs/agent-packages.md "Problems") at the field it concerns. */
export const placeProblems = (form: AgentForm, problems: ReadonlyArray<Problem>): PlacedProblems => {
  const bySlot = new Map<string, Array<Problem>>()
  const general: Array<Problem> = []
  const put = (slot: string, p: Problem) => bySlot.set(slot, [...(bySlot.get(slot) ?? []), p])
  const main = `${mainFile(form)}#`
  const kernelCount = form.toolsMode === "all" ? 0 : form.tools.length
  const denyLines = listLines(form.denyPatterns)
  const outputLines = listLines(form.outputs)
  const otherLines = listLines(form.otherTools)
  for (const p of problems) {
    if (p.path.startsWith(main)) {
      const field = p.path.slice(main.length)
      if (/^tools(\.|$)/.test(field)) {
        const i = index(field)
        const other = otherLines[i - kernelCount]
        if (i >= kernelCount && other !== undefined) put("otherTools", { path: p.path, message: `line ${other.line}: ${p.message}` })
        else put("tools", p)
        continue
      }
      const slot = FRONT_MATTER_SLOT.find(([re]) => re.test(field))?.[1]
      const deny = slot === "deny" ? denyLines[index(field)] : undefined
      const output = slot === "outputs" ? outputLines[Number(/^outputs\.(\d+)/.exec(field)?.[1] ?? "-1")] : undefined
      if (deny !== undefined) put("deny", { path: p.path, message: `line ${deny.line}: ${p.message}` })
      else if (output !== undefined) put("outputs", { path: p.path, message: `line ${output.line}: ${p.message}` })
      else if (slot !== undefined) put(slot, p)
      else general.push(p)
      continue
    }
    const skill = form.localSkills.find((r) => !isBlank(r) && within(p.path, localSkillPath(r.name.trim())))
    if (skill !== undefined) {
      put(`ls-${skill.key}`, p)
      continue
    }
    const file = form.files.find((r) => !isBlank(r) && within(p.path, displayName(r.name.trim())))
    if (file !== undefined) put(`file-${file.key}`, p)
    else general.push(p)
  }
  return { bySlot, general }
}
