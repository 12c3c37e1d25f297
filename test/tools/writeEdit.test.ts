// write and edit in outDir: output events, exact-once edits, all or none.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import path from "node:path"
import { applyEdits, edit } from "../../src/tools/edit.ts"
import { write } from "../../src/tools/write.ts"
import { createToolContext, createWorkspaceTree, runToolError, runToolText, type WorkspaceTree } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

let t: WorkspaceTree
beforeAll(async () => {
  t = await createWorkspaceTree({ "out/doc.md": "# Title\nalpha beta\ngamma beta\n$& literal\n" })
})
afterAll(() => t.cleanup())
const readOut = (p: string) => fs.readFileSync(path.join(t.out, p), "utf8")

describe("write", () => {
  test("creates a file with missing parents and emits output relative to outDir", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    expect(await runToolText(write, { path: "reports/q1/summary.md", content: "héllo\n" }, ctx)).toBe(
      "Wrote 7 bytes to reports/q1/summary.md in the output directory."
    )
    expect(readOut("reports/q1/summary.md")).toBe("héllo\n")
    expect(events).toEqual([{ type: "output", path: "reports/q1/summary.md" }])
  })

  test("overwrites an existing file, absolute paths inside outDir work", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    await runToolText(write, { path: path.join(t.out, "reports/q1/summary.md"), content: "v2" }, ctx)
    expect(readOut("reports/q1/summary.md")).toBe("v2")
    expect(events).toEqual([{ type: "output", path: "reports/q1/summary.md" }])
  })

  test("refuses to replace a directory", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    expect(await runToolError(write, { path: "reports", content: "x" }, ctx)).toBe("reports is a directory")
    expect(fs.statSync(path.join(t.out, "reports")).isDirectory()).toBe(true)
    expect(events).toEqual([])
  })
})

describe("edit", () => {
  test("applies several non-overlapping edits at once, replacement text taken literally", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const text = await runToolText(
      edit,
      {
        path: "doc.md",
        edits: [
          { oldText: "alpha beta", newText: "ALPHA" },
          { oldText: "$& literal", newText: "$1 $& kept" }
        ]
      },
      ctx
    )
    expect(text).toBe("Applied 2 edits to doc.md.")
    expect(readOut("doc.md")).toBe("# Title\nALPHA\ngamma beta\n$1 $& kept\n")
    expect(events).toEqual([{ type: "output", path: "doc.md" }])
  })

  test("an oldText that occurs 0 or several times fails with the count, and nothing changes", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const before = readOut("doc.md")
    fs.writeFileSync(path.join(t.out, "doc.md"), `${before}beta\n`)
    const msg = await runToolError(
      edit,
      {
        path: "doc.md",
        edits: [
          { oldText: "# Title", newText: "# New" },
          { oldText: "beta", newText: "b" },
          { oldText: "missing", newText: "m" }
        ]
      },
      ctx
    )
    expect(msg).toBe(
      "No edit applied to doc.md:\n" +
        "  - edits[1].oldText occurs 2 times in the file; it must occur exactly once (include more surrounding text)\n" +
        "  - edits[2].oldText occurs 0 times in the file; it must occur exactly once (check whitespace and line breaks)"
    )
    expect(readOut("doc.md")).toBe(`${before}beta\n`)
    expect(events).toEqual([])
  })

  test("overlapping edits and empty oldText are refused", () => {
    const r = applyEdits("abcdef", [
      { oldText: "abcd", newText: "" },
      { oldText: "cdef", newText: "" },
      { oldText: "", newText: "x" }
    ])
    expect(r).toEqual({ ok: false, problems: ["edits[0] and edits[1] overlap", "edits[2].oldText is empty"].reverse() })
  })

  test("overlapping occurrences of one oldText count as several", () => {
    expect(applyEdits("aaa", [{ oldText: "aa", newText: "b" }])).toEqual({
      ok: false,
      problems: ["edits[0].oldText occurs 2 times in the file; it must occur exactly once (include more surrounding text)"]
    })
  })

  test("a missing file points to write; .git and paths outside are refused", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolError(edit, { path: "nope.md", edits: [{ oldText: "a", newText: "b" }] }, ctx)).toBe(
      "nope.md does not exist in the output directory; use write to create it"
    )
    expect(await runToolError(edit, { path: ".git/config", edits: [{ oldText: "a", newText: "b" }] }, ctx)).toContain(".git")
    expect(await runToolError(edit, { path: "../ro/x", edits: [{ oldText: "a", newText: "b" }] }, ctx)).toContain("read-only")
    expect(await runToolError(edit, { path: "doc.md", edits: [] }, ctx)).toContain("edits")
  })
})
