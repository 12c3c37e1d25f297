/**
 * The HTTP edge's own errors (the request, not the domain, is wrong): bad input, no or wrong
 * principal, an unknown path parameter, a body over the cap, a throttled client. Their statuses sit
 * with every other API error's in respond.ts.
 */
import { Schema } from "effect"
import { Problem } from "../contract/Problem.ts"

/** The request has problems: every one at once. */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  message: Schema.String,
  problems: Schema.Array(Problem)
}) {}
/** No session and no valid API token. */
export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", { message: Schema.String }) {}
/** A principal without the permission, a cross-site request, a token where a session is needed. */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", { message: Schema.String }) {}
/** A named thing that the edge itself looks up does not exist (a user, a token, a permission). */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { message: Schema.String }) {}
/** The body is over the route's cap. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", { message: Schema.String }) {}
/** Too many sign-in attempts; `retryAfterSeconds` becomes the `Retry-After` header. */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  message: Schema.String,
  retryAfterSeconds: Schema.Number
}) {}
