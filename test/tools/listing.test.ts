// ls and find on a real tree.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import path from "node:path"
import { find, MAX_FIND_RESULTS } from "../../src/tools/find.ts"
import { ls, MAX_LS_ENTRIES } from "../../src/tools/ls.ts"
import { walkTree, type WalkStatus } from "../../src/tools/walkTree.ts"
import { createToolContext, createWorkspaceTree, runToolError, runToolText, type WorkspaceTree } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

let t: WorkspaceTree
beforeAll(async () => {
  t = await createWorkspaceTree({
    "ro/b.ts": "",
    "ro/a.md": "",
    "ro/.hidden": "",
    "ro/src/x.ts": "",
    "ro/src/x.test.ts": "",
    "ro/src/deep/y.ts": "",
    "ro/.git/HEAD": "",
    "ro/node_modules/p/index.ts": "",
    "ro/empty/.keep": ""
  })
  fs.rmSync(path.join(t.ro, "empty/.keep"))
  fs.symlinkSync(path.join(t.ro, "src"), path.join(t.ro, "srclink"))
  fs.mkdirSync(path.join(t.ro, "wide"))
  for (let i = 0; i < MAX_LS_ENTRIES + 5; i++) fs.writeFileSync(path.join(t.ro, "wide", `f${String(i).padStart(4, "0")}.txt`), "")
})
afterAll(() => t.cleanup())

describe("ls", () => {
  test("lists the default directory sorted, directories marked, symlinks not followed", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    expect(await runToolText(ls, {}, ctx)).toBe(
      ["ro/", ".git/", ".hidden", "a.md", "b.ts", "empty/", "node_modules/", "src/", "srclink", "wide/"].join("\n")
    )
    expect(events).toEqual([])
  })

  test("a subdirectory, an empty one, a file and a missing path", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(ls, { path: "ro/src" }, ctx)).toBe("ro/src/\ndeep/\nx.test.ts\nx.ts")
    expect(await runToolText(ls, { path: "ro/srclink" }, ctx)).toBe("ro/src/\ndeep/\nx.test.ts\nx.ts")
    expect(await runToolText(ls, { path: "ro/empty" }, ctx)).toBe("ro/empty/\n[empty directory]")
    expect(await runToolError(ls, { path: "ro/a.md" }, ctx)).toBe("not a directory: ro/a.md")
    expect(await runToolError(ls, { path: "ro/nope" }, ctx)).toBe("file not found: ro/nope")
  })

  test("caps the number of entries", async () => {
    const { ctx } = createToolContext(t.workspace)
    const lines = (await runToolText(ls, { path: "ro/wide" }, ctx)).split("\n")
    expect(lines).toHaveLength(MAX_LS_ENTRIES + 2)
    expect(lines.at(-1)).toBe("[5 more entries not shown; use find with a pattern]")
  })
})

describe("find", () => {
  test("a name glob matches at any depth; .git skipped; node_modules searched; links listed, not followed", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(find, { pattern: "*.ts" }, ctx)).toBe(
      ["ro/b.ts", "ro/node_modules/p/index.ts", "ro/src/deep/y.ts", "ro/src/x.test.ts", "ro/src/x.ts"].join("\n")
    )
    expect(await runToolText(find, { pattern: "src*" }, ctx)).toBe("ro/srclink")
    expect(await runToolText(find, { pattern: "HEAD" }, ctx)).toBe("No files found.")
  })

  test("a path glob is relative to the searched directory", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(find, { pattern: "src/**/*.test.ts" }, ctx)).toBe("ro/src/x.test.ts")
    expect(await runToolText(find, { pattern: "**/*.ts", path: "ro/src/deep" }, ctx)).toBe("ro/src/deep/y.ts")
    expect(await runToolText(find, { pattern: "*.ts", path: "ro/srclink" }, ctx)).toBe(
      ["ro/src/deep/y.ts", "ro/src/x.test.ts", "ro/src/x.ts"].join("\n")
    )
  })

  test("caps results and says so", async () => {
    const { ctx } = createToolContext(t.workspace)
    fs.mkdirSync(path.join(t.ro, "many"))
    for (let i = 0; i < MAX_FIND_RESULTS + 1; i++) fs.writeFileSync(path.join(t.ro, "many", `m${i}.log`), "")
    const lines = (await runToolText(find, { pattern: "*.log" }, ctx)).split("\n")
    expect(lines).toHaveLength(MAX_FIND_RESULTS + 1)
    expect(lines.at(-1)).toBe(`[more than ${MAX_FIND_RESULTS} files match; narrow the pattern or path]`)
  })

  test("a file path is refused", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolError(find, { pattern: "*", path: "ro/a.md" }, ctx)).toBe("not a directory: ro/a.md")
  })
})

describe("walkTree", () => {
  test("caps entries and depth and says which cap it hit", () => {
    const status: WalkStatus = { entries: 0, stopped: undefined }
    const few = [...walkTree(t.ro, t.ro, { maxEntries: 4, maxDepth: 64 }, status)].map((e) => e.rel)
    expect(few).toEqual([".hidden", "a.md", "b.ts"])
    expect(status.stopped).toBe("entries")
    const shallow: WalkStatus = { entries: 0, stopped: undefined }
    const top = [...walkTree(path.join(t.ro, "src"), t.ro, { maxEntries: 100, maxDepth: 0 }, shallow)].map((e) => e.rel)
    expect(top).toEqual(["x.test.ts", "x.ts"])
    expect(shallow.stopped).toBe("depth")
  })

  test("a start directory outside its root yields nothing", () => {
    const status: WalkStatus = { entries: 0, stopped: undefined }
    expect([...walkTree(t.outside, t.ro, { maxEntries: 100, maxDepth: 8 }, status)]).toEqual([])
  })
})
