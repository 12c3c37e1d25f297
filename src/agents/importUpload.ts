/**
 * One import for everything people upload: an agent package (this project's format or a Claude
 * Code subagent file) or an Agent Skill (a SKILL.md, or a folder or ZIP with SKILL.md at its top and
 * resource files), told apart by where SKILL.md is. Every problem in one round.
 */
import { Effect } from "effect"
import { AgentStore } from "./AgentStore.ts"
import type { AgentView } from "./AgentView.ts"
import { type AgentExists, type AgentInvalid, type BuiltinReadOnly, ImportRejected, SkillInvalid, type SkillNameTaken } from "./errors.ts"
import type { ImportOptions, ToolMapping } from "./interop.ts"
import type { RawPackageFile } from "./packageFiles.ts"
import { isSkillUpload, parseSkillFiles } from "./skillImport.ts"
import { SkillStore, type SkillView } from "./SkillStore.ts"
import { readZip, unwrapSingleFolder } from "./zip.ts"

export type ImportOutcome =
  | {
      readonly kind: "agent"
      readonly agent: AgentView
      readonly changed: boolean
      readonly notes: ReadonlyArray<string>
      readonly warnings: ReadonlyArray<string>
      readonly toolMapping: ReadonlyArray<ToolMapping>
    }
  | {
      readonly kind: "skill"
      readonly skill: SkillView
      readonly created: boolean
      readonly notes: ReadonlyArray<string>
      readonly warnings: ReadonlyArray<string>
      readonly toolMapping: ReadonlyArray<ToolMapping>
    }

export type ImportError = AgentInvalid | AgentExists | BuiltinReadOnly | SkillInvalid | SkillNameTaken | ImportRejected

/** The single folder every path starts with, if any. */
const enclosingFolder = (files: ReadonlyArray<{ readonly path: string }>): string | undefined => {
  const first = files[0]?.path.split("/")[0]
  return first !== undefined && files.every((f) => f.path.startsWith(`${first}/`)) ? first : undefined
}

/** Imports an agent package or an Agent Skill; `strict` refuses Claude Code tools an agent would lose. */
export const importUpload = (
  files: ReadonlyArray<RawPackageFile>,
  by: string,
  options: ImportOptions = {}
): Effect.Effect<ImportOutcome, ImportError, AgentStore | SkillStore> =>
  Effect.gen(function* () {
    const unwrapped = unwrapSingleFolder(files)
    if (!isSkillUpload(unwrapped)) {
      const imported = yield* (yield* AgentStore).importFiles(files, by, options)
      return { kind: "agent" as const, ...imported }
    }
    const parsed = parseSkillFiles(unwrapped, enclosingFolder(files))
    if (parsed.skill === undefined) return yield* Effect.fail(new SkillInvalid({ problems: parsed.problems }))
    const { skill, created } = yield* (yield* SkillStore).importSkill(parsed.skill, by)
    return { kind: "skill" as const, skill, created, notes: parsed.notes, warnings: [], toolMapping: parsed.toolMapping }
  })

export const importZipUpload = (
  zip: Uint8Array,
  by: string,
  options: ImportOptions = {}
): Effect.Effect<ImportOutcome, ImportError, AgentStore | SkillStore> =>
  Effect.flatMap(
    Effect.mapError(readZip(zip), (rejected) => new ImportRejected({ problems: rejected.problems })),
    (entries) => importUpload(entries, by, options)
  )
