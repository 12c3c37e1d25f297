/** The agent as data: supplied whole with each job; the kernel never looks an agent up. */
import { Schema } from "effect"

export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"] as const
export const ThinkingLevel = Schema.Literal(...THINKING_LEVELS).annotations({
  // override: one message for the union, not one "Expected …" per member.
  message: () => ({ message: `must be one of ${THINKING_LEVELS.join(", ")}`, override: true })
})
export type ThinkingLevel = typeof ThinkingLevel.Type

/** The kernel's own tools (spec "Kernel tools"); MCP tools are granted as `mcp__<server>__<tool|*>`. */
export const KERNEL_TOOLS = ["read", "ls", "grep", "find", "write", "edit", "shell", "git", "codemode"] as const
export type KernelToolName = (typeof KERNEL_TOOLS)[number]
export const MCP_GRANT = /^mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_.-]+|\*)$/

/**
 * Optional tools served by the worker through the job's services channel (design/memory-and-web.md):
 * never in the default set (`tools` absent); granted by name or by group, and only created when the
 * worker grants them to the job (the project's settings decide).
 */
export const MEMORY_TOOLS = [
  "memory_search",
  "memory_save",
  "memory_forget",
  "memory_recover",
  "memory_daily_log",
  "scratchpad_read",
  "scratchpad_write"
] as const
export const WEB_TOOLS = ["web_search", "web_fetch"] as const
export const SERVICE_TOOLS: ReadonlyArray<string> = [...MEMORY_TOOLS, ...WEB_TOOLS]
/** Group names an agent may list instead of each tool. */
export const SERVICE_TOOL_GROUPS: Readonly<Record<string, ReadonlyArray<string>>> = { memory: MEMORY_TOOLS, web: WEB_TOOLS }

/** The service tools a `tools` list asks for (groups expanded), in SERVICE_TOOLS order; none when `tools` is absent. */
export const requestedServiceTools = (tools: ReadonlyArray<string> | undefined): ReadonlyArray<string> => {
  const asked = new Set((tools ?? []).flatMap((t) => SERVICE_TOOL_GROUPS[t] ?? [t]))
  return SERVICE_TOOLS.filter((t) => asked.has(t))
}

/** A kernel tool, a service tool or group, or an MCP grant. */
export const isGrantableTool = (name: string): boolean =>
  (KERNEL_TOOLS as ReadonlyArray<string>).includes(name) ||
  SERVICE_TOOLS.includes(name) ||
  Object.hasOwn(SERVICE_TOOL_GROUPS, name) ||
  MCP_GRANT.test(name)

export const SKILL_NAME = /^[a-z][a-z0-9-]*$/

const NonEmpty = Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }))

export const Skill = Schema.Struct({
  name: Schema.String.pipe(Schema.pattern(SKILL_NAME, { message: () => "skill name must match [a-z][a-z0-9-]*" })),
  content: Schema.String
})
export type Skill = typeof Skill.Type

const ToolName = Schema.String.pipe(
  Schema.filter((name) =>
    isGrantableTool(name)
      ? undefined
      : `unknown tool "${name}" (kernel tools: ${KERNEL_TOOLS.join(", ")}; service tools: ${SERVICE_TOOLS.join(", ")} or the groups memory, web; MCP grants: mcp__<server>__<tool> or mcp__<server>__*)`
  )
)

/**
 * Duplicate skill names in an untrusted list. Kept outside the schema so it also runs when another
 * skill is malformed (a schema filter on the array only runs once every element decodes).
 */
export const duplicateSkillProblems = (skills: unknown, basePath: string): Array<{ path: string; message: string }> => {
  if (!Array.isArray(skills)) return []
  const seen = new Set<string>()
  const problems: Array<{ path: string; message: string }> = []
  skills.forEach((s: unknown, i) => {
    const name = s !== null && typeof s === "object" ? (s as Record<string, unknown>)["name"] : undefined
    if (typeof name !== "string") return
    if (seen.has(name)) problems.push({ path: `${basePath}.${i}.name`, message: `duplicate skill name "${name}"` })
    seen.add(name)
  })
  return problems
}

const Skills = Schema.Array(Skill).pipe(
  Schema.filter((skills) => duplicateSkillProblems(skills, "").length === 0 || "skill names must be unique")
)

/** Largest JSON Schema an output may carry, UTF-8 bytes (the package refuses bigger schema files). */
export const MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024

/**
 * One file of the output contract: its name (relative to outDir), or its name with the JSON Schema it
 * must satisfy: `schema` is the schema's path in the agent package (for messages), `schemaText` the
 * schema itself, carried whole so the kernel never reads the package.
 */
export const OutputFile = Schema.Union(
  NonEmpty,
  Schema.Struct({
    file: NonEmpty,
    schema: NonEmpty,
    schemaText: NonEmpty.pipe(
      Schema.filter(
        (s) => new TextEncoder().encode(s).length <= MAX_OUTPUT_SCHEMA_BYTES || `must be at most ${MAX_OUTPUT_SCHEMA_BYTES / 1024} KiB`
      )
    )
  })
)
export type OutputFile = typeof OutputFile.Type

/**
 * The typed answer: the JSON Schema the model's final message must satisfy (`schema` its path in the
 * package, for messages; `schemaText` the schema itself, carried whole like an output's).
 */
export const AnswerContract = Schema.Struct({
  schema: NonEmpty,
  schemaText: NonEmpty.pipe(
    Schema.filter(
      (s) => new TextEncoder().encode(s).length <= MAX_OUTPUT_SCHEMA_BYTES || `must be at most ${MAX_OUTPUT_SCHEMA_BYTES / 1024} KiB`
    )
  )
})
export type AnswerContract = typeof AnswerContract.Type

/** The file name of a contract entry. */
export const outputFileName = (o: string | { readonly file: string }): string => (typeof o === "string" ? o : o.file)

export const AgentDefinition = Schema.Struct({
  id: NonEmpty,
  version: Schema.Union(Schema.String, Schema.Number),
  instructions: NonEmpty,
  skills: Schema.optionalWith(Skills, { exact: true }),
  tools: Schema.optionalWith(Schema.Array(ToolName), { exact: true }),
  denyCommandPatterns: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  thinking: Schema.optionalWith(ThinkingLevel, { exact: true }),
  /** `required`: a job whose outputs cite lines never shown to the model fails (docs/grounding.md). */
  grounding: Schema.optionalWith(Schema.Literal("required"), { exact: true }),
  /** The output contract: files (relative to outDir) the job must write, each optionally with a JSON Schema; checked before job.completed. */
  outputs: Schema.optionalWith(Schema.Array(OutputFile), { exact: true }),
  /** The typed answer: the final message is JSON valid against this schema; checked with the outputs, before job.completed. */
  answer: Schema.optionalWith(AnswerContract, { exact: true })
})
export type AgentDefinition = typeof AgentDefinition.Type
