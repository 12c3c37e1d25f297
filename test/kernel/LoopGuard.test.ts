import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { canonicalJson, NUDGE_AT, RepeatGuard, StreamGuard } from "../../src/job/LoopGuard.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

describe("RepeatGuard", () => {
  test("11 identical call+answer pairs continue; the 12th stops with the spec's message", () => {
    const g = new RepeatGuard()
    for (let i = 1; i <= 11; i++) expect(g.record("read", { path: "a" }, true, "same")._tag).not.toBe("Loop")
    const verdict = g.record("read", { path: "a" }, true, "same")
    expect(verdict).toEqual({ _tag: "Loop", message: "stopped: read was called with the same arguments 12 times" })
  })

  test("verdicts step by step: novel, repeats 2..11, loop at 12", () => {
    const g = new RepeatGuard()
    const tags = Array.from({ length: 12 }, () => g.record("glob", { p: 1 }, true, "x")._tag)
    expect(tags).toEqual(["Novel", ...Array(10).fill("Repeat"), "Loop"])
  })

  test("key order and whitespace do not matter", () => {
    const g = new RepeatGuard()
    for (let i = 0; i < 11; i++)
      g.record("grep", i % 2 === 0 ? { a: 1, b: [1, { c: 2, d: 3 }] } : { b: [1, { d: 3, c: 2 }], a: 1 }, true, "r")
    expect(g.record("grep", { b: [1, { c: 2, d: 3 }], a: 1 }, true, "r")._tag).toBe("Loop")
    expect(canonicalJson({ b: 1, a: { d: 2, c: 1 } })).toBe('{"a":{"c":1,"d":2},"b":1}')
  })

  test("identical calls with different answers never trip it", () => {
    const g = new RepeatGuard()
    for (let i = 0; i < 100; i++) expect(g.record("shell", { command: "date" }, true, `t=${i}`)._tag).toBe("Novel")
  })

  test("a novel call+answer in between resets the count", () => {
    const g = new RepeatGuard()
    for (let i = 0; i < 11; i++) g.record("read", { path: "a" }, true, "same")
    expect(g.record("read", { path: "b" }, true, "other")._tag).toBe("Novel")
    // The old pair is no longer novel, but its count starts again.
    for (let i = 0; i < 11; i++) expect(g.record("read", { path: "a" }, true, "same")._tag).toBe("Repeat")
    expect(g.record("read", { path: "a" }, true, "same")._tag).toBe("Loop")
  })

  test("a checklist re-read between new reads never adds up", () => {
    const g = new RepeatGuard()
    for (let i = 0; i < 50; i++) {
      expect(g.record("read", { path: "CHECKLIST.md" }, true, "list")._tag).not.toBe("Loop")
      expect(g.record("read", { path: `file${i}.ts` }, true, `content ${i}`)._tag).toBe("Novel")
    }
  })

  test("blocked calls count like any other call+answer", () => {
    const g = new RepeatGuard()
    const tags = Array.from({ length: 12 }, () => g.record("shell", { command: "rm -rf /" }, false, "Blocked: pattern 0")._tag)
    expect(tags[11]).toBe("Loop")
  })

  test("the nudge starts at the 5th repeat and does not change the 12 rule", () => {
    const g = new RepeatGuard()
    const verdicts = Array.from({ length: 12 }, () => g.record("ls", {}, true, "a/\nb/"))
    verdicts.forEach((v, i) => {
      if (v._tag === "Repeat") expect(v.nudge !== undefined).toBe(i + 1 >= NUDGE_AT)
    })
    expect(verdicts[11]?._tag).toBe("Loop")
  })
})

describe("StreamGuard", () => {
  test("150,000 characters of thinking and text pass; one more trips it with the spec's message", () => {
    const g = new StreamGuard()
    expect(g.add("thinking", 100_000)).toBeUndefined()
    expect(g.add("text", 50_000)).toBeUndefined()
    expect(g.add("thinking", 1_000)).toBe("stopped: one turn produced 151k characters of thinking without a tool call")
  })

  test("a completed tool call resets the thinking/text count", () => {
    const g = new StreamGuard()
    g.add("text", 149_000)
    g.toolCallCompleted()
    expect(g.add("text", 149_000)).toBeUndefined()
  })

  test("tool-call arguments trip above 400,000 characters and not at it", () => {
    const g = new StreamGuard()
    expect(g.add("toolArgs", 400_000)).toBeUndefined()
    expect(g.add("toolArgs", 1)).toBe("stopped: one turn produced 401k characters of tool-call arguments")
  })

  test("reset starts a new turn", () => {
    const g = new StreamGuard()
    g.add("toolArgs", 399_999)
    g.reset()
    expect(g.add("toolArgs", 399_999)).toBeUndefined()
  })
})
