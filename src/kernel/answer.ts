/**
 * The typed answer of an agent that declares `answer:` (docs/agent-packages.md): the model's final
 * message read as one JSON value and checked against the agent's JSON Schema. The message is either
 * the JSON value alone, or prose ending with one fenced ```json (or bare ```) block holding it;
 * anything else is a problem. The agent loop checks it with the output contract, sharing its one
 * chance to fix (agentLoop.ts); every problem is one sentence naming the place (a JSON pointer).
 */
import { Effect, Either } from "effect"
import type { AnswerContract } from "../contract/AgentDefinition.ts"

/** Largest answer, UTF-8 bytes of its JSON text: an answer is a short structured result. */
const MAX_ANSWER_BYTES = 64 * 1024

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

const parse = (text: string): Either.Either<unknown, string> =>
  Either.try({ try: (): unknown => JSON.parse(text), catch: (e) => (e instanceof Error ? e.message : "parse error") })

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
