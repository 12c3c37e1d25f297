/**
 * `makeTestLayer(Tag)({ …some methods })`: a service for a test where every member you did not give
 * dies loudly, naming the service and the member, whether it is called (a method) or run (an Effect
 * member). A test that reaches something it did not expect fails at once rather than hanging or
 * passing on a default.
 */
import { type Context, Effect, Layer } from "effect"

/** Both a function returning a defect and that defect itself, so either use of the member dies. */
const unimplemented = (service: string, member: PropertyKey): unknown => {
  const dead = Effect.dieMessage(`${service}.${String(member)} is not implemented in this test`)
  const fn = () => dead
  Object.setPrototypeOf(fn, Object.getPrototypeOf(dead))
  return Object.assign(fn, dead)
}

/** The service with `partial`'s members; any other member dies loudly when used. */
export const makeUnimplemented = <S extends object>(service: string, partial: Partial<S>): S =>
  new Proxy({ ...partial } as S, {
    get(target, member) {
      if (member in target) return target[member as keyof S]
      // `then` is probed by await on any object: answering it would make the service look like a promise.
      if (member === "then" || typeof member === "symbol") return undefined
      const dead = unimplemented(service, member)
      ;(target as Record<PropertyKey, unknown>)[member] = dead
      return dead
    }
  })

export const makeTestLayer =
  <I, S extends object>(tag: Context.Tag<I, S>) =>
  (partial: Partial<S>): Layer.Layer<I> =>
    Layer.succeed(tag, makeUnimplemented<S>(tag.key, partial))
