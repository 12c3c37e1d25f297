/**
 * The typed answer of an agent that declares `answer:` (docs/agent-packages.md): the model's final
 * message read as one JSON value and checked against the agent's JSON Schema. The message is either
 * the JSON value alone, or prose ending with one fenced ```json (or bare ```) block holding it;
 * anything else is a problem, and so is a value the event store would not keep as it is (nested
 * deeper than MAX_ANSWER_DEPTH, a U+0000 or unpaired surrogate in a string or key, a number JSON cannot
 * hold). The agent loop checks it with the output contract, sharing its one
 * chance to fix (agentLoop.ts); every problem is one sentence naming the place (a JSON pointer).
 */
import { Effect, Either } from "effect"
import type { AnswerContract } from "../contract/AgentDefinition.ts"

/** Largest answer, UTF-8 bytes of its JSON text: an answer is a short structured result. */
const MAX_ANSWER_BYTES = 64 * 1024
/** Deepest nesting of arrays and objects in an answer (the API's bound on a JSON body). */
const MAX_ANSWER_DEPTH = 64

/** The answer checked: the parsed value when valid, else every problem. */
type CheckedAnswer = { readonly _tag: "Valid"; readonly value: unknown } | { readonly _tag: "Invalid"; readonly problems: Array<string> }

const FENCE = "```"

/**
 * The content of a fenced block (opened by ```json or a bare ```) that ends `text`, else undefined.
 * The opening fence is the last line before the closing one that starts with ``` (after indentation):
 * a JSON string holds no line break, so a ``` inside one never starts a line.
 */
const fencedJson = (text: string): string | undefined => {
  if (!text.endsWith(FENCE)) return undefined
  const lines = text.slice(0, -FENCE.length).split("\n")
  const open = lines.findLastIndex((line) => line.trimStart().startsWith(FENCE))
  if (open === -1 || open === lines.length - 1) return undefined
  const info = (lines[open] ?? "").trimStart().slice(FENCE.length).trim().toLowerCase()
  return info === "" || info === "json" ? lines.slice(open + 1).join("\n") : undefined
}

/**
 * True when `text`, read as JSON, nests arrays/objects deeper than MAX_ANSWER_DEPTH. A linear scan
 * before JSON.parse, without recursion; brackets inside strings do not count.
 */
const nestsTooDeep = (text: string): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_ANSWER_DEPTH) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** Why a string (key or value) cannot be stored as JSON text (PostgreSQL jsonb), else undefined. */
const unstorable = (s: string): string | undefined => {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 0) return "holds the character U+0000"
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) i++
      else return "holds an unpaired surrogate"
    } else if (c >= 0xdc00 && c <= 0xdfff) return "holds an unpaired surrogate"
  }
  return undefined
}

/** Longest pointer in a problem; keys are the model's text. */
const MAX_POINTER_CHARS = 200

/** A pointer as a problem shows it: control characters and surrogates escaped, cut at MAX_POINTER_CHARS. */
const shownPointer = (pointer: string): string => {
  if (pointer === "") return "/"
  const shown = pointer.replace(
    /[\u0000-\u001f\u007f-\u009f\u2028\u2029\ud800-\udfff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
  )
  return shown.length > MAX_POINTER_CHARS ? `${shown.slice(0, MAX_POINTER_CHARS)}…` : shown
}

/**
 * The first place of a parsed answer that would not be kept as it is: a number JSON cannot hold
 * (1e400 parses to Infinity, written back as null) or a string the store refuses. Iterative.
 */
const unkeptValue = (value: unknown): string | undefined => {
  const stack: Array<readonly [unknown, string]> = [[value, ""]]
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [v, pointer] = top
    const at = shownPointer(pointer)
    if (typeof v === "number" && !Number.isFinite(v)) return `answer at ${at}: a number too large for JSON`
    if (typeof v === "string") {
      const why = unstorable(v)
      if (why !== undefined) return `answer at ${at}: the string ${why}, which cannot be stored`
    } else if (v !== null && typeof v === "object") {
      for (const [key, child] of Object.entries(v)) {
        const why = unstorable(key)
        if (why !== undefined) return `answer at ${at}: a key ${why}, which cannot be stored`
        stack.push([child, `${pointer}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`])
      }
    }
  }
  return undefined
}

const parse = (text: string): Either.Either<unknown, string> =>
  nestsTooDeep(text)
    ? Either.left(`nests arrays and objects deeper than ${MAX_ANSWER_DEPTH} levels`)
    : Either.try({ try: (): unknown => JSON.parse(text), catch: (e) => (e instanceof Error ? e.message : "parse error") })

/** The message as one JSON value: the fenced block ending it, else the whole text; Left is why it is not. */
const readAnswer = (message: string): Either.Either<unknown, string> => {
  const text = message.trim()
  const fenced = fencedJson(text)
  if (fenced !== undefined)
    return Either.mapLeft(parse(fenced), (why) => `the \`\`\`json block ending the final message is not valid JSON (${why})`)
  return Either.mapLeft(parse(text), (why) =>
    /^[[{"]/.test(text)
      ? `the final message is not valid JSON (${why})`
      : "the final message is not JSON: give the answer as the JSON value alone, or end the message with a ```json block holding it"
  )
}

/** The final message checked against the answer contract: its parsed value, or every problem (one sentence each). */
export const readTypedAnswer = (contract: AnswerContract, message: string): Effect.Effect<CheckedAnswer> =>
  Effect.promise(async (): Promise<CheckedAnswer> => {
    const read = readAnswer(message)
    if (Either.isLeft(read)) return { _tag: "Invalid", problems: [`answer: ${read.left}`] }
    const unkept = unkeptValue(read.right)
    if (unkept !== undefined) return { _tag: "Invalid", problems: [unkept] }
    const bytes = Buffer.byteLength(JSON.stringify(read.right) ?? "", "utf8")
    if (bytes > MAX_ANSWER_BYTES) return { _tag: "Invalid", problems: [`answer: larger than ${MAX_ANSWER_BYTES / 1024} KiB`] }
    const { compileJsonSchema, MAX_SCHEMA_PROBLEMS } = await import("./jsonSchema.ts")
    const compiled = compileJsonSchema(contract.schemaText)
    if (Either.isLeft(compiled))
      return { _tag: "Invalid", problems: [`answer: its schema ${contract.schema} cannot be used (${compiled.left})`] }
    const violations = compiled.right(read.right)
    if (violations.length === 0) return { _tag: "Valid", value: read.right }
    const named = violations
      .slice(0, MAX_SCHEMA_PROBLEMS)
      .map((v) => `answer at ${v.pointer === "" ? "/" : v.pointer}: ${v.message} (${contract.schema})`)
    const more = violations.length - named.length
    return { _tag: "Invalid", problems: more > 0 ? [...named, `answer: ${more} more schema violations`] : named }
  })

/** What the system prompt says of the answer: its form and its schema (the agent's instructions may say more). */
export const answerPromptBlock = (contract: AnswerContract): string =>
  [
    "<answer-format>",
    "End the job with a final message that is your answer as JSON: the JSON value alone, or a short note followed by one ```json block holding it.",
    `The answer must be valid against this JSON Schema (${contract.schema}):`,
    contract.schemaText.trim(),
    "</answer-format>"
  ].join("\n")
