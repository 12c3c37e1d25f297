/**
 * JSON Schemas of output files (output contracts): an agent package's `schemas/<name>.json`,
 * compiled by ajv 8 (Effect's JSON Schema support only writes schemas from Effect Schemas; it cannot
 * check a document against an arbitrary JSON Schema). The package checks compile a schema to refuse a
 * bad one; the kernel compiles the text its job definition carries and checks each output against it.
 *
 * The schema's author is an admin; the checked output is the model's, so hostile. Bounds:
 * - a schema is at most MAX_SCHEMA_BYTES of JSON, and `$ref`s are compiled as functions, never inlined
 *   (`inlineRefs: false`), so the generated code grows with the schema, not exponentially;
 * - nothing is ever fetched: `$ref` resolves only inside the schema (a remote or unknown one is a
 *   compile problem), `$data` is off, `format` is an annotation (no format code runs);
 * - `pattern` and `patternProperties` run on re2js (linear time, no backtracking): a pattern re2 cannot
 *   run (backreferences, lookaround) is a compile problem;
 * - `uniqueItems` is checked in linear time (one canonical JSON key per item) instead of ajv's pairwise
 *   comparison, which is quadratic in the number of items;
 * - the output is at most the contract's file cap, and validation that throws (a stack overflow on a
 *   deeply nested document) is a problem, not a crash.
 */
import type { AnySchema, ErrorObject, Options, ValidateFunction } from "ajv"
import { Either } from "effect"
import { RE2JS } from "re2js"
import { MAX_OUTPUT_SCHEMA_BYTES } from "../contract/AgentDefinition.ts"
import { Ajv, Ajv2020 } from "./ajvEngines.ts"

/** Largest schema file, UTF-8 bytes. */
const MAX_SCHEMA_BYTES = MAX_OUTPUT_SCHEMA_BYTES
/** A longer pointer is cut (keys are the model's text). */
const MAX_POINTER_CHARS = 200
/** Problems named per output file; the rest are counted. */
export const MAX_SCHEMA_PROBLEMS = 20

const DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/

/** One place in the checked document that violates the schema. */
interface SchemaViolation {
  /** JSON pointer into the document (`/findings/0/line`; `` is the whole document). */
  readonly pointer: string
  readonly message: string
}

/** A compiled schema: every violation of a parsed document ([] = valid). */
export type CompiledSchema = (data: unknown) => Array<SchemaViolation>

/** re2js behind ajv's RegExp interface: patterns of the schema run in linear time on the model's text. */
const re2 = Object.assign(
  (pattern: string): { test: (s: string) => boolean } => {
    const rx = RE2JS.compile(pattern)
    return { test: (s: string) => rx.matcher(s).find() }
  },
  { code: "re2js" }
)

/** A key equal for JSON-equal values (object keys sorted), so uniqueness is one Set lookup per item. */
const canonical = (v: unknown): string => {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(",")}}`
  }
  return JSON.stringify(v) ?? "null"
}

interface UniqueItems {
  (schema: boolean, data: ReadonlyArray<unknown>): boolean
  errors?: Array<Partial<ErrorObject>>
}
const uniqueItems: UniqueItems = (schema, data) => {
  uniqueItems.errors = []
  if (!schema) return true
  const seen = new Map<string, number>()
  for (let i = 0; i < data.length; i++) {
    const key = canonical(data[i])
    const j = seen.get(key)
    if (j !== undefined) {
      uniqueItems.errors = [
        { keyword: "uniqueItems", message: `must NOT have duplicate items (items ${j} and ${i} are identical)`, params: { i, j } }
      ]
      return false
    }
    seen.set(key, i)
  }
  return true
}

const OPTIONS: Options = {
  allErrors: true,
  strict: true,
  strictTypes: false,
  strictRequired: false,
  strictTuples: false,
  validateFormats: false,
  inlineRefs: false,
  $data: false,
  code: { regExp: re2 }
}

const engine = (schema: unknown): Either.Either<Ajv, string> => {
  const declared = schema !== null && typeof schema === "object" ? (schema as Record<string, unknown>)["$schema"] : undefined
  const ajv =
    declared === DRAFT_2020
      ? new Ajv2020(OPTIONS)
      : declared === undefined || (typeof declared === "string" && DRAFT_07.test(declared))
        ? new Ajv(OPTIONS)
        : undefined
  if (ajv === undefined)
    return Either.left(
      `$schema must be draft-07 (${"http://json-schema.org/draft-07/schema#"}) or 2020-12 (${DRAFT_2020}), or left out (draft-07)`
    )
  ajv.removeKeyword("uniqueItems")
  ajv.addKeyword({ keyword: "uniqueItems", type: "array", schemaType: "boolean", validate: uniqueItems })
  return Either.right(ajv)
}

const pointerOf = (e: ErrorObject): string => {
  const extra =
    e.keyword === "required" && typeof e.params["missingProperty"] === "string"
      ? e.params["missingProperty"]
      : e.keyword === "additionalProperties" && typeof e.params["additionalProperty"] === "string"
        ? e.params["additionalProperty"]
        : undefined
  // The missing or extra property is where the problem is; escaped as a pointer token (RFC 6901).
  const pointer = extra === undefined ? e.instancePath : `${e.instancePath}/${extra.replace(/~/g, "~0").replace(/\//g, "~1")}`
  // Keys are the model's text: no raw control characters, no unbounded length in a message.
  const shown = pointer.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
  return shown.length > MAX_POINTER_CHARS ? `${shown.slice(0, MAX_POINTER_CHARS)}…` : shown
}

const violationsOf = (validate: ValidateFunction, data: unknown): Array<SchemaViolation> => {
  try {
    if (validate(data)) return []
  } catch (e) {
    return [
      {
        pointer: "",
        message: `could not be checked against the schema (${e instanceof RangeError ? "nested too deeply" : "validation error"})`
      }
    ]
  }
  const errors = validate.errors ?? []
  return errors.map((e) => ({
    pointer: pointerOf(e),
    message:
      e.keyword === "additionalProperties"
        ? "is not allowed (additional property)"
        : e.keyword === "required"
          ? "is required"
          : (e.message ?? `fails ${e.keyword}`)
  }))
}

/**
 * Compiles the text of a schema file: the check, or every reason it is not a usable JSON Schema
 * (too large, not JSON, an unsupported draft, an unresolvable or remote `$ref`, an unknown keyword, a
 * pattern re2 cannot run). Never throws; never fetches anything.
 */
export const compileJsonSchema = (text: string): Either.Either<CompiledSchema, string> => {
  if (Buffer.byteLength(text, "utf8") > MAX_SCHEMA_BYTES) return Either.left(`a schema is at most ${MAX_SCHEMA_BYTES / 1024} KiB`)
  let schema: unknown
  try {
    schema = JSON.parse(text)
  } catch (e) {
    return Either.left(`not valid JSON (${e instanceof Error ? e.message : "parse error"})`)
  }
  if (typeof schema !== "boolean" && (schema === null || typeof schema !== "object" || Array.isArray(schema))) {
    return Either.left("a JSON Schema is an object (or true / false)")
  }
  return Either.flatMap(engine(schema), (ajv) => {
    try {
      const validate = ajv.compile(schema as AnySchema)
      return Either.right((data: unknown) => violationsOf(validate, data))
    } catch (e) {
      return Either.left(`not a valid JSON Schema: ${e instanceof Error ? e.message.split("\n")[0] : "compile error"}`)
    }
  })
}
