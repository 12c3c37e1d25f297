/**
 * The system prompt: the agent's instructions verbatim, then its skills in the order given, then
 * the <research-tools> block only when the job grants memory or web tools. A pure function of the
 * agent definition and the granted tools, so the prefix is byte-identical on every turn of a job
 * and across jobs of one agent version (provider prompt caches hit).
 */
import type { AgentDefinition } from "../contract/AgentDefinition.ts"

/** Tools that make the research block appear: the memory tools (memory_*, scratchpad_*) and the web tools. */
export const RESEARCH_TOOL_PREFIXES = ["memory_", "scratchpad_", "web_search", "web_fetch"] as const

const researchBlock = (tools: ReadonlyArray<string>): string =>
  [
    "<research-tools>",
    `You have these research tools: ${tools.join(", ")}.`,
    ...(tools.includes("memory_search") ? ["Search project memory first, before reading widely."] : []),
    ...(tools.includes("memory_save") ? ["Save durable lessons to memory at the end of the job, never secrets."] : []),
    ...(tools.some((t) => t.startsWith("scratchpad_")) ? ["Keep your working notes in the scratchpad: it survives compaction."] : []),
    ...(tools.some((t) => t.startsWith("web_"))
      ? [
          "Search the public web only for public references.",
          "Never send project content (code, file contents, names of internal things) to the web tools."
        ]
      : []),
    "</research-tools>"
  ].join("\n")

export const buildSystemPrompt = (agent: AgentDefinition, grantedTools: ReadonlyArray<string>): string => {
  const parts = [agent.instructions]
  for (const skill of agent.skills ?? []) parts.push(`<skill name="${skill.name}">\n${skill.content}\n</skill>`)
  const research = grantedTools.filter((t) => RESEARCH_TOOL_PREFIXES.some((p) => t.startsWith(p)))
  if (research.length > 0) parts.push(researchBlock(research))
  return parts.join("\n\n")
}
