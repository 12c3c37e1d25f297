/**
 * The agent package format (the editor, import and export share it): `parseAgentPackage` runs every
 * format check and returns every problem at once; `serializeAgentPackage` writes the files back.
 */
import { Either } from "effect"
import { THINKING_LEVELS } from "../contract/AgentDefinition.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { type AgentDraft, intrinsicProblems } from "./agentChecks.ts"
import { inFile, readFrontMatter } from "./frontMatter.ts"
import { checkPackageFiles, MAX_PACKAGE_FILES, PACKAGE_PATH, type RawPackageFile } from "./packageFiles.ts"
import { displayName, pathProblems } from "../contract/packagePaths.ts"
import { AgentFrontMatter, type AgentPackage, AUDIENCES, type Audience, SkillFrontMatter } from "./packageSchema.ts"
import { pathRole } from "./packageSkills.ts"
import { parseEvals } from "./evalSpec.ts"

export * from "./packageSchema.ts"
export { MAX_PACKAGE_BYTES, MAX_PACKAGE_FILE_BYTES, MAX_PACKAGE_FILES, type RawPackageFile } from "./packageFiles.ts"
export { serializeAgentPackage } from "./serializePackage.ts"

const own = (o: Readonly<Record<string, unknown>> | undefined, key: string): unknown =>
  o !== undefined && Object.hasOwn(o, key) ? o[key] : undefined
const listOrUndefined = (v: unknown): ReadonlyArray<unknown> | undefined => (Array.isArray(v) ? v : undefined)
const byKey =
  <T>(key: (t: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0

const audienceOf = (raw: Readonly<Record<string, unknown>> | undefined): Audience => {
  const metadata = own(raw, "metadata")
  const audience = metadata !== null && typeof metadata === "object" ? own(metadata as Record<string, unknown>, "audience") : undefined
  return (AUDIENCES as ReadonlyArray<unknown>).includes(audience) ? (audience as Audience) : "runtime"
}

/** Front-matter metadata other than `audience`, when there is any. */
const metadataOf = (metadata: AgentFrontMatter["metadata"]): { metadata?: Record<string, unknown> } => {
  // `audience` and `memory-role` have their own package fields.
  const { audience: _a, "memory-role": _m, ...rest } = metadata ?? {}
  return Object.keys(rest).length > 0 ? { metadata: rest } : {}
}

/** A local skill's optional front matter: valid YAML of `name` / `description`, `name` = folder. */
const localSkillProblems = (name: string, path: string, text: string): Array<Problem> => {
  if (!text.startsWith("---")) return []
  const fm = readFrontMatter(text, path)
  if (Either.isLeft(fm)) return fm.left
  const decoded = decodeAll(SkillFrontMatter)(fm.right.raw)
  const problems: Array<Problem> = Either.isLeft(decoded) ? inFile(path, decoded.left) : []
  const declared = own(fm.right.raw, "name")
  if (typeof declared === "string" && declared !== name) {
    problems.push({ path: `${path}#name`, message: `must equal the folder name "${displayName(name)}"` })
  }
  return problems
}

/** Result of the format checks: the package when there is no problem, and the draft the checks saw. */
export interface ParsedPackage {
  readonly pkg: AgentPackage | undefined
  readonly draft: AgentDraft
  readonly problems: ReadonlyArray<Problem>
}

/**
 * Every format check, keeping a draft of what could be read so installation checks can run on a
 * package with format problems too (`checkAgentPackage`).
 */
export const parsePackageDraft = (input: ReadonlyArray<RawPackageFile>): ParsedPackage => {
  const checked = checkPackageFiles(input)
  const problems: Array<Problem> = [...checked.problems]
  const text = new Map(checked.files.map((f) => [f.path, f.text]))
  const mains: Array<string> = []
  const localSkills: Array<{ name: string; path: string }> = []
  const files: Array<string> = []
  const evalPaths: Array<string> = []
  const schemas: Array<string> = []
  // Over the file cap checkPackageFiles already refused the package; do not classify 100k names.
  const tooMany = input.length > MAX_PACKAGE_FILES
  for (const { path } of tooMany ? [] : input) {
    if (pathProblems(path).length > 0) continue
    const role = pathRole(path)
    if (role.role === "main") mains.push(path)
    else if (role.role === "localSkill") localSkills.push({ name: role.name, path })
    else if (role.role === "file") files.push(path)
    else if (role.role === "eval") evalPaths.push(path)
    else if (role.role === "schema") schemas.push(path)
    else problems.push({ path: displayName(path), message: role.message })
  }
  const main = mains.length === 1 ? mains[0] : undefined
  if (mains.length === 0 && !tooMany) problems.push({ path: PACKAGE_PATH, message: "no top-level <name>.md (the agent file)" })
  if (mains.length > 1) {
    const list = mains.map(displayName).join(", ")
    for (const m of mains) problems.push({ path: displayName(m), message: `a package has exactly one top-level <name>.md; found ${list}` })
  }
  const file = main ?? "<name>.md"
  const mainText = main === undefined ? undefined : text.get(main)?.replace(/^\uFEFF/, "")
  let raw: Readonly<Record<string, unknown>> | undefined
  let body: string | undefined
  let frontMatter: AgentFrontMatter | undefined
  if (main !== undefined && mainText !== undefined) {
    const fm = readFrontMatter(mainText, main)
    if (Either.isLeft(fm)) problems.push(...fm.left)
    else {
      raw = fm.right.raw
      body = fm.right.body
      const decoded = decodeAll(AgentFrontMatter)(raw)
      if (Either.isLeft(decoded)) problems.push(...inFile(main, decoded.left))
      else frontMatter = decoded.right
      // metadata keeps any key but these, which would be a prototype rather than data.
      const metadata = own(raw, "metadata")
      if (metadata !== null && typeof metadata === "object" && !Array.isArray(metadata)) {
        for (const key of Object.keys(metadata)) {
          if (key === "__proto__" || key === "constructor" || key === "prototype") {
            problems.push({ path: `${main}#metadata.${key}`, message: "is unexpected (a prototype key, never kept)" })
            frontMatter = undefined
          }
        }
      }
      const name = own(raw, "name")
      if (typeof name === "string" && `${name}.md` !== main) {
        problems.push({ path: `${main}#name`, message: `must equal the file name: ${displayName(main)} declares "${displayName(name)}"` })
      }
    }
  }
  for (const s of localSkills) {
    const t = text.get(s.path)
    if (t !== undefined) problems.push(...localSkillProblems(s.name, s.path, t))
  }
  const evalFiles = evalPaths.flatMap((path) => {
    const t = text.get(path)
    return t === undefined ? [] : [{ path, content: t }]
  })
  problems.push(...parseEvals(evalFiles).problems)
  const thinking = own(raw, "thinking")
  const draft: AgentDraft = {
    file,
    audience: audienceOf(raw),
    tools: listOrUndefined(own(raw, "tools")),
    skills: listOrUndefined(own(raw, "skills")),
    // The schema reports a bad level; the draft keeps only valid ones so it is not reported twice.
    thinking: (THINKING_LEVELS as ReadonlyArray<unknown>).includes(thinking) ? thinking : undefined,
    denyCommandPatterns: listOrUndefined(own(raw, "deny-command-patterns")),
    instructions: body,
    localSkills: localSkills.map((s) => s.name),
    files,
    outputs: listOrUndefined(own(raw, "outputs")),
    answer: own(raw, "answer"),
    schemas: schemas.map((path) => ({ path, content: text.get(path) ?? "" }))
  }
  problems.push(...intrinsicProblems(draft))
  if (problems.length > 0 || frontMatter === undefined || body === undefined) return { pkg: undefined, draft, problems }
  const fmv = frontMatter
  const pkg: AgentPackage = {
    name: fmv.name,
    version: fmv.version,
    description: fmv.description,
    ...(fmv.tools !== undefined ? { tools: fmv.tools } : {}),
    ...(fmv.skills !== undefined ? { skills: fmv.skills } : {}),
    ...(fmv.thinking !== undefined ? { thinking: fmv.thinking } : {}),
    ...(fmv["deny-command-patterns"] !== undefined ? { denyCommandPatterns: fmv["deny-command-patterns"] } : {}),
    ...(fmv.grounding !== undefined ? { grounding: fmv.grounding } : {}),
    ...(fmv.outputs !== undefined ? { outputs: fmv.outputs } : {}),
    ...(fmv.answer !== undefined ? { answer: { schema: fmv.answer.schema } } : {}),
    ...(fmv.gate !== undefined ? { gate: fmv.gate } : {}),
    audience: fmv.metadata?.audience ?? "runtime",
    ...(fmv.metadata?.["memory-role"] !== undefined ? { memoryRole: fmv.metadata["memory-role"] } : {}),
    ...metadataOf(fmv.metadata),
    instructions: body,
    localSkills: localSkills.map((s) => ({ name: s.name, content: text.get(s.path) ?? "" })).sort(byKey((s) => s.name)),
    files: [...files, ...schemas].map((path) => ({ path, content: text.get(path) ?? "" })).sort(byKey((f) => f.path)),
    ...(evalFiles.length > 0 ? { evals: [...evalFiles].sort(byKey((f) => f.path)) } : {})
  }
  return { pkg, draft, problems }
}

/**
 * Parses a package from its files (paths relative to the package root, `/`-separated). Returns the
 * package, or every problem at once with paths as in docs/agent-packages.md: `support-bot.md` (the
 * file), `support-bot.md#tools.2` (a front-matter field), `support-bot.md#body` (the instructions),
 * `skills/x/SKILL.md`, `(package)` (the package as a whole). Never throws; never evaluates anything.
 */
export const parseAgentPackage = (files: ReadonlyArray<RawPackageFile>): Either.Either<AgentPackage, Array<Problem>> => {
  const parsed = parsePackageDraft(files)
  return parsed.pkg !== undefined ? Either.right(parsed.pkg) : Either.left([...parsed.problems])
}
