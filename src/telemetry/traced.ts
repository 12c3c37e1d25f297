/**
 * Named spans for a service: every method of its shape runs in a span "Service.method" (the house
 * style's `Effect.fn("Service.method")`), applied once where the service's layer is built.
 */
import { Effect } from "effect"

type Traced<S> = {
  readonly [K in keyof S]: S[K] extends (...args: infer P) => Effect.Effect<infer A, infer E, infer R>
    ? (...args: P) => Effect.Effect<A, E, R>
    : S[K]
}

/** Effect's own tracer (no export configured): its spans are seen by nothing outside the fiber. */
const inProcessTracer = Effect.runSync(Effect.tracer)

/**
 * `effect` in a span named `name` when spans leave the process; under Effect's own tracer the span is
 * left out, as nothing would see it and each costs a copy of the fiber's context.
 */
const spanned = <A, E, R>(effect: Effect.Effect<A, E, R>, name: string): Effect.Effect<A, E, R> =>
  Effect.tracerWith((tracer) => (tracer === inProcessTracer ? effect : Effect.withSpan(effect, name, { captureStackTrace: false })))

/**
 * `service` with each method (a function returning an Effect, or an Effect member) wrapped in a span
 * named `${name}.${member}` (when spans are exported). Spans carry no arguments as attributes (they may
 * be passwords, keys, tasks) and no captured stack (host paths).
 */
export const traced = <S extends object>(name: string, service: S): Traced<S> => {
  const out: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(service)) {
    const span = `${name}.${key}`
    if (Effect.isEffect(member)) out[key] = spanned(member, span)
    else if (typeof member === "function") {
      out[key] = (...args: ReadonlyArray<unknown>) => {
        const result: unknown = member(...args)
        return Effect.isEffect(result) ? spanned(result, span) : result
      }
    } else out[key] = member
  }
  return out as Traced<S>
}
