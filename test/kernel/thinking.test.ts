import { expect, setDefaultTimeout, test } from "bun:test"
import { chooseThinking } from "../../src/kernel/thinking.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

test("a supported level is kept", () => {
  expect(chooseThinking("medium", ["off", "low", "medium", "high"])).toEqual({ requested: "medium", effective: "medium", clampedUp: false })
})
test("an unsupported level goes down to the nearest lower level", () => {
  expect(chooseThinking("xhigh", ["off", "low", "high", "max"])).toEqual({ requested: "xhigh", effective: "high", clampedUp: false })
})
test("only when nothing is at or below does it go up, and says so", () => {
  expect(chooseThinking("low", ["high"])).toEqual({ requested: "low", effective: "high", clampedUp: true })
  expect(chooseThinking("off", ["minimal", "low"])).toEqual({ requested: "off", effective: "minimal", clampedUp: true })
})
test("a model that cannot think runs off", () => {
  expect(chooseThinking("max", [])).toEqual({ requested: "max", effective: "off", clampedUp: false })
})
