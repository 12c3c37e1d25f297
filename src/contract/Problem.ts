/**
 * A problem with an input: where (a dotted path into the document) and what is wrong. Validation in
 * this project returns every problem at once, never only the first.
 */
import { Either, ParseResult, Schema } from "effect"

export const Problem = Schema.Struct({ path: Schema.String, message: Schema.String })
export type Problem = typeof Problem.Type

/** `["agent","skills",1,"name"]` → `"agent.skills.1.name"`; the document root is `"(root)"`. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "(root)" : path.map((k) => String(k)).join(".")

/** Every problem of a parse error, in document order, each with its path. */
export const problemsOf = (error: ParseResult.ParseError): Array<Problem> =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    // An optional field that fails its type also reports "Expected undefined": noise for a reader.
    .filter((issue) => !issue.message.startsWith("Expected undefined"))
    .map((issue) => ({ path: formatPath(issue.path), message: issue.message }))

/** Decodes `input` with every problem collected, or returns them. */
export const decodeAll = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
  return (input: unknown): Either.Either<A, Array<Problem>> => Either.mapLeft(decode(input), problemsOf)
}
