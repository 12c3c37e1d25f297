/**
 * The release's built-in agents (`builtin-agents/<name>/…`, read-only, names reserved) and built-in
 * shared skills (`builtin-skills/<name>/SKILL.md`), read from disk once per process. A built-in that
 * fails its own format checks is a release defect: loading fails loudly rather than hiding it.
 */
import { Either } from "effect"
import { lstatSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { Problem } from "../contract/Problem.ts"
import { parseAgentPackage, type AgentPackage } from "./AgentPackage.ts"
import { readFrontMatter } from "./frontMatter.ts"
import { readPackageFolder } from "./loadPackageFiles.ts"

export const BUILTIN_AGENTS_DIR = join(import.meta.dir, "..", "..", "builtin-agents")
const BUILTIN_SKILLS_DIR = join(import.meta.dir, "..", "..", "builtin-skills")

export interface SharedSkill {
  readonly name: string
  readonly description: string
  readonly content: string
  readonly builtin: boolean
}

/**
 * Every file of a shipped folder through the package walker (readPackageFolder: its depth and size
 * rules). A problem there is a release defect: it throws, naming each.
 */
export const readTree = (dir: string): Array<{ readonly path: string; readonly content: Uint8Array }> => {
  const { files, problems } = readPackageFolder(dir)
  if (problems.length > 0) throw new Error(`${dir}: ${problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`)
  return files
}

const dirs = (dir: string): Array<string> => {
  try {
    return readdirSync(dir)
      .filter((n) => lstatSync(join(dir, n)).isDirectory())
      .sort()
  } catch {
    return []
  }
}

let agents: ReadonlyMap<string, AgentPackage> | undefined
let skills: ReadonlyMap<string, SharedSkill> | undefined

/** The built-in agents by name. Throws (a defect) when a shipped package is broken. */
export const builtinAgents = (): ReadonlyMap<string, AgentPackage> => {
  if (agents !== undefined) return agents
  const loaded = new Map<string, AgentPackage>()
  for (const name of dirs(BUILTIN_AGENTS_DIR)) {
    const parsed = parseAgentPackage(readTree(join(BUILTIN_AGENTS_DIR, name)))
    if (Either.isLeft(parsed)) {
      throw new Error(`built-in agent ${name} is broken: ${parsed.left.map((p) => `${p.path}: ${p.message}`).join("; ")}`)
    }
    loaded.set(parsed.right.name, parsed.right)
  }
  agents = loaded
  return loaded
}

/** A SKILL.md with optional front matter (`description`); the content is the body. */
const readSkillFile = (text: string, file: string): Either.Either<{ description: string; content: string }, Array<Problem>> => {
  if (!text.startsWith("---")) return Either.right({ description: "", content: text })
  return Either.map(readFrontMatter(text, file), (fm) => {
    const description = fm.raw["description"]
    return { description: typeof description === "string" ? description : "", content: fm.body }
  })
}

/** The built-in shared skills by name. */
export const builtinSkills = (): ReadonlyMap<string, SharedSkill> => {
  if (skills !== undefined) return skills
  const loaded = new Map<string, SharedSkill>()
  for (const name of dirs(BUILTIN_SKILLS_DIR)) {
    const file = `builtin-skills/${name}/SKILL.md`
    const skill = readSkillFile(readFileSync(join(BUILTIN_SKILLS_DIR, name, "SKILL.md"), "utf8"), file)
    if (Either.isLeft(skill)) throw new Error(`built-in skill ${name} is broken: ${skill.left.map((p) => p.message).join("; ")}`)
    loaded.set(name, { name, ...skill.right, builtin: true })
  }
  skills = loaded
  return loaded
}
