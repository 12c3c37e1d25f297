/**
 * Agents people already have: Claude Code subagent files and Agent Skills as written in the wild,
 * adapted into this project's formats before the usual checks, so every problem is reported in one
 * round. Claude tool names are mapped (the mapping is part of the result); Claude Code tools without a
 * Kintsugi equivalent are dropped with one warning each, or left for the checks to refuse on a strict
 * import; foreign front-matter keys (`model`, `color`, `permissionMode`, …) are kept in `metadata` and
 * reported as notes; a missing `version` is 1; the name comes from the file when the front matter has
 * none or a plugin prefix (`plugin:name`). Pure; never throws; never evaluates anything.
 */
import { Either } from "effect"
import { isGrantableTool, MCP_GRANT } from "../contract/AgentDefinition.ts"
import type { Problem } from "../contract/Problem.ts"
import { readFrontMatter } from "./frontMatter.ts"
import type { RawPackageFile } from "./packageFiles.ts"
import { displayName } from "../contract/packagePaths.ts"
import { yamlString, yamlValue } from "./serializePackage.ts"

/** Claude Code's built-in tool names and the kernel tool each becomes. */
const CLAUDE_TOOLS: Readonly<Record<string, string>> = {
  Read: "read",
  Grep: "grep",
  Glob: "find",
  LS: "ls",
  Bash: "shell",
  Write: "write",
  Edit: "edit",
  MultiEdit: "edit",
  // Service tools: a job gets them only where its project's web settings grant them.
  WebFetch: "web_fetch",
  WebSearch: "web_search"
}

/** The mapping as people read it: `Read→read, Grep→grep, …, Edit/MultiEdit→edit`. */
const CLAUDE_MAPPING_TEXT =
  "Read→read, Grep→grep, Glob→find, LS→ls, Bash→shell, Write→write, Edit/MultiEdit→edit, WebFetch→web_fetch, WebSearch→web_search"

/** Claude Code's built-in tools that have no Kintsugi equivalent, each with what it does there. */
const CLAUDE_ONLY_TOOLS: Readonly<Record<string, string>> = {
  Agent: "starts subagents",
  Task: "starts subagents",
  TaskOutput: "reads a background task's output",
  TaskStop: "stops a background task",
  TodoWrite: "keeps the session's to-do list",
  TodoRead: "reads the session's to-do list",
  NotebookEdit: "edits Jupyter notebook cells",
  NotebookRead: "reads Jupyter notebooks",
  AskUserQuestion: "asks the user a question",
  EnterPlanMode: "switches to plan mode",
  ExitPlanMode: "leaves plan mode",
  EnterWorktree: "switches to a git worktree",
  ExitWorktree: "leaves a git worktree",
  BashOutput: "reads a background shell's output",
  KillShell: "stops a background shell",
  KillBash: "stops a background shell",
  Skill: "loads a skill on demand",
  SlashCommand: "runs a slash command",
  LSP: "asks a language server",
  ListMcpResourcesTool: "lists MCP resources",
  ReadMcpResourceTool: "reads an MCP resource",
  ToolSearch: "loads deferred tools",
  CronCreate: "schedules a prompt",
  CronDelete: "cancels a scheduled prompt",
  CronList: "lists scheduled prompts"
}

/** True for a Claude Code tool with no Kintsugi equivalent (`Agent`, `TodoWrite`, …). */
export const isClaudeOnlyTool = (name: string): boolean => Object.hasOwn(CLAUDE_ONLY_TOOLS, name)

/** `it starts subagents in Claude Code; Kintsugi has no equivalent`, for a Claude-only tool. */
const withoutEquivalent = (name: string): string =>
  `it ${CLAUDE_ONLY_TOOLS[name] ?? "is a tool"} in Claude Code; Kintsugi has no equivalent`

/** One tool name as written and what it became (`to: null` = no equivalent: dropped, or a problem). */
export interface ToolMapping {
  readonly from: string
  readonly to: string | null
}

export interface Adapted {
  /** The files in this project's format (the main file rewritten when anything was adapted). */
  readonly files: Array<RawPackageFile>
  readonly notes: Array<string>
  /** What was left out of the package: one line per Claude Code tool dropped. */
  readonly warnings: Array<string>
  readonly toolMapping: Array<ToolMapping>
  /** Problems found while adapting (unknown tools); the format checks add theirs. */
  readonly problems: Array<Problem>
}

/** How an import treats what it cannot keep. */
export interface ImportOptions {
  /** Refuse Claude Code tools without a Kintsugi equivalent instead of dropping them with a warning. */
  readonly strict?: boolean | undefined
}

/** The native `<name>.md` keys; every other key is foreign and goes to metadata. */
const NATIVE_KEYS = new Set([
  "name",
  "version",
  "description",
  "tools",
  "skills",
  "thinking",
  "deny-command-patterns",
  "grounding",
  "outputs",
  "answer",
  "gate",
  "metadata"
])

export const own = (o: Readonly<Record<string, unknown>>, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined)
export const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v)
export const textOf = (content: string | Uint8Array): string | undefined => {
  if (typeof content === "string") return content
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(content)
  } catch {
    return undefined
  }
}

/** `Read, Grep` or `[Read, Grep]` or `Read Grep` (Agent Skills' allowed-tools) as a list of names. */
export const toolList = (v: unknown): Array<unknown> | undefined =>
  typeof v === "string"
    ? v
        .split(/[,\s]+/)
        .map((s) => s.trim())
        .filter((s) => s !== "")
    : Array.isArray(v)
      ? [...v]
      : undefined

/**
 * Maps a tool list: Claude names to Kintsugi tools; with `dropClaudeOnly`, Claude Code tools without
 * an equivalent are left out (and listed in `dropped`); grantable names and unknown ones are kept as
 * written (the package checks report unknown ones: unknownToolMessage). Duplicates after
 * mapping (Edit and MultiEdit) are merged.
 */
export const mapTools = (list: ReadonlyArray<unknown>, options: { readonly dropClaudeOnly?: boolean } = {}) => {
  const tools: Array<unknown> = []
  const mapping: Array<ToolMapping> = []
  const dropped: Array<string> = []
  for (const t of list) {
    if (typeof t !== "string") {
      tools.push(t)
      continue
    }
    const mapped = Object.hasOwn(CLAUDE_TOOLS, t) ? CLAUDE_TOOLS[t] : undefined
    if (mapped !== undefined) mapping.push({ from: t, to: mapped })
    else if (!isGrantableTool(t) && !mapping.some((m) => m.from === t)) mapping.push({ from: t, to: null })
    if (options.dropClaudeOnly === true && isClaudeOnlyTool(t)) {
      if (!dropped.includes(t)) dropped.push(t)
      continue
    }
    const name = mapped ?? t
    if (!tools.includes(name)) tools.push(name)
  }
  return { tools, mapping, dropped }
}

/**
 * The unknown-tool problem for `name` (`Agent`, `Bash(git:*)`, `browser`). The tools a runtime agent may
 * use and the Claude Code mapping are listed once, in the package's first such problem (`listedAt`
 * undefined); later problems point to it. A Claude Code tool without an equivalent needs no list.
 */
export const unknownToolMessage = (name: string, allowed: string, listedAt?: string): string => {
  const shown = displayName(name)
  if (isClaudeOnlyTool(name))
    return `unknown tool "${shown}": ${withoutEquivalent(name)} (an import that is not strict drops it with a warning)`
  const list = listedAt === undefined ? `: ${allowed}` : ` (the tools a runtime agent may use are listed at ${listedAt})`
  const mapping = listedAt === undefined ? ` (Claude Code tools map as ${CLAUDE_MAPPING_TEXT})` : ""
  if (/^[A-Za-z]+\(/.test(name)) {
    return `unknown tool "${shown}"${list}; tool patterns are not supported: grant the tool itself and restrict commands with deny-command-patterns${mapping}`
  }
  if (/^[A-Z]/.test(name)) return `unknown tool "${shown}"${list}; no Kintsugi tool matches this Claude Code tool${mapping}`
  return `unknown tool "${shown}"${list}`
}

/** Keys that are never kept from a front matter (they would be an object's prototype, not data). */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])

/** The lower-case hyphenated name a file or plugin name gives: `Code Reviewer.md` → `code-reviewer`. */
export const nameFrom = (s: string): string =>
  s
    .replace(/\.md$/i, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")

/** Foreign keys into `metadata` (never overwriting a key metadata already has), with a note each. */
export const keepForeign = (raw: Readonly<Record<string, unknown>>, native: ReadonlySet<string>, file: string, notes: Array<string>) => {
  const ownMetadata = own(raw, "metadata")
  const metadata: Record<string, unknown> = isRecord(ownMetadata) ? { ...ownMetadata } : {}
  for (const key of Object.keys(raw)) {
    if (native.has(key) || FORBIDDEN_KEYS.has(key)) continue
    if (Object.hasOwn(metadata, key)) {
      notes.push(`${file}: "${displayName(key)}" is also in metadata; the metadata value is kept and the top-level one dropped`)
      continue
    }
    metadata[key] = raw[key]
    const value =
      typeof raw[key] === "string" || typeof raw[key] === "number" || typeof raw[key] === "boolean"
        ? `: ${displayName(String(raw[key]))}`
        : ""
    notes.push(
      `${file}: "${displayName(key)}${value}" is not used by Kintsugi; kept in metadata.${displayName(key)}${key === "model" ? " (jobs run on the agent's model binding)" : ""}`
    )
  }
  return metadata
}

/**
 * Adapts an agent package whose `<name>.md` may be a Claude Code subagent file. Claude Code tools
 * without an equivalent are dropped with a warning each, unless `strict` (then they stay and the
 * checks refuse them). Packages without exactly one top-level `.md` file, or whose front matter cannot
 * be read, are returned unchanged (the format checks report them).
 */
export const adaptAgentFiles = (files: ReadonlyArray<RawPackageFile>, options: ImportOptions = {}): Adapted => {
  const unchanged: Adapted = { files: [...files], notes: [], warnings: [], toolMapping: [], problems: [] }
  const mains = files.filter((f) => !f.path.includes("/") && f.path.toLowerCase().endsWith(".md"))
  const main = mains.length === 1 ? mains[0] : undefined
  if (main === undefined) return unchanged
  const text = textOf(main.content)?.replace(/^\uFEFF/, "")
  if (text === undefined) return unchanged
  const fm = readFrontMatter(text, main.path)
  if (Either.isLeft(fm)) return unchanged
  const raw = fm.right.raw
  // A prototype key anywhere at the top or in metadata: nothing is adapted, the format checks refuse it.
  if (
    Object.keys(raw).some((k) => FORBIDDEN_KEYS.has(k)) ||
    (isRecord(raw["metadata"]) && Object.keys(raw["metadata"]).some((k) => FORBIDDEN_KEYS.has(k)))
  )
    return unchanged
  const notes: Array<string> = []
  const warnings: Array<string> = []
  const problems: Array<Problem> = []
  let changed = false

  const fileName = nameFrom(main.path)
  const declared = own(raw, "name")
  let name: unknown = declared
  if (declared === undefined || declared === null || declared === "") {
    name = fileName
    notes.push(`${main.path}: no name in the front matter; named "${fileName}" after the file`)
    changed = true
  } else if (typeof declared === "string" && declared.includes(":")) {
    name = nameFrom(declared.slice(declared.lastIndexOf(":") + 1))
    notes.push(`${main.path}: the plugin prefix of "${displayName(declared)}" is dropped; named "${String(name)}"`)
    changed = true
  }
  const path = typeof name === "string" && name !== "" ? `${name}.md` : main.path
  if (path !== main.path) {
    notes.push(`${displayName(main.path)}: imported as ${displayName(path)} (the file is named after the agent)`)
    changed = true
  }
  let version = own(raw, "version")
  if (version === undefined || version === null) {
    version = 1
    notes.push(`${path}: no version in the front matter; version 1`)
    changed = true
  }
  let tools = own(raw, "tools")
  let toolMapping: Array<ToolMapping> = []
  if (tools !== undefined) {
    const list = toolList(tools)
    if (list !== undefined) {
      const mapped = mapTools(list, { dropClaudeOnly: options.strict !== true })
      toolMapping = mapped.mapping
      if (typeof tools === "string" || mapped.mapping.some((m) => m.to !== null) || mapped.tools.length !== list.length) changed = true
      if (typeof tools === "string") notes.push(`${path}: tools "${displayName(tools)}" read as a list`)
      if (mapped.mapping.some((m) => m.to !== null)) {
        notes.push(
          `${path}: Claude Code tools mapped: ${mapped.mapping
            .filter((m) => m.to !== null)
            .map((m) => `${m.from}→${m.to}`)
            .join(", ")}`
        )
      }
      for (const t of mapped.dropped) warnings.push(`${path}: tool "${t}" dropped: ${withoutEquivalent(t)}`)
      const web = mapped.mapping.flatMap((m) => (m.to === "web_fetch" || m.to === "web_search" ? [m.to] : []))
      if (web.length > 0)
        notes.push(`${path}: a job gets ${web.join(" and ")} only where its project's web settings grant web tools to this agent`)
      tools = mapped.tools
    }
  }
  const foreign = Object.keys(raw).some((k) => !NATIVE_KEYS.has(k))
  const metadata = keepForeign(raw, NATIVE_KEYS, path, notes)
  if (!changed && !foreign) return { ...unchanged, toolMapping, problems, notes, warnings }

  const lines: Array<string> = []
  const put = (key: string, value: unknown) => {
    if (value === undefined) return
    if (Array.isArray(value))
      lines.push(value.length === 0 ? `${key}: []` : `${key}:\n${value.map((v) => `  - ${yamlValue(v)}`).join("\n")}`)
    else lines.push(`${key}: ${yamlValue(value)}`)
  }
  put("name", name)
  put("version", version)
  put("description", own(raw, "description"))
  put("tools", tools)
  put("skills", own(raw, "skills"))
  put("thinking", own(raw, "thinking"))
  put("deny-command-patterns", own(raw, "deny-command-patterns"))
  put("grounding", own(raw, "grounding"))
  put("outputs", own(raw, "outputs"))
  put("answer", own(raw, "answer"))
  put("gate", own(raw, "gate"))
  const metaKeys = Object.keys(metadata).sort()
  if (metaKeys.length > 0) lines.push(`metadata:\n${metaKeys.map((k) => `  ${yamlString(k)}: ${yamlValue(metadata[k])}`).join("\n")}`)
  else if (own(raw, "metadata") !== undefined) put("metadata", own(raw, "metadata"))
  const content = `---\n${lines.join("\n")}\n---\n${fm.right.body}`
  return {
    files: [...files.filter((f) => f !== main), { path, content }],
    notes,
    warnings,
    toolMapping,
    problems
  }
}

/** Kernel tools back to Claude Code names (git and codemode have none). */
const TO_CLAUDE: Readonly<Record<string, string>> = {
  read: "Read",
  grep: "Grep",
  find: "Glob",
  ls: "LS",
  shell: "Bash",
  write: "Write",
  edit: "Edit"
}

/**
 * The agent as one Claude Code subagent file (`export?format=claude`): name, description, tools with
 * Claude names (MCP grants as they are; tools without a Claude equivalent listed in a comment), shared
 * skills, the metadata keys back at the top level (`model`, `color`, …), the instructions, then the
 * local skills and package files as sections (a subagent is one file). Absent tools stay absent
 * (Claude Code then grants every tool, as Kintsugi does).
 */
export const toClaudeFile = (pkg: {
  readonly name: string
  readonly description: string
  readonly tools?: ReadonlyArray<string> | undefined
  readonly skills?: ReadonlyArray<string> | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
  readonly instructions: string
  readonly localSkills: ReadonlyArray<{ readonly name: string; readonly content: string }>
  readonly files: ReadonlyArray<{ readonly path: string; readonly content: string }>
}): string => {
  const lines = [`name: ${yamlString(pkg.name)}`, `description: ${yamlString(pkg.description)}`]
  if (pkg.tools !== undefined) {
    const claude = pkg.tools.flatMap((t) => (TO_CLAUDE[t] !== undefined ? [TO_CLAUDE[t]] : MCP_GRANT.test(t) ? [t] : []))
    const none = pkg.tools.filter((t) => TO_CLAUDE[t] === undefined && !MCP_GRANT.test(t))
    lines.push(`tools: ${yamlString(claude.join(", "))}`)
    if (none.length > 0) lines.push(`# Kintsugi tools without a Claude Code equivalent, left out: ${none.join(", ")}`)
  }
  if (pkg.skills !== undefined && pkg.skills.length > 0) lines.push(`skills: ${yamlString(pkg.skills.join(", "))}`)
  for (const key of Object.keys(pkg.metadata ?? {}).sort()) {
    if (key === "name" || key === "description" || key === "tools" || key === "skills") continue
    lines.push(`${yamlString(key)}: ${yamlValue(pkg.metadata?.[key])}`)
  }
  const sections = [
    ...pkg.localSkills.map((s) => `\n\n## Skill: ${s.name}\n\n${s.content.trim()}\n`),
    ...pkg.files.map((f) => `\n\n## File: ${f.path}\n\n${f.content.trim()}\n`)
  ]
  const body = pkg.instructions.endsWith("\n") || sections.length === 0 ? pkg.instructions : `${pkg.instructions}\n`
  return `---\n${lines.join("\n")}\n---\n${body}${sections.join("")}`
}
