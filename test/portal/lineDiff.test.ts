/** The line diff: a shortest edit script that rebuilds both texts, hunks with context, package file diffs. */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { diffFiles, hunks, lineDiff, splitLines, type DiffLine } from "../../views/forms/lineDiff.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const oldOf = (d: ReadonlyArray<DiffLine>) => d.filter((l) => l.op !== "add").map((l) => l.text)
const newOf = (d: ReadonlyArray<DiffLine>) => d.filter((l) => l.op !== "del").map((l) => l.text)
const edits = (d: ReadonlyArray<DiffLine>) => d.filter((l) => l.op !== "same").length
const ops = (d: ReadonlyArray<DiffLine>) => d.map((l) => `${l.op === "same" ? " " : l.op === "add" ? "+" : "-"}${l.text}`)

describe("lineDiff", () => {
  test("identical and empty texts", () => {
    expect(lineDiff([], [])).toEqual([])
    expect(ops(lineDiff(["a", "b"], ["a", "b"]))).toEqual([" a", " b"])
    expect(ops(lineDiff([], ["a"]))).toEqual(["+a"])
    expect(ops(lineDiff(["a"], []))).toEqual(["-a"])
  })

  test("the classic example: ABCABBA → CBABAC in 5 edits", () => {
    const d = lineDiff([..."ABCABBA"], [..."CBABAC"])
    expect(edits(d)).toBe(5)
    expect(oldOf(d)).toEqual([..."ABCABBA"])
    expect(newOf(d)).toEqual([..."CBABAC"])
  })

  test("line numbers count each side", () => {
    const d = lineDiff(["a", "b", "c"], ["a", "x", "c", "d"])
    expect(d).toEqual([
      { op: "same", text: "a", oldLine: 1, newLine: 1 },
      { op: "del", text: "b", oldLine: 2, newLine: null },
      { op: "add", text: "x", oldLine: null, newLine: 2 },
      { op: "same", text: "c", oldLine: 3, newLine: 3 },
      { op: "add", text: "d", oldLine: null, newLine: 4 }
    ])
  })

  test("random texts: both sides rebuilt, never more edits than the LCS bound", () => {
    let seed = 7
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const lcs = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => {
      const t = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
      for (let i = 1; i <= a.length; i++)
        for (let j = 1; j <= b.length; j++) {
          const row = t[i]!
          row[j] = a[i - 1] === b[j - 1] ? t[i - 1]![j - 1]! + 1 : Math.max(t[i - 1]![j]!, row[j - 1]!)
        }
      return t[a.length]![b.length]!
    }
    for (let round = 0; round < 300; round++) {
      const a = Array.from({ length: rand(20) }, () => "abcd"[rand(4)]!)
      const b = Array.from({ length: rand(20) }, () => "abcd"[rand(4)]!)
      const d = lineDiff(a, b)
      expect(oldOf(d)).toEqual(a)
      expect(newOf(d)).toEqual(b)
      expect(edits(d)).toBe(a.length + b.length - 2 * lcs(a, b))
    }
  })

  test("past the edit cap the middle is reported as replaced, still correct", () => {
    const a = Array.from({ length: 50 }, (_, i) => `a${i}`)
    const b = Array.from({ length: 50 }, (_, i) => `b${i}`)
    const d = lineDiff(["same", ...a, "end"], ["same", ...b, "end"], 10)
    expect(oldOf(d)).toEqual(["same", ...a, "end"])
    expect(newOf(d)).toEqual(["same", ...b, "end"])
    expect(d[0]?.op).toBe("same")
    expect(d.at(-1)).toEqual({ op: "same", text: "end", oldLine: 52, newLine: 52 })
  })

  test("splitLines: a final line break ends the last line", () => {
    expect(splitLines("")).toEqual([])
    expect(splitLines("a\nb\n")).toEqual(["a", "b"])
    expect(splitLines("a\n\n")).toEqual(["a", ""])
  })
})

describe("hunks", () => {
  test("keep context around changes and count what is left out", () => {
    const old = Array.from({ length: 20 }, (_, i) => `l${i}`)
    const next = old.map((l, i) => (i === 2 || i === 15 ? `${l}!` : l))
    const h = hunks(lineDiff(old, next), 2)
    expect(h.length).toBe(2)
    expect(h[0]!.skippedBefore).toBe(0)
    expect(ops(h[0]!.lines)).toEqual([" l0", " l1", "-l2", "+l2!", " l3", " l4"])
    expect(h[1]!.skippedBefore).toBe(8)
    expect(ops(h[1]!.lines)).toEqual([" l13", " l14", "-l15", "+l15!", " l16", " l17"])
  })

  test("no change, no hunk", () => {
    expect(hunks(lineDiff(["a"], ["a"]))).toEqual([])
  })
})

describe("diffFiles", () => {
  test("added, removed, changed and unchanged files", () => {
    const d = diffFiles(
      [
        { path: "a.md", content: "x\ny\n" },
        { path: "gone.md", content: "g\n" },
        { path: "same.md", content: "s" }
      ],
      [
        { path: "a.md", content: "x\nz\n" },
        { path: "same.md", content: "s" },
        { path: "new.md", content: "n\n" }
      ]
    )
    expect(d.map((f) => [f.path, f.change, f.added, f.removed])).toEqual([
      ["a.md", "changed", 1, 1],
      ["gone.md", "removed", 0, 1],
      ["same.md", "unchanged", 0, 0],
      ["new.md", "added", 1, 0]
    ])
  })
})
