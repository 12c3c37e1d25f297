/**
 * Documents written by version 0.1.0 of the contract (test/contract/fixtures/, checked in, never
 * regenerated): every later version decodes them with the schemas `kintsugi-runtime/contract` exports.
 * New fields are optional, so these stay valid; a fixture field the schema no longer knows, or one it
 * now requires, is a breaking change to documents already stored and parsed by others.
 */
import { describe, expect, test } from "bun:test"
import { Either, ParseResult, Schema } from "effect"
import type { ParseOptions } from "effect/SchemaAST"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { AgentDefinition, FAILURE_REASONS, JobEvent, JobRefusedLine, JobSpec } from "kintsugi-runtime/contract"

const DIR = join(import.meta.dir, "fixtures")
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .sort()

type Decode = (document: unknown, options: ParseOptions) => Either.Either<unknown, ParseResult.ParseError>

/** The decoder of a fixture file's schema, by the file's name. */
const decoderOf = (file: string): Decode | undefined => {
  if (file.startsWith("agent-definition.")) return Schema.decodeUnknownEither(AgentDefinition)
  if (file.startsWith("job-spec.")) return Schema.decodeUnknownEither(JobSpec)
  if (file.startsWith("job-event.")) return Schema.decodeUnknownEither(JobEvent)
  if (file === "job-refused.json") return Schema.decodeUnknownEither(JobRefusedLine)
  return undefined
}

/** A top-level field of a parsed document. */
const fieldOf = (document: unknown, key: string): unknown =>
  document !== null && typeof document === "object" && Object.hasOwn(document, key)
    ? Object.getOwnPropertyDescriptor(document, key)?.value
    : undefined

/** A file holds one document, or (the events) an array of documents of one type. */
const documentsOf = (file: string): ReadonlyArray<unknown> => {
  const parsed: unknown = JSON.parse(readFileSync(join(DIR, file), "utf8"))
  return file.startsWith("job-event.") && Array.isArray(parsed) ? parsed : [parsed]
}

/** Decoding problems of one document, every one of them (empty: it decodes). */
const problems = (decode: Decode, document: unknown, strict: boolean): string | undefined => {
  const decoded = decode(document, { errors: "all", onExcessProperty: strict ? "error" : "ignore" })
  return Either.isLeft(decoded) ? ParseResult.TreeFormatter.formatErrorSync(decoded.left) : undefined
}

describe("contract fixtures of 0.1.0", () => {
  test("every fixture file has a schema, and every JobEvent type has a fixture", () => {
    expect(FILES.filter((f) => decoderOf(f) === undefined)).toEqual([])
    const types = JobEvent.members.map((m) => m.fields.type.literals[0])
    expect(types.filter((t) => !FILES.includes(`job-event.${t}.json`))).toEqual([])
    expect(FILES.filter((f) => f.startsWith("job-spec."))).toHaveLength(2)
    expect(FILES.filter((f) => f.startsWith("agent-definition."))).toHaveLength(2)
  })

  for (const file of FILES) {
    test(`${file} decodes with today's schema`, () => {
      const decode = decoderOf(file)
      expect(decode).toBeDefined()
      if (decode === undefined) return
      const documents = documentsOf(file)
      expect(documents.length).toBeGreaterThan(0)
      // Decodable as a later reader decodes it (unknown fields ignored)…
      expect(documents.map((d) => problems(decode, d, false))).toEqual(documents.map(() => undefined))
      // …and every field it carries is still one the schema knows.
      expect(documents.map((d) => problems(decode, d, true))).toEqual(documents.map(() => undefined))
      if (file.startsWith("job-event.")) {
        const type = file.slice("job-event.".length, -".json".length)
        expect(documents.map((d) => fieldOf(d, "type"))).toEqual(documents.map(() => type))
      }
    })
  }

  test("the job.failed fixtures cover every failure reason of 0.1.0", () => {
    const reasons = documentsOf("job-event.job.failed.json").map((d) => fieldOf(d, "reason"))
    expect([...FAILURE_REASONS].filter((r) => !reasons.includes(r))).toEqual([])
  })
})
