/**
 * Where each file of a package belongs (`<name>.md`, a local skill, a command, workflow or script)
 * and how package files become inline skills of the job definition (docs/agent-packages.md).
 */
import type { Skill } from "../contract/AgentDefinition.ts"
import type { PackageFile } from "./packageSchema.ts"

export type PathRole =
  | { readonly role: "main" }
  | { readonly role: "localSkill"; readonly name: string }
  | { readonly role: "file" }
  /** Anything under `evals/`: evalSpec.ts checks it (docs/evals.md). */
  | { readonly role: "eval" }
  | { readonly role: "other"; readonly message: string }

const LAYOUT = "a package holds <name>.md, skills/<n>/SKILL.md, commands/*.md, workflows/*.md, scripts/* and evals/"

/** The role of a path that already passed `pathProblems`. */
export const pathRole = (path: string): PathRole => {
  const parts = path.split("/")
  const [top, second, third] = parts
  if (parts.length === 1) {
    return path.endsWith(".md") ? { role: "main" } : { role: "other", message: `not a package file (${LAYOUT})` }
  }
  if (top === "evals") return { role: "eval" }
  if (top === "skills" && parts.length === 3 && third === "SKILL.md" && second !== undefined) {
    return { role: "localSkill", name: second }
  }
  if ((top === "commands" || top === "workflows" || top === "scripts") && parts.length === 2) {
    if (top !== "scripts" && !path.endsWith(".md")) return { role: "other", message: `${top} must be .md files` }
    return { role: "file" }
  }
  if (top === "commands" || top === "workflows" || top === "scripts") {
    return { role: "other", message: `${top}/ holds files directly, no sub-folders` }
  }
  return { role: "other", message: `not a package file (${LAYOUT})` }
}

const PREFIX: Readonly<Record<string, string>> = { commands: "command", workflows: "workflow", scripts: "script" }

const slug = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")

/**
 * The inline skill name of a package file: `commands/inventory.md` → `command-inventory`,
 * `workflows/x.md` → `workflow-x`, `scripts/y.sh` → `script-y-sh`. The base name (without `.md` for
 * commands and workflows, with the extension for scripts) is lower-cased and every run of characters
 * outside [a-z0-9] becomes one `-`. Undefined when no name results (e.g. `commands/_.md`).
 */
export const packageFileSkillName = (path: string): string | undefined => {
  const [top, base] = path.split("/")
  const prefix = top === undefined ? undefined : PREFIX[top]
  if (prefix === undefined || base === undefined) return undefined
  const s = slug(top === "scripts" ? base : base.replace(/\.md$/, ""))
  return s.length === 0 ? undefined : `${prefix}-${s}`
}

/** Longest run of backticks in `text`, so a fence around it is one longer. */
const longestBacktickRun = (text: string): number => {
  let longest = 0
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length)
  return longest
}

/**
 * The inline skill for one package file: commands and workflows verbatim; a script wrapped as
 * "Script `scripts/y.sh` from the agent package:" and a fenced block (language = extension).
 * Precondition: `packageFileSkillName(file.path)` is defined (the package checks guarantee it).
 */
export const packageFileSkill = (file: PackageFile): Skill => {
  const name = packageFileSkillName(file.path) ?? slug(file.path)
  if (!file.path.startsWith("scripts/")) return { name, content: file.content }
  const ext = /\.([A-Za-z0-9]+)$/.exec(file.path)?.[1]?.toLowerCase() ?? ""
  const fence = "`".repeat(Math.max(3, longestBacktickRun(file.content) + 1))
  const text = file.content.endsWith("\n") ? file.content : `${file.content}\n`
  return { name, content: `Script \`${file.path}\` from the agent package:\n\n${fence}${ext}\n${text}${fence}` }
}
