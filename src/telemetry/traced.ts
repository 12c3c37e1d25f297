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

/**
 * `service` with each method (a function returning an Effect, or an Effect member) wrapped in a span
 * named `${name}.${member}`. Spans carry no arguments as attributes (they may be passwords, keys,
 * tasks) and no captured stack (host paths).
 */
export const traced = <S extends object>(name: string, service: S): Traced<S> => {
  const out: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(service)) {
    const span = `${name}.${key}`
    if (Effect.isEffect(member)) out[key] = Effect.withSpan(member, span, { captureStackTrace: false })
    else if (typeof member === "function") {
      out[key] = (...args: ReadonlyArray<unknown>) => {
        const result: unknown = member(...args)
        return Effect.isEffect(result) ? Effect.withSpan(result, span, { captureStackTrace: false }) : result
      }
    } else out[key] = member
  }
  return out as Traced<S>
}
