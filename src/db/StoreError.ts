/**
 * The stores' two failures: the database did not answer a statement (`StoreUnavailable`, 503 at the edge)
 * and a stored row did not decode (`RowInvalid`, 500). Each keeps the driver's or the decoder's error as `cause`.
 */
import { SqlError } from "@effect/sql/SqlError"
import { type Duration, Effect, ParseResult, Schedule, Schema } from "effect"

/** A statement of `operation` failed (connection lost, timeout, refused); trying again may succeed. */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  operation: Schema.String,
  cause: Schema.Defect
}) {
  override get message(): string {
    return isDiskFull(this.cause)
      ? `disk full: the database did not complete ${this.operation}; it needs free disk space`
      : `the database did not complete ${this.operation}; try again shortly`
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

/** The SQLSTATE of the server's answer in a cause chain (an error with a `severity` and a code), if the server answered. */
const sqlState = (error: unknown): string | undefined => {
  let e = error
  for (let depth = 0; depth < 6 && typeof e === "object" && e !== null; depth++) {
    if ("severity" in e && "code" in e && typeof e.code === "string") return e.code
    e = "cause" in e ? e.cause : undefined
  }
  return undefined
}

/**
 * SQLSTATE classes after which the same statement may succeed: connection exception, transaction
 * rollback, insufficient resources (a full disk), object not in prerequisite state, operator
 * intervention (a terminated backend, a server shutting down or starting), system error.
 */
const TRANSIENT_CLASSES: ReadonlySet<string> = new Set(["08", "40", "53", "55", "57", "58"])

/** Whether sending the statement again may succeed: no answer from the server (the connection failed), or a transient one. */
export const isTransient = (error: unknown): boolean => {
  if (!(error instanceof StoreUnavailable)) return false
  const code = sqlState(error.cause)
  return code === undefined || TRANSIENT_CLASSES.has(code.slice(0, 2))
}

/**
 * `effect` tried again while it fails transiently (isTransient), backing off from 50 ms to at most 2 s
 * with jitter, for up to `budget`; then its last failure. Only for statements that are idempotent.
 */
export const retryTransient =
  (budget: Duration.DurationInput) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.retry(
      // A full disk is named in the log each time it stops a write (at most every 2 s while it lasts).
      Effect.tapError(effect, (e) =>
        isDiskFull(e) ? Effect.logError("disk full: the database cannot write; trying again", e) : Effect.void
      ),
      {
        schedule: Schedule.exponential("50 millis").pipe(
          Schedule.union(Schedule.spaced("2 seconds")),
          Schedule.jittered,
          Schedule.upTo(budget)
        ),
        while: isTransient
      }
    )

/** Whether a failure (a store error, a driver's, a file system's) says the disk is full: ENOSPC, SQLSTATE 53100 or its message. */
export const isDiskFull = (error: unknown): boolean => {
  let e = error
  for (let depth = 0; depth < 8 && typeof e === "object" && e !== null; depth++) {
    if ("code" in e && (e.code === "ENOSPC" || e.code === "53100")) return true
    if ("message" in e && typeof e.message === "string" && /no space left on device|disk full|ENOSPC/i.test(e.message)) return true
    e = "cause" in e ? e.cause : undefined
  }
  return typeof error === "string" && /no space left on device|disk full|ENOSPC/i.test(error)
}
