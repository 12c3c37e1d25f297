/** The agent as data: supplied whole with each job; the kernel never looks an agent up. */
import { Schema } from "effect"

export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"] as const
export const ThinkingLevel = Schema.Literal(...THINKING_LEVELS).annotations({
  message: () => `must be one of ${THINKING_LEVELS.join(", ")}`
})
export type ThinkingLevel = typeof ThinkingLevel.Type

/** The kernel's own tools (spec "Kernel tools"); MCP tools are granted as `mcp__<server>__<tool|*>`. */
export const KERNEL_TOOLS = ["read", "ls", "grep", "find", "write", "edit", "shell", "git", "codemode"] as const
export type KernelToolName = (typeof KERNEL_TOOLS)[number]
export const MCP_GRANT = /^mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_.-]+|\*)$/

export const SKILL_NAME = /^[a-z][a-z0-9-]*$/

const NonEmpty = Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }))

export const Skill = Schema.Struct({
  name: Schema.String.pipe(
    Schema.pattern(SKILL_NAME, { message: () => "skill name must match [a-z][a-z0-9-]*" })
  ),
  content: Schema.String
})
export type Skill = typeof Skill.Type

const ToolName = Schema.String.pipe(
  Schema.filter((name) =>
    (KERNEL_TOOLS as ReadonlyArray<string>).includes(name) || MCP_GRANT.test(name)
      ? undefined
      : `unknown tool "${name}" (kernel tools: ${KERNEL_TOOLS.join(", ")}; MCP grants: mcp__<server>__<tool> or mcp__<server>__*)`
  )
)

const Skills = Schema.Array(Skill).pipe(
  Schema.filter((skills) => {
    const seen = new Set<string>()
    const issues: Array<Schema.FilterIssue> = []
    skills.forEach((s, i) => {
      if (seen.has(s.name)) issues.push({ path: [i, "name"], message: `duplicate skill name "${s.name}"` })
      seen.add(s.name)
    })
    return issues
  })
)

export const AgentDefinition = Schema.Struct({
  id: NonEmpty,
  version: Schema.Union(Schema.String, Schema.Number),
  instructions: NonEmpty,
  skills: Schema.optionalWith(Skills, { exact: true }),
  tools: Schema.optionalWith(Schema.Array(ToolName), { exact: true }),
  denyCommandPatterns: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  thinking: Schema.optionalWith(ThinkingLevel, { exact: true })
})
export type AgentDefinition = typeof AgentDefinition.Type
