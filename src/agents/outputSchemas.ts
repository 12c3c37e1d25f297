/**
 * The package side of output contracts with JSON Schemas (docs/grounding.md "Output contracts"):
 * `outputs:` entries and the `schemas/<name>.json` files they name. A schema must be in the package
 * and compile (src/kernel/jsonSchema.ts); it is carried whole into the job definition.
 */
import { Either } from "effect"
import type { OutputFile } from "../contract/AgentDefinition.ts"
import type { Problem } from "../contract/Problem.ts"
import { compileJsonSchema } from "../kernel/jsonSchema.ts"
import { displayName, foldKey, pathProblems } from "../contract/packagePaths.ts"
import type { OutputEntry, PackageFile } from "./packageSchema.ts"
import { isRecord } from "./interop.ts"
import { pathRole } from "./packageSkills.ts"

/** Compile results by schema text: a catalog validates the same versions again and again. */
const compiled = new Map<string, string | undefined>()
const MAX_REMEMBERED = 128

/** Why a schema file's text is not a usable JSON Schema, or undefined. */
const schemaProblem = (text: string): string | undefined => {
  if (compiled.has(text)) return compiled.get(text)
  const result = compileJsonSchema(text)
  const problem = Either.isLeft(result) ? result.left : undefined
  if (compiled.size >= MAX_REMEMBERED) compiled.clear()
  compiled.set(text, problem)
  return problem
}

const entryOf = (v: unknown): { file: unknown; schema: unknown } | undefined =>
  typeof v === "string" ? { file: v, schema: undefined } : isRecord(v) ? { file: v["file"], schema: v["schema"] } : undefined

/**
 * Every problem of the output contract and the schema files: each schema file compiles; an entry's
 * file is a relative path listed once; a `schema` is a `schemas/<name>.json` of the package, and only
 * for a `.json` file. Entries the front-matter schema refuses are skipped (reported there).
 */
export const outputProblems = (
  file: string,
  outputs: ReadonlyArray<unknown> | undefined,
  schemas: ReadonlyArray<PackageFile>
): Array<Problem> => {
  const problems: Array<Problem> = []
  for (const s of schemas) {
    const problem = schemaProblem(s.content)
    if (problem !== undefined) problems.push({ path: displayName(s.path), message: problem })
  }
  const present = new Set(schemas.map((s) => s.path))
  const seen = new Set<string>()
  ;(outputs ?? []).forEach((raw, i) => {
    const entry = entryOf(raw)
    if (entry === undefined || typeof entry.file !== "string") return
    const at = typeof raw === "string" ? `${file}#outputs.${i}` : `${file}#outputs.${i}.file`
    const bad = pathProblems(entry.file)
    if (bad.length > 0) problems.push({ path: at, message: `must be a file name in the output directory: ${bad.join("; ")}` })
    const key = foldKey(entry.file)
    if (seen.has(key)) problems.push({ path: at, message: `"${displayName(entry.file)}" is listed twice` })
    seen.add(key)
    if (typeof entry.schema !== "string") return
    if (!entry.file.toLowerCase().endsWith(".json")) problems.push({ path: at, message: "a schema applies to a .json file only" })
    const schemaAt = `${file}#outputs.${i}.schema`
    if (pathProblems(entry.schema).length > 0 || pathRole(entry.schema).role !== "schema") {
      problems.push({ path: schemaAt, message: `must be a schemas/<name>.json file of the package, not "${displayName(entry.schema)}"` })
    } else if (!present.has(entry.schema)) {
      problems.push({ path: schemaAt, message: `${displayName(entry.schema)} is not in the package` })
    }
  })
  return problems
}

/** The contract as the job definition carries it: each schema's text with its entry. Precondition: outputProblems returned []. */
export const contractOf = (outputs: ReadonlyArray<OutputEntry>, files: ReadonlyArray<PackageFile>): Array<OutputFile> =>
  outputs.map((o) => {
    if (typeof o === "string") return o
    const schemaText = files.find((f) => f.path === o.schema)?.content
    if (schemaText === undefined) throw new Error(`contractOf: ${o.schema} is missing; validate the agent first`)
    return { file: o.file, schema: o.schema, schemaText }
  })
