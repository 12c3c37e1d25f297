/** The Db layer's one error, and the innermost message of a driver failure (shared by Db.ts and embeddedDatabase.ts). */
import { Schema } from "effect"

/** The database could not be configured, reached or started; `message` is one line, never a password. */
export class DbError extends Schema.TaggedError<DbError>()("DbError", { message: Schema.String, cause: Schema.optional(Schema.Defect) }) {}

/** The deepest error of a cause chain (or AggregateError) that has a message. */
export const innermost = (error: unknown): unknown => {
  let found = error
  let cause = error
  for (let depth = 0; depth < 6 && cause instanceof Error; depth++) {
    if (cause.message !== "") found = cause
    cause = cause instanceof AggregateError && cause.errors.length > 0 ? cause.errors[0] : cause.cause
  }
  return found
}

export const innermostMessage = (error: unknown): string => {
  const e = innermost(error)
  return e instanceof Error && e.message !== "" ? e.message : "unknown error"
}
