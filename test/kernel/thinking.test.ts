import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { THINKING_LEVELS, type ThinkingLevel } from "../../src/contract/AgentDefinition.ts"
import { chooseThinking } from "../../src/kernel/thinking.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

/**
 * Hand-written expectations, one row per model level set, one column per requested level in scale
 * order (off, minimal, low, medium, high, xhigh, max): the level the job gets, with ↑ / ↓ when it moved.
 */
const TABLE: ReadonlyArray<readonly [string, ReadonlyArray<ThinkingLevel>, ReadonlyArray<string>]> = [
  ["cannot think", [], ["off", "off↓", "off↓", "off↓", "off↓", "off↓", "off↓"]],
  ["only off", ["off"], ["off", "off↓", "off↓", "off↓", "off↓", "off↓", "off↓"]],
  ["off, high", ["off", "high"], ["off", "off↓", "off↓", "high↑", "high", "high↓", "high↓"]],
  ["only high", ["high"], ["high↑", "high↑", "high↑", "high↑", "high", "high↓", "high↓"]],
  ["off, low, high", ["off", "low", "high"], ["off", "off↓", "low", "low↓", "high", "high↓", "high↓"]],
  ["off, low, high, max", ["off", "low", "high", "max"], ["off", "off↓", "low", "low↓", "high", "high↓", "max"]],
  [
    "pi-ai's default (off … high)",
    ["off", "minimal", "low", "medium", "high"],
    ["off", "minimal", "low", "medium", "high", "high↓", "high↓"]
  ],
  ["minimal, low (cannot stop thinking)", ["minimal", "low"], ["minimal↑", "minimal", "low", "low↓", "low↓", "low↓", "low↓"]],
  ["off, max", ["off", "max"], ["off", "off↓", "off↓", "off↓", "max↑", "max↑", "max"]],
  ["every level", THINKING_LEVELS, [...THINKING_LEVELS]]
]

describe("the clamp table: every level on each model level set", () => {
  for (const [name, supported, row] of TABLE) {
    test(name, () => {
      const got = THINKING_LEVELS.map((requested) => {
        const c = chooseThinking(requested, supported)
        expect(c.requested).toBe(requested)
        return `${c.effective}${c.clamped === "up" ? "↑" : c.clamped === "down" ? "↓" : ""}`
      })
      expect(got).toEqual([...row])
    })
  }
})

test("the order of the model's levels does not matter", () => {
  expect(chooseThinking("medium", ["high", "off"])).toEqual({ requested: "medium", effective: "high", clamped: "up" })
  expect(chooseThinking("xhigh", ["max", "high", "low"])).toEqual({ requested: "xhigh", effective: "high", clamped: "down" })
})

test("a medium job on a model with off and high thinks at high, and says it went up", () => {
  expect(chooseThinking("medium", ["off", "high"])).toEqual({ requested: "medium", effective: "high", clamped: "up" })
})

test("off is a level: on a model with off and high, minimal runs off (the nearest), and a tie goes to the lower", () => {
  expect(chooseThinking("minimal", ["off", "high"])).toEqual({ requested: "minimal", effective: "off", clamped: "down" })
  expect(chooseThinking("low", ["off", "high"])).toEqual({ requested: "low", effective: "off", clamped: "down" })
})

test("a supported level is kept and not marked as clamped", () => {
  expect(chooseThinking("medium", ["off", "low", "medium", "high"])).toEqual({ requested: "medium", effective: "medium", clamped: "none" })
})
