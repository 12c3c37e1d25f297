/**
 * The package side of output contracts with JSON Schemas (docs/grounding.md "Output contracts"):
 * `outputs:` entries, the typed `answer:`, and the `schemas/<name>.json` files they name. A schema
 * must be in the package and compile (src/kernel/jsonSchema.ts); it is carried whole into the job
 * definition.
 */
import { Either } from "effect"
import type { AnswerContract, OutputFile } from "../contract/AgentDefinition.ts"
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
    const problem = schemaRefProblem(entry.schema, present)
    if (problem !== undefined) problems.push({ path: `${file}#outputs.${i}.schema`, message: problem })
  })
  return problems
}

/** Where a `schema` names a file: a schemas/<name>.json path that is in the package, or the problem. */
const schemaRefProblem = (schema: string, present: ReadonlySet<string>): string | undefined =>
  pathProblems(schema).length > 0 || pathRole(schema).role !== "schema"
    ? `must be a schemas/<name>.json file of the package, not "${displayName(schema)}"`
    : present.has(schema)
      ? undefined
      : `${displayName(schema)} is not in the package`

/**
 * The problem of the typed answer (`answer: { schema }`): its schema is a schemas/<name>.json of the
 * package (whether it compiles is outputProblems' check of every schema file). A malformed `answer`
 * is skipped (the front-matter schema reports it).
 */
export const answerProblems = (file: string, answer: unknown, schemas: ReadonlyArray<PackageFile>): Array<Problem> => {
  const schema = isRecord(answer) ? answer["schema"] : undefined
  if (typeof schema !== "string") return []
  const problem = schemaRefProblem(schema, new Set(schemas.map((s) => s.path)))
  return problem === undefined ? [] : [{ path: `${file}#answer.schema`, message: problem }]
}

/** The answer contract as the job definition carries it. Precondition: answerProblems returned []. */
export const answerOf = (answer: { readonly schema: string }, files: ReadonlyArray<PackageFile>): AnswerContract => {
  const schemaText = files.find((f) => f.path === answer.schema)?.content
  if (schemaText === undefined) throw new Error(`answerOf: ${answer.schema} is missing; validate the agent first`)
  return { schema: answer.schema, schemaText }
}

/** The contract as the job definition carries it: each schema's text with its entry. Precondition: outputProblems returned []. */
export const contractOf = (outputs: ReadonlyArray<OutputEntry>, files: ReadonlyArray<PackageFile>): Array<OutputFile> =>
  outputs.map((o) => {
    if (typeof o === "string") return o
    const schemaText = files.find((f) => f.path === o.schema)?.content
    if (schemaText === undefined) throw new Error(`contractOf: ${o.schema} is missing; validate the agent first`)
    return { file: o.file, schema: o.schema, schemaText }
  })
