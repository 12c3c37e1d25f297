import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from "../../src/job/toolLimits.ts"
import { cutLines, cutUtf8, truncateOutput } from "../../src/tools/truncate.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

describe("truncateOutput", () => {
  test("leaves short text alone", () => {
    expect(truncateOutput("a\nb", "hint")).toBe("a\nb")
  })

  test("cuts at 2000 lines first when lines are short", () => {
    const text = Array.from({ length: 2500 }, (_, i) => `l${i + 1}`).join("\n")
    const out = truncateOutput(text, "narrow the search").split("\n")
    expect(out).toHaveLength(MAX_OUTPUT_LINES + 1)
    expect(out[MAX_OUTPUT_LINES - 1]).toBe("l2000")
    expect(out.at(-1)).toBe("[output cut at the 2000-line limit: showing 2000 of 2500 lines; narrow the search]")
  })

  test("cuts at 50 KB first when lines are wide, on a line boundary", () => {
    const text = Array.from({ length: 1000 }, () => "x".repeat(99)).join("\n")
    const out = truncateOutput(text, "h").split("\n")
    const marker = out.pop()
    expect(Buffer.byteLength(out.join("\n"))).toBeLessThanOrEqual(MAX_OUTPUT_BYTES)
    expect(out).toHaveLength(512)
    expect(out.every((l) => l.length === 99)).toBe(true)
    expect(marker).toBe("[output cut at the 50 KB limit: showing 512 of 1000 lines; h]")
  })

  test("counts bytes, not characters", () => {
    const cut = cutLines(Array.from({ length: 100 }, () => "é".repeat(500)).join("\n"))
    expect(cut.cutBy).toBe("bytes")
    expect(cut.shownLines).toBe(51)
  })

  test("a single overlong line is cut on a UTF-8 boundary", () => {
    const out = cutLines("€".repeat(30_000))
    expect(out.partialLine).toBe(true)
    expect(Buffer.byteLength(out.text)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES)
    expect(out.text).toBe("€".repeat(Math.floor(MAX_OUTPUT_BYTES / 3)))
    expect(cutUtf8("a€", 2)).toBe("a")
  })
})
