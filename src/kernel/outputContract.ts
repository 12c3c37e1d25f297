/**
 * The output contract of an agent (`outputs:` in its front matter, part of the immutable version):
 * the files, relative to outDir, a job must leave. Checked by the agent loop at the model's final
 * answer, before `job.completed`: each file was written by the job (an `output` event), is a
 * non-empty regular file in outDir now, and — for `.json` — parses as JSON and, when the entry carries
 * a JSON Schema (from the package, in the job definition), satisfies it: each violation is named by its
 * JSON pointer. The model gets one chance to fix the problems in the same job, shared with the
 * typed answer's (answer.ts, agentLoop.ts). The
 * schema engine (ajv, src/kernel/jsonSchema.ts) is loaded only when a job's contract has a schema.
 */
import { Effect, Either } from "effect"
import { dirname } from "node:path"
import { type OutputFile, outputFileName } from "../contract/AgentDefinition.ts"
import { isInside } from "../job/confinement.ts"
import { readOutputFile } from "../job/outputFile.ts"
import { Workspace } from "../job/Workspace.ts"

/** Largest contracted file checked; a bigger one is a problem (say so rather than read it). */
const MAX_CONTRACT_BYTES = 10 * 1024 * 1024

export type FileState =
  | { readonly kind: "missing" | "not-regular" | "too-large" | "empty" }
  | { readonly kind: "text"; readonly text: string }

/**
 * An output file as the job left it, never following a link: missing, not a regular file with one
 * link inside `outDir`, larger than `maxBytes`, empty, or its text (readOutputFile: also what the
 * portal's output view reads with). Also what grounding and evals read outputs with.
 */
export const inspectOutput = (path: string, outDir: string, maxBytes: number = MAX_CONTRACT_BYTES): Promise<FileState> =>
  (async (): Promise<FileState> => {
    const { realpath } = await import("node:fs/promises")
    const parent = await realpath(dirname(path)).catch(() => undefined)
    if (parent === undefined) return { kind: "missing" }
    if (!isInside(parent, outDir)) return { kind: "not-regular" }
    const read = await readOutputFile(path, outDir, maxBytes)
    if (read.kind !== "bytes") return read
    return read.bytes.length === 0 ? { kind: "empty" } : { kind: "text", text: new TextDecoder().decode(read.bytes) }
  })()

/** Largest file checked against a JSON Schema (the size the grounding check reads, too). */
const MAX_SCHEMA_CHECKED_BYTES = 2 * 1024 * 1024

/** Every violation of `data` against the entry's schema, one sentence each (the pointer and the message). */
const schemaProblems = (entry: Exclude<OutputFile, string>, data: unknown, bytes: number): Effect.Effect<Array<string>> =>
  Effect.promise(async () => {
    if (bytes > MAX_SCHEMA_CHECKED_BYTES)
      return [`${entry.file}: larger than ${MAX_SCHEMA_CHECKED_BYTES / 1048576} MB, too large to check against ${entry.schema}`]
    const { compileJsonSchema, MAX_SCHEMA_PROBLEMS } = await import("./jsonSchema.ts")
    const compiled = compileJsonSchema(entry.schemaText)
    if (Either.isLeft(compiled)) return [`${entry.file}: its schema ${entry.schema} cannot be used (${compiled.left})`]
    const violations = compiled.right(data)
    const named = violations
      .slice(0, MAX_SCHEMA_PROBLEMS)
      .map((v) => `${entry.file} at ${v.pointer === "" ? "/" : v.pointer}: ${v.message} (${entry.schema})`)
    const more = violations.length - named.length
    return more > 0 ? [...named, `${entry.file}: ${more} more schema violations`] : named
  })

const parseJson = (text: string): Either.Either<unknown, string> =>
  Either.try({ try: (): unknown => JSON.parse(text), catch: (e) => (e instanceof Error ? e.message : "parse error") })

/** Every problem of the job's outputs against the contract, one sentence each (empty = satisfied). */
export const contractProblems = (
  contract: ReadonlyArray<OutputFile>,
  written: ReadonlyArray<string>
): Effect.Effect<Array<string>, never, Workspace> =>
  Effect.gen(function* () {
    const ws = yield* Workspace
    const problems: Array<string> = []
    for (const entry of contract) {
      const file = outputFileName(entry)
      const target = yield* Effect.either(ws.resolveWrite(file))
      if (target._tag === "Left") {
        problems.push(`${file}: not a path in the output directory`)
        continue
      }
      const state = yield* Effect.promise(() =>
        inspectOutput(target.right.path, ws.paths.outDir).catch((): FileState => ({ kind: "not-regular" }))
      )
      if (state.kind === "missing" || !written.includes(target.right.display)) {
        problems.push(`${file}: missing (write it with the write tool)`)
        continue
      }
      if (state.kind === "not-regular") problems.push(`${file}: not a regular file`)
      else if (state.kind === "too-large") problems.push(`${file}: larger than ${MAX_CONTRACT_BYTES / 1048576} MB`)
      else if (state.kind === "empty") problems.push(`${file}: empty`)
      else if (state.kind === "text" && file.toLowerCase().endsWith(".json")) {
        const parsed = parseJson(state.text)
        if (Either.isLeft(parsed)) problems.push(`${file}: not valid JSON (${parsed.left})`)
        else if (typeof entry !== "string")
          problems.push(...(yield* schemaProblems(entry, parsed.right, Buffer.byteLength(state.text, "utf8"))))
      }
    }
    return problems
  })

/**
 * The message that gives the model its one chance to fix the outputs and the typed answer (answer.ts):
 * every problem, and when the answer is at fault, the form it must take.
 */
export const contractNudge = (problems: ReadonlyArray<string>, answer?: { readonly schema: string }): string =>
  `Your ${answer === undefined ? "outputs do not meet this agent's output contract" : "outputs or final answer do not meet this agent's output contract"}:\n` +
  `${problems.map((p) => `- ${p}`).join("\n")}\n` +
  (answer === undefined
    ? "Fix every problem now with your tools, then give your final answer again."
    : "Fix every problem now (the files with your tools), then give your final answer again: the answer as JSON valid against " +
      `${answer.schema}, alone or in one \`\`\`json block ending the message.`) +
  " This is your only chance: if the outputs still violate the contract, the job fails."
