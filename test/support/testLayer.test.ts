/** makeTestLayer: the members given work; any other one dies loudly, named, whether called or run. */
import { describe, expect, test } from "bun:test"
import { Cause, Effect, Exit } from "effect"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { makeTestLayer } from "./testLayer.ts"

const defect = (exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return "succeeded"
  const dies = Cause.defects(exit.cause)
  return [...dies].map((d) => (d instanceof Error ? d.message : String(d))).join("; ")
}

describe("makeTestLayer", () => {
  const layer = makeTestLayer(AgentStore)({ catalog: Effect.succeed([]) })

  test("a given member works", async () => {
    const exit = await Effect.runPromiseExit(
      Effect.provide(
        Effect.flatMap(AgentStore, (s) => s.catalog),
        layer
      )
    )
    expect(exit).toEqual(Exit.succeed([]))
  })

  test("a method not given dies when called, naming the service and the method", async () => {
    const exit = await Effect.runPromiseExit(
      Effect.provide(
        Effect.flatMap(AgentStore, (s) => s.get("x")),
        layer
      )
    )
    expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
    expect(defect(exit)).toBe("agents/AgentStore.get is not implemented in this test")
  })

  test("an Effect member not given dies when run", async () => {
    const exit = await Effect.runPromiseExit(
      Effect.provide(
        Effect.flatMap(AgentStore, (s) => s.context),
        layer
      )
    )
    expect(defect(exit)).toBe("agents/AgentStore.context is not implemented in this test")
  })
})
