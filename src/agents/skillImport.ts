/**
 * Agent Skills (agentskills.io, and Claude Code's skills) as people write them: a standalone
 * `SKILL.md`, or a folder or ZIP with `SKILL.md` at its top and resource files (scripts/,
 * references/, assets/, files beside SKILL.md). `name` and `description` are required (the name may
 * come from the folder); `license` and `version` are kept; `allowed-tools` is mapped like subagent
 * tools and kept in metadata (a skill grants no tool: the agent's tools apply, so an unknown name is
 * a note here, not a problem); other keys are kept in metadata with a note. Every problem at once.
 */
import { Either } from "effect"
import { SKILL_NAME } from "../contract/AgentDefinition.ts"
import type { Problem } from "../contract/Problem.ts"
import { readFrontMatter } from "./frontMatter.ts"
import { FORBIDDEN_KEYS, isRecord, keepForeign, mapTools, nameFrom, own, textOf, toolList, type ToolMapping } from "./interop.ts"
import { MAX_PACKAGE_BYTES, MAX_PACKAGE_FILE_BYTES, MAX_PACKAGE_FILES, PACKAGE_PATH, type RawPackageFile } from "./packageFiles.ts"
import { displayName, duplicateNames, pathProblems } from "../contract/packagePaths.ts"
import { MAX_DESCRIPTION_LENGTH, MAX_ITEM_LENGTH, MAX_SKILL_NAME_LENGTH } from "./packageSchema.ts"

const SKILL_FILE = "SKILL.md"
/** Longest SKILL.md body (the skill's content, embedded in every job that lists it). */
const MAX_SKILL_CONTENT_BYTES = 256 * 1024

/** A shared skill ready to be stored: front matter read, resources checked. */
export interface SkillImport {
  readonly name: string
  readonly description: string
  readonly license: string | null
  readonly version: string | null
  readonly metadata: Readonly<Record<string, unknown>>
  /** The body of SKILL.md. */
  readonly content: string
  readonly files: ReadonlyArray<{ readonly path: string; readonly content: Uint8Array }>
}

export interface SkillParsed {
  readonly skill: SkillImport | undefined
  readonly notes: Array<string>
  readonly toolMapping: Array<ToolMapping>
  readonly problems: Array<Problem>
}

/** An upload is a skill when SKILL.md is at its top (after one enclosing folder is removed). */
export const isSkillUpload = (files: ReadonlyArray<{ readonly path: string }>): boolean => files.some((f) => f.path === SKILL_FILE)

const NATIVE_SKILL_KEYS = new Set(["name", "description", "license", "version", "allowed-tools", "metadata"])
const bytesOf = (c: string | Uint8Array): Uint8Array => (typeof c === "string" ? new TextEncoder().encode(c) : c)

/** Parses an Agent Skill upload; `folder` (the enclosing folder's name, if any) names a skill whose front matter has no name. */
export const parseSkillFiles = (files: ReadonlyArray<RawPackageFile>, folder?: string): SkillParsed => {
  const notes: Array<string> = []
  const problems: Array<Problem> = []
  if (files.length > MAX_PACKAGE_FILES) {
    return {
      skill: undefined,
      notes,
      toolMapping: [],
      problems: [{ path: PACKAGE_PATH, message: `more than ${MAX_PACKAGE_FILES} files (found ${files.length})` }]
    }
  }
  let total = 0
  const bad = new Set<number>()
  files.forEach((f, i) => {
    for (const message of pathProblems(f.path)) {
      problems.push({ path: displayName(f.path), message })
      bad.add(i)
    }
    const size = bytesOf(f.content).byteLength
    total += size
    if (size > MAX_PACKAGE_FILE_BYTES) {
      problems.push({ path: displayName(f.path), message: `larger than ${MAX_PACKAGE_FILE_BYTES} bytes (${size})` })
      bad.add(i)
    }
  })
  for (const { index, firstName } of duplicateNames(files.map((f) => f.path))) {
    problems.push({
      path: displayName(files[index]?.path ?? ""),
      message: `duplicate of "${displayName(firstName)}" (names are compared ignoring case and Unicode normalisation)`
    })
    bad.add(index)
  }
  if (total > MAX_PACKAGE_BYTES)
    problems.push({ path: PACKAGE_PATH, message: `the files together are larger than ${MAX_PACKAGE_BYTES} bytes (${total})` })

  const main = files.find((f) => f.path === SKILL_FILE)
  const text = main === undefined ? undefined : textOf(main.content)?.replace(/^\uFEFF/, "")
  let toolMapping: Array<ToolMapping> = []
  let skill: SkillImport | undefined
  if (main === undefined) problems.push({ path: PACKAGE_PATH, message: "no SKILL.md at the top of the skill" })
  else if (text === undefined) problems.push({ path: SKILL_FILE, message: "is not valid UTF-8 text" })
  else {
    const fm = readFrontMatter(text, SKILL_FILE)
    if (Either.isLeft(fm))
      problems.push(
        ...fm.left.map((p) =>
          p.message.startsWith("must start with")
            ? { ...p, message: "must start with front matter holding at least name and description" }
            : p
        )
      )
    else {
      const raw = fm.right.raw
      let name = own(raw, "name")
      if (name === undefined || name === null || name === "") {
        if (folder !== undefined && nameFrom(folder) !== "") {
          name = nameFrom(folder)
          notes.push(`${SKILL_FILE}: no name in the front matter; named "${String(name)}" after its folder`)
        } else problems.push({ path: `${SKILL_FILE}#name`, message: "is required (or upload the skill in a folder named after it)" })
      } else if (typeof name === "string" && name.includes(":")) {
        const plain = nameFrom(name.slice(name.lastIndexOf(":") + 1))
        notes.push(`${SKILL_FILE}: the plugin prefix of "${displayName(name)}" is dropped; named "${plain}"`)
        name = plain
      }
      if (name !== undefined && (typeof name !== "string" || !SKILL_NAME.test(name) || name.length > MAX_SKILL_NAME_LENGTH)) {
        problems.push({
          path: `${SKILL_FILE}#name`,
          message: `must match [a-z][a-z0-9-]* and be at most ${MAX_SKILL_NAME_LENGTH} characters`
        })
      }
      const description = own(raw, "description")
      if (typeof description !== "string" || description.trim() === "")
        problems.push({ path: `${SKILL_FILE}#description`, message: "is required: say what the skill does and when to use it" })
      else if (description.length > MAX_DESCRIPTION_LENGTH)
        problems.push({ path: `${SKILL_FILE}#description`, message: `must be at most ${MAX_DESCRIPTION_LENGTH} characters` })
      const label = (key: string): string | null => {
        const v = own(raw, key)
        if (v === undefined || v === null) return null
        if ((typeof v === "string" && v !== "" && v.length <= MAX_ITEM_LENGTH) || (typeof v === "number" && Number.isFinite(v)))
          return String(v)
        problems.push({ path: `${SKILL_FILE}#${key}`, message: `must be a non-empty string of at most ${MAX_ITEM_LENGTH} characters` })
        return null
      }
      const license = label("license")
      let version = label("version")
      for (const key of [...Object.keys(raw), ...(isRecord(raw["metadata"]) ? Object.keys(raw["metadata"]) : [])]) {
        if (FORBIDDEN_KEYS.has(key)) problems.push({ path: `${SKILL_FILE}#${displayName(key)}`, message: "is not allowed" })
      }
      const metadataRaw = own(raw, "metadata")
      if (metadataRaw !== undefined && !isRecord(metadataRaw))
        problems.push({ path: `${SKILL_FILE}#metadata`, message: "must be a mapping of keys to values" })
      const metadata = keepForeign(raw, NATIVE_SKILL_KEYS, SKILL_FILE, notes)
      if (
        version === null &&
        isRecord(metadataRaw) &&
        (typeof metadataRaw["version"] === "string" || typeof metadataRaw["version"] === "number")
      ) {
        version = String(metadataRaw["version"])
      }
      const allowed = own(raw, "allowed-tools")
      if (allowed !== undefined) {
        const list = toolList(allowed)
        if (list === undefined)
          problems.push({ path: `${SKILL_FILE}#allowed-tools`, message: "must be a list of tool names or a string of them" })
        else {
          const mapped = mapTools(list)
          toolMapping = mapped.mapping
          metadata["allowed-tools"] = mapped.tools
          const unknown = mapped.mapping.filter((m) => m.to === null).map((m) => displayName(m.from))
          notes.push(
            `${SKILL_FILE}: allowed-tools kept in metadata as ${mapped.tools.length === 0 ? "[]" : mapped.tools.map(String).join(", ")} (a skill grants no tool: the agent's tools apply)` +
              (unknown.length > 0 ? `; no kernel tool for ${unknown.join(", ")}` : "")
          )
        }
      }
      const body = fm.right.body
      if (body.trim() === "")
        problems.push({ path: `${SKILL_FILE}#body`, message: "the instructions (the text after the front matter) must not be empty" })
      if (Buffer.byteLength(body, "utf8") > MAX_SKILL_CONTENT_BYTES)
        problems.push({ path: `${SKILL_FILE}#body`, message: `is larger than ${MAX_SKILL_CONTENT_BYTES} bytes` })
      const resources = files.flatMap((f, i) => (f === main || bad.has(i) ? [] : [{ path: f.path, content: bytesOf(f.content) }]))
      if (resources.length > 0)
        notes.push(
          `${resources.length} resource file${resources.length === 1 ? "" : "s"} stored with the skill: ${resources.map((r) => displayName(r.path)).join(", ")}`
        )
      if (typeof name === "string" && typeof description === "string") {
        skill = { name, description, license, version, metadata, content: body, files: resources }
      }
    }
  }
  return { skill: problems.length === 0 ? skill : undefined, notes, toolMapping, problems }
}
