/**
 * The stores' two failures: the database did not answer a statement (`StoreUnavailable`, 503 at the edge)
 * and a stored row did not decode (`RowInvalid`, 500). Each keeps the driver's or the decoder's error as `cause`.
 */
import { SqlError } from "@effect/sql/SqlError"
import { Effect, ParseResult, Schema } from "effect"

/** A statement of `operation` failed (connection lost, timeout, refused); trying again may succeed. */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  operation: Schema.String,
  cause: Schema.Defect
}) {
  override get message(): string {
    return `the database did not complete ${this.operation}; try again shortly`
  }
}

/** A row read by `operation` does not match its schema: the database and this code disagree. */
export class RowInvalid extends Schema.TaggedError<RowInvalid>()("RowInvalid", { operation: Schema.String, cause: Schema.Defect }) {
  override get message(): string {
    return `a stored row read by ${this.operation} is malformed`
  }
}

export type StoreError = StoreUnavailable | RowInvalid

const isForeign = (e: unknown): e is SqlError | ParseResult.ParseError => e instanceof SqlError || ParseResult.isParseError(e)

/** Turns a store method's SqlError and ParseError into the typed StoreError of `operation`; other failures pass. */
export const storeErrors =
  (operation: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError | ParseResult.ParseError> | StoreError, R> =>
    // The type guard cannot narrow a generic E: the cast states what the mapping does.
    Effect.mapError(effect, (e) =>
      isForeign(e) ? (e._tag === "SqlError" ? new StoreUnavailable({ operation, cause: e }) : new RowInvalid({ operation, cause: e })) : e
    ) as Effect.Effect<A, Exclude<E, SqlError | ParseResult.ParseError> | StoreError, R>

/** A store method `f` whose SqlError and ParseError become the StoreError of `operation`. */
export const storeMethod = <Args extends ReadonlyArray<unknown>, A, E, R>(
  operation: string,
  f: (...args: Args) => Effect.Effect<A, E, R>
) => {
  const typed = storeErrors(operation)
  return (...args: Args) => typed(f(...args))
}

/**
 * `effect` with its SqlError and ParseError turned into a defect holding the StoreError of `operation`,
 * for a method whose callers' signatures cannot fail (each use says why).
 */
export const storeDefects =
  (operation: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError | ParseResult.ParseError>, R> =>
    // As in storeErrors: the guard cannot narrow a generic E, so the cast states what the catch removes.
    Effect.catchIf(effect, isForeign, (e) =>
      Effect.die(e._tag === "SqlError" ? new StoreUnavailable({ operation, cause: e }) : new RowInvalid({ operation, cause: e }))
    ) as Effect.Effect<A, Exclude<E, SqlError | ParseResult.ParseError>, R>
