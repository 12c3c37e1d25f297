/**
 * Column schemas that accept a value as either driver returns it: node-postgres (a server) and the
 * embedded PGlite differ in timestamps (Date or ISO text), int8/numeric (text or number) and jsonb (parsed or text).
 */
import { Effect, type ParseResult, Schema } from "effect"

/** timestamptz: a Date, or its text. */
export const Timestamp = Schema.Union(Schema.DateFromSelf, Schema.Date)

/** int8 / numeric (`count(*)`, `cost_usd`): a number, or its text. */
export const Num = Schema.Union(Schema.Number, Schema.NumberFromString)

/** A jsonb column holding `schema`: parsed already, or its JSON text. */
export const Jsonb = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.Union(schema, Schema.parseJson(schema))

/**
 * A query's rows decoded by `schema`, for statements whose SQL is built per call (SqlSchema.findAll needs
 * one fixed statement shape). The decoder is compiled once, where `decodeRows(schema)` is applied.
 */
export const decodeRows = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Schema.Array(schema))
  return <E, R>(query: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<ReadonlyArray<A>, E | ParseResult.ParseError, R> =>
    Effect.flatMap(query, decode)
}
