/**
 * The system prompt: the agent's instructions verbatim, then its skills in the order given (each with
 * the read-only path of its resource files, when there are some), then
 * the <research-tools> block only when the job grants memory or web tools, then the <answer-format>
 * block (the typed answer's form and schema) only when the agent declares one. A pure function of the
 * agent definition and the granted tools, so the prefix is byte-identical on every turn of a job
 * and across jobs of one agent version (provider prompt caches hit).
 */
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import { SKILLS_MOUNT } from "../job/confinement.ts"
import { answerPromptBlock } from "./answer.ts"

/** Tools that make the research block appear: the memory tools (memory_*, scratchpad_*) and the web tools. */
const RESEARCH_TOOL_PREFIXES = ["memory_", "scratchpad_", "web_search", "web_fetch"] as const

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

/** Where a skill's resource files are, and which (sorted, so the prompt is stable). */
const resourcesNote = (skill: string, files: ReadonlyArray<string>): string =>
  [
    `Resource files of this skill, read-only under ${SKILLS_MOUNT}/${skill}/ (open them with read, ls, grep or find):`,
    ...[...files].sort().map((f) => `- ${SKILLS_MOUNT}/${skill}/${f}`)
  ].join("\n")

export const buildSystemPrompt = (
  agent: AgentDefinition,
  grantedTools: ReadonlyArray<string>,
  skillFiles?: ReadonlyMap<string, ReadonlyArray<string>>
): string => {
  const parts = [agent.instructions]
  for (const skill of agent.skills ?? []) {
    const files = skillFiles?.get(skill.name) ?? []
    parts.push(
      `<skill name="${skill.name}">\n${skill.content}\n${files.length === 0 ? "" : `\n${resourcesNote(skill.name, files)}\n`}</skill>`
    )
  }
  const research = grantedTools.filter((t) => RESEARCH_TOOL_PREFIXES.some((p) => t.startsWith(p)))
  if (research.length > 0) parts.push(researchBlock(research))
  if (agent.answer !== undefined) parts.push(answerPromptBlock(agent.answer))
  return parts.join("\n\n")
}
