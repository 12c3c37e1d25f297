/**
 * The checks parseAgentPackage and validateAgent share, on a draft view of a package so they also run
 * when other fields failed to decode: tool names, skill names and clashes, deny patterns, instructions.
 */
import { Either } from "effect"
import { isGrantableTool, KERNEL_TOOLS, MCP_GRANT, SERVICE_TOOLS, SKILL_NAME, THINKING_LEVELS } from "../contract/AgentDefinition.ts"
import type { Problem } from "../contract/Problem.ts"
import { compileDenyPatterns } from "../tools/denyPatterns.ts"
import { unknownToolMessage } from "./interop.ts"
import { displayName } from "../contract/packagePaths.ts"
import type { Audience } from "./packageSchema.ts"
import { MAX_SKILL_NAME_LENGTH, type PackageFile } from "./packageSchema.ts"
import { answerProblems, outputProblems } from "./outputSchemas.ts"
import { packageFileSkillName } from "./packageSkills.ts"

/** What the checks need of a package; list entries that are not strings are skipped (the schema reports them). */
export interface AgentDraft {
  /** `<name>.md`, the path prefix of front-matter problems. */
  readonly file: string
  readonly audience: Audience
  readonly tools?: ReadonlyArray<unknown> | undefined
  readonly skills?: ReadonlyArray<unknown> | undefined
  readonly thinking?: unknown
  readonly denyCommandPatterns?: ReadonlyArray<unknown> | undefined
  /** Undefined when the body is unknown (the front matter could not be split). */
  readonly instructions?: string | undefined
  readonly localSkills: ReadonlyArray<string>
  /** Paths of commands/, workflows/ and scripts/ files. */
  readonly files: ReadonlyArray<string>
  /** `outputs:` as written (absent: not checked, e.g. a catalog entry's refs). */
  readonly outputs?: ReadonlyArray<unknown> | undefined
  /** `answer:` as written (absent: not checked). */
  readonly answer?: unknown
  /** The package's schemas/ files (absent: not checked). */
  readonly schemas?: ReadonlyArray<PackageFile> | undefined
}

/** What an installation knows; a set that is absent is not checked. */
export interface InstallationContext {
  readonly sharedSkills?: ReadonlySet<string> | undefined
  readonly mcpServers?: ReadonlySet<string> | undefined
}

const strings = (list: ReadonlyArray<unknown> | undefined): Array<{ value: string; index: number }> =>
  (list ?? []).flatMap((value, index) => (typeof value === "string" ? [{ value, index }] : []))

export const localSkillPath = (name: string): string => `skills/${displayName(name)}/SKILL.md`

const ALLOWED_TOOLS =
  `a runtime agent may use the kernel tools (${KERNEL_TOOLS.join(", ")}), ` +
  `the service tools (${SERVICE_TOOLS.join(", ")}, or the groups memory and web) ` +
  "and MCP grants mcp__<server>__<tool> or mcp__<server>__*"

/** Duplicates, and for a runtime agent every tool it cannot be granted (the allowed tools listed once). */
const toolProblems = (d: AgentDraft): Array<Problem> => {
  const problems: Array<Problem> = []
  const seen = new Set<string>()
  let listedAt: string | undefined
  for (const { value, index } of strings(d.tools)) {
    const path = `${d.file}#tools.${index}`
    if (seen.has(value)) problems.push({ path, message: `tool "${displayName(value)}" is listed twice` })
    seen.add(value)
    if (d.audience === "runtime" && !isGrantableTool(value)) {
      const message = unknownToolMessage(value, ALLOWED_TOOLS, listedAt)
      if (listedAt === undefined && message.includes(ALLOWED_TOOLS)) listedAt = path
      problems.push({ path, message })
    }
  }
  return problems
}

const sharedSkillProblems = (d: AgentDraft): Array<Problem> => {
  const problems: Array<Problem> = []
  const seen = new Set<string>()
  for (const { value, index } of strings(d.skills)) {
    const path = `${d.file}#skills.${index}`
    if (!SKILL_NAME.test(value)) problems.push({ path, message: `skill name "${displayName(value)}" must match [a-z][a-z0-9-]*` })
    if (seen.has(value)) problems.push({ path, message: `shared skill "${value}" is listed twice` })
    seen.add(value)
  }
  return problems
}

const denyProblems = (d: AgentDraft): Array<Problem> => {
  const list = strings(d.denyCommandPatterns)
  const compiled = compileDenyPatterns(list.map((p) => p.value))
  if (Either.isRight(compiled)) return []
  return compiled.left.map((p) => ({
    path: `${d.file}#deny-command-patterns.${list[p.index]?.index ?? p.index}`,
    message: p.message
  }))
}

/**
 * Inline skill names must be unique across shared skills listed, local skills and package files,
 * since they all end up in one system prompt. The later owner gets the problem.
 */
const nameProblems = (d: AgentDraft): Array<Problem> => {
  const problems: Array<Problem> = []
  const owners = new Map<string, string>()
  for (const { value, index } of strings(d.skills)) if (!owners.has(value)) owners.set(value, `the shared skill listed at skills.${index}`)
  const claim = (name: string, path: string) => {
    const owner = owners.get(name)
    if (owner !== undefined) problems.push({ path, message: `skill name "${name}" is already used by ${owner}` })
    else owners.set(name, path)
  }
  for (const name of d.localSkills) {
    const path = localSkillPath(name)
    if (!SKILL_NAME.test(name) || name.length > MAX_SKILL_NAME_LENGTH) {
      problems.push({
        path,
        message: `local skill name "${displayName(name)}" must match [a-z][a-z0-9-]* and be at most ${MAX_SKILL_NAME_LENGTH} characters`
      })
    } else claim(name, path)
  }
  for (const file of d.files) {
    const name = packageFileSkillName(file)
    if (name === undefined)
      problems.push({ path: displayName(file), message: "no skill name can be made from this file name (use letters or digits)" })
    else claim(name, displayName(file))
  }
  return problems
}

/** Checks that need nothing but the package. Every problem, in field order. */
export const intrinsicProblems = (d: AgentDraft): Array<Problem> => {
  const problems = [...toolProblems(d), ...sharedSkillProblems(d)]
  if (d.thinking !== undefined && !(THINKING_LEVELS as ReadonlyArray<unknown>).includes(d.thinking)) {
    problems.push({ path: `${d.file}#thinking`, message: `must be one of ${THINKING_LEVELS.join(", ")}` })
  }
  problems.push(...denyProblems(d))
  if (d.instructions !== undefined && d.instructions.trim().length === 0) {
    problems.push({ path: `${d.file}#body`, message: "instructions (the text after the front matter) must not be empty" })
  }
  problems.push(...nameProblems(d))
  if (d.schemas !== undefined)
    problems.push(...outputProblems(d.file, d.outputs, d.schemas), ...answerProblems(d.file, d.answer, d.schemas))
  return problems
}

/** Checks against the installation: shared skills exist and do not clash, MCP servers exist. */
export const installationProblems = (d: AgentDraft, ctx: InstallationContext): Array<Problem> => {
  const problems: Array<Problem> = []
  const shared = ctx.sharedSkills
  if (shared !== undefined) {
    for (const { value, index } of strings(d.skills)) {
      if (SKILL_NAME.test(value) && !shared.has(value)) {
        problems.push({ path: `${d.file}#skills.${index}`, message: `shared skill "${value}" does not exist` })
      }
    }
    const listed = new Set(strings(d.skills).map((s) => s.value))
    const clash = (name: string | undefined, path: string) => {
      if (name !== undefined && shared.has(name) && !listed.has(name)) {
        problems.push({ path, message: `skill name "${name}" is already a shared skill of this installation; rename it` })
      }
    }
    for (const name of d.localSkills) clash(name, localSkillPath(name))
    for (const file of d.files) clash(packageFileSkillName(file), displayName(file))
  }
  const servers = ctx.mcpServers
  if (servers !== undefined && d.audience === "runtime") {
    for (const { value, index } of strings(d.tools)) {
      const server = MCP_GRANT.exec(value)?.[1]
      if (server !== undefined && !servers.has(server)) {
        problems.push({ path: `${d.file}#tools.${index}`, message: `MCP server "${server}" is not registered` })
      }
    }
  }
  return problems
}

/** The MCP servers a runtime agent's tools name, in order of first mention. */
export const mcpServersOf = (tools: ReadonlyArray<string> | undefined): Array<string> => [
  ...new Set((tools ?? []).flatMap((t) => MCP_GRANT.exec(t)?.[1] ?? []))
]
