import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { read } from "../../src/tools/read.ts"
import { createToolContext, createWorkspaceTree, runToolError, runToolText, type WorkspaceTree } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const numbered = (n: number, width = 0) => Array.from({ length: n }, (_, i) => `line ${i + 1}${"x".repeat(width)}`).join("\n") + "\n"
let t: WorkspaceTree

beforeAll(async () => {
  t = await createWorkspaceTree({
    "ro/small.txt": "one\ntwo\r\nthree\n",
    "ro/ten.txt": numbered(10),
    "ro/long.txt": numbered(5000),
    "ro/wide.txt": numbered(300, 300),
    "ro/oneline.txt": "y".repeat(60 * 1024),
    "ro/empty.txt": "",
    "ro/bin.dat": "abc\u0000def",
    "ro/canary.txt": "SECRET-CANARY-123\n"
  })
})
afterAll(() => t.cleanup())

describe("read", () => {
  test("returns the whole small file as plain text, CRLF normalized, and emits a range to end of file", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    expect(await runToolText(read, { path: "ro/small.txt" }, ctx)).toBe("one\ntwo\nthree")
    expect(events).toEqual([{ type: "source.read", tool: "read", path: "ro/small.txt", firstLine: 1, lastLine: null }])
  })

  test("offset and limit pick a range and say how to continue", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const text = await runToolText(read, { path: "ro/ten.txt", offset: 3, limit: 4 }, ctx)
    expect(text).toBe("line 3\nline 4\nline 5\nline 6\n[showing lines 3-6 of 10; use offset=7 to continue]")
    expect(events).toEqual([{ type: "source.read", tool: "read", path: "ro/ten.txt", firstLine: 3, lastLine: 6 }])
    const rest = await runToolText(read, { path: "ro/ten.txt", offset: 7 }, ctx)
    expect(rest).toBe("line 7\nline 8\nline 9\nline 10")
    expect(events[1]).toEqual({ type: "source.read", tool: "read", path: "ro/ten.txt", firstLine: 7, lastLine: null })
  })

  test("cuts at 2000 lines with a continuation hint", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const text = await runToolText(read, { path: "ro/long.txt" }, ctx)
    const lines = text.split("\n")
    expect(lines).toHaveLength(2001)
    expect(lines[1999]).toBe("line 2000")
    expect(lines[2000]).toBe("[showing lines 1-2000 of 5000; use offset=2001 to continue]")
    expect(events).toEqual([{ type: "source.read", tool: "read", path: "ro/long.txt", firstLine: 1, lastLine: 2000 }])
    const last = await runToolText(read, { path: "ro/long.txt", offset: 4001 }, ctx)
    expect(last.split("\n")).toHaveLength(1000)
    expect(events[1]).toMatchObject({ firstLine: 4001, lastLine: null })
  })

  test("cuts at 50 KB on a line boundary with a marker", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const text = await runToolText(read, { path: "ro/wide.txt" }, ctx)
    const lines = text.split("\n")
    const marker = lines.pop() ?? ""
    expect(Buffer.byteLength(lines.join("\n"))).toBeLessThanOrEqual(50 * 1024)
    const shown = lines.length
    expect(shown).toBeGreaterThan(100)
    expect(shown).toBeLessThan(300)
    expect(lines[shown - 1]).toStartWith(`line ${shown}x`)
    expect(marker).toBe(`[showing lines 1-${shown} of 300 (50 KB limit); use offset=${shown + 1} to continue]`)
    expect(events).toEqual([{ type: "source.read", tool: "read", path: "ro/wide.txt", firstLine: 1, lastLine: shown }])
  })

  test("a single line over 50 KB is cut inside the line", async () => {
    const { ctx } = createToolContext(t.workspace)
    const text = await runToolText(read, { path: "ro/oneline.txt" }, ctx)
    const [body, marker] = text.split("\n")
    expect(body).toBe("y".repeat(50 * 1024))
    expect(marker).toContain("line 1 is longer than the 50 KB limit")
  })

  test("binary files, directories, offsets past the end and missing files are model-fixable errors", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    expect(await runToolError(read, { path: "ro/bin.dat" }, ctx)).toBe("ro/bin.dat is a binary file; read shows text files only")
    expect(await runToolError(read, { path: "ro" }, ctx)).toBe("ro is a directory; use ls")
    expect(await runToolError(read, { path: "ro/ten.txt", offset: 11 }, ctx)).toBe("offset 11 is past the end of ro/ten.txt (10 lines)")
    expect(await runToolError(read, { path: "ro/nope.txt" }, ctx)).toBe("file not found: ro/nope.txt")
    expect(await runToolError(read, { path: "ro/ten.txt", offset: 0 }, ctx)).toContain("offset")
    expect(await runToolError(read, { path: "ro/ten.txt", extra: 1 }, ctx)).toContain("extra")
    expect(events).toEqual([])
  })

  test("an empty file says so", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(read, { path: "ro/empty.txt" }, ctx)).toBe("[ro/empty.txt is empty]")
  })

  test("events never carry file content", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    expect(await runToolText(read, { path: "ro/canary.txt" }, ctx)).toContain("SECRET-CANARY-123")
    expect(JSON.stringify(events)).not.toContain("SECRET-CANARY")
    expect(Object.keys(events[0] ?? {}).sort()).toEqual(["firstLine", "lastLine", "path", "tool", "type"])
  })

  test("the parameter schema the model sees has a description on every field", () => {
    const props = read.parameters["properties"] as Record<string, { description?: string }>
    expect(Object.keys(props).sort()).toEqual(["limit", "offset", "path"])
    for (const p of Object.values(props)) expect(p.description).toBeString()
    expect(read.parameters["required"]).toEqual(["path"])
  })
})
