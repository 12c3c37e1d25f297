/**
 * Installation checks of an agent package (runtime tools, shared skills, MCP servers, names) and its
 * translation into the job contract's AgentDefinition, which the kernel accepts as is.
 */
import { Either, Schema } from "effect"
import type { AgentDefinition, Skill } from "../contract/AgentDefinition.ts"
import type { Problem } from "../contract/Problem.ts"
import { parsePackageDraft, type RawPackageFile } from "./AgentPackage.ts"
import { type AgentDraft, installationProblems, intrinsicProblems } from "./agentChecks.ts"
import { AgentName, type AgentPackage, MAX_AGENT_NAME_LENGTH } from "./packageSchema.ts"
import { answerOf, contractOf } from "./outputSchemas.ts"
import { isSchemaFile, isSkillFile, packageFileSkill } from "./packageSkills.ts"

export { installationProblems, mcpServersOf } from "./agentChecks.ts"

/** What validateAgent checks a package against. */
export interface ValidationContext {
  /** Names of the installation's shared skills (built-in and custom). */
  readonly sharedSkills: ReadonlySet<string>
  /** Registered MCP server names; when absent, MCP grants are not checked against servers. */
  readonly mcpServers?: ReadonlySet<string>
}

export const draftOf = (pkg: AgentPackage): AgentDraft => ({
  file: `${pkg.name}.md`,
  audience: pkg.audience,
  tools: pkg.tools,
  skills: pkg.skills,
  thinking: pkg.thinking,
  denyCommandPatterns: pkg.denyCommandPatterns,
  instructions: pkg.instructions,
  localSkills: pkg.localSkills.map((s) => s.name),
  files: pkg.files.filter((f) => isSkillFile(f.path)).map((f) => f.path),
  outputs: pkg.outputs,
  answer: pkg.answer,
  schemas: pkg.files.filter((f) => isSchemaFile(f.path))
})

const isAgentName = Schema.is(AgentName)

/**
 * Every installation problem of a package, [] when it can run here: the name; runtime tools are
 * kernel tools or `mcp__<server>__<tool|*>` grants of registered servers (when `mcpServers` is
 * given); shared skills exist; local skill and package-file skill names are valid and clash with no
 * shared skill; the thinking level and deny patterns are valid; instructions are not empty. Problem
 * paths as parseAgentPackage's. Pure; never throws.
 */
export const validateAgent = (pkg: AgentPackage, ctx: ValidationContext): Array<Problem> => [
  ...packageProblems(pkg),
  ...installationProblems(draftOf(pkg), ctx)
]

/** The problems of validateAgent that depend on the package alone (the name and the intrinsic checks). */
export const packageProblems = (pkg: AgentPackage): Array<Problem> => {
  const draft = draftOf(pkg)
  const problems: Array<Problem> = []
  if (!isAgentName(pkg.name))
    problems.push({ path: `${draft.file}#name`, message: `must match [a-z][a-z0-9-]* and be at most ${MAX_AGENT_NAME_LENGTH} characters` })
  return [...problems, ...intrinsicProblems(draft)]
}

/**
 * Format and installation checks of package files in one pass (the save and import endpoints):
 * the package, or every problem of both kinds at once. Installation checks also run on a package
 * with format problems, on whatever could be read.
 */
export const checkAgentPackage = (
  files: ReadonlyArray<RawPackageFile>,
  ctx: ValidationContext
): Either.Either<AgentPackage, Array<Problem>> => {
  const parsed = parsePackageDraft(files)
  if (parsed.pkg !== undefined) {
    const problems = validateAgent(parsed.pkg, ctx)
    return problems.length === 0 ? Either.right(parsed.pkg) : Either.left(problems)
  }
  return Either.left([...parsed.problems, ...installationProblems(parsed.draft, ctx)])
}

/**
 * The job's AgentDefinition: id = name, the given version number, instructions verbatim, skills =
 * the shared skills in the order listed, then local skills (by name), then package files (by path,
 * as inline skills per docs/agent-packages.md; schemas/ files are not skills); tools, denyCommandPatterns,
 * thinking and grounding when set (absent tools stay absent: every kernel tool); outputs with each
 * schema's text (contractOf), and the answer's (answerOf). Precondition: validateAgent returned [] for the
 * same shared skills; a listed shared skill missing from `sharedSkills` is a defect and throws.
 */
export const toAgentDefinition = (
  pkg: AgentPackage,
  opts: { readonly version: number; readonly sharedSkills: ReadonlyMap<string, string> }
): AgentDefinition => {
  const shared: Array<Skill> = (pkg.skills ?? []).map((name) => {
    const content = opts.sharedSkills.get(name)
    if (content === undefined) throw new Error(`toAgentDefinition: shared skill "${name}" is missing; validate the agent first`)
    return { name, content }
  })
  const skills: Array<Skill> = [
    ...shared,
    ...pkg.localSkills.map((s) => ({ name: s.name, content: s.content })),
    ...pkg.files.filter((f) => isSkillFile(f.path)).map(packageFileSkill)
  ]
  return {
    id: pkg.name,
    version: opts.version,
    instructions: pkg.instructions,
    ...(skills.length > 0 ? { skills } : {}),
    ...(pkg.tools !== undefined ? { tools: pkg.tools } : {}),
    ...(pkg.denyCommandPatterns !== undefined ? { denyCommandPatterns: pkg.denyCommandPatterns } : {}),
    ...(pkg.thinking !== undefined ? { thinking: pkg.thinking } : {}),
    ...(pkg.grounding !== undefined ? { grounding: pkg.grounding } : {}),
    ...(pkg.outputs !== undefined ? { outputs: contractOf(pkg.outputs, pkg.files) } : {}),
    ...(pkg.answer !== undefined ? { answer: answerOf(pkg.answer, pkg.files) } : {})
  }
}
