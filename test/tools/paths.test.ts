// The "Paths" cases of security.md, run through the tools themselves on real temp trees.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { spawnSync } from "node:child_process"
import fs from "node:fs"
import path from "node:path"
import { edit } from "../../src/tools/edit.ts"
import { find } from "../../src/tools/find.ts"
import { grep } from "../../src/tools/grep.ts"
import { ls } from "../../src/tools/ls.ts"
import { read } from "../../src/tools/read.ts"
import { write } from "../../src/tools/write.ts"
import { createToolContext, createWorkspaceTree, runToolError, runToolText, type WorkspaceTree } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const CANARY = "CANARY-7f3a9c"
let t: WorkspaceTree

beforeAll(async () => {
  t = await createWorkspaceTree(
    {
      "ro/src/a.txt": "inside a\n",
      "ro/README.md": "readme\n",
      "ro-evil/x": `${CANARY} sibling\n`,
      "secret.txt": `${CANARY} in root but not readable\n`
    },
    {
      outsideFiles: {
        "src/a.txt": `${CANARY} outside\n`,
        "deep/keep": "",
        "victim.txt": "original\n",
        "etc/passwd": `${CANARY} root:x:0:0\n`
      }
    }
  )
  fs.symlinkSync(path.join(t.outside, "etc"), path.join(t.ro, "etclink"))
  fs.symlinkSync("/etc", path.join(t.ro, "link"))
  fs.symlinkSync(path.join(t.outside, "deep"), path.join(t.ro, "deeplink"))
  fs.symlinkSync(t.outside, path.join(t.out, "escape"))
})
afterAll(() => t.cleanup())

const noCanary = (s: string) => expect(s).not.toContain(CANARY)

describe("reads stay inside the read-only workspace", () => {
  test.each([
    ["../../etc/passwd"],
    ["/etc/passwd"],
    ["ro-evil/x"],
    ["ro/../ro-evil/x"],
    ["secret.txt"],
    ["ro/etclink/passwd"],
    ["ro/link/passwd"],
    ["ro/deeplink/../src/a.txt"]
  ])("read(%p) is refused without content", async (p) => {
    const { ctx, events } = createToolContext(t.workspace)
    const msg = await runToolError(read, { path: p }, ctx)
    expect(msg).toContain("outside the readable workspace")
    noCanary(msg)
    expect(msg).not.toContain(t.outside)
    expect(events).toEqual([])
  })

  test("absolute prefix confusion: <ro>-evil/x is outside <ro>", async () => {
    const { ctx } = createToolContext(t.workspace)
    const msg = await runToolError(read, { path: `${t.ro}-evil/x` }, ctx)
    expect(msg).toContain("outside the readable workspace")
  })

  test("a missing path outside gets the same answer as an existing one (no existence oracle)", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolError(read, { path: "/etc/definitely-missing-kintsugi" }, ctx)).toContain("outside the readable workspace")
    expect(await runToolError(read, { path: "ro/missing.txt" }, ctx)).toContain("file not found")
  })

  test("link/../src/a.txt resolves the way the kernel does, not lexically", async () => {
    // ro/deeplink -> outside/deep, so ro/deeplink/../src/a.txt is outside/src/a.txt (the canary), never ro/src/a.txt.
    const { ctx } = createToolContext(t.workspace)
    noCanary(await runToolError(read, { path: "ro/deeplink/../src/a.txt" }, ctx))
    noCanary(await runToolError(ls, { path: "ro/deeplink/.." }, ctx))
  })

  test("ls, grep and find refuse paths outside", async () => {
    const { ctx } = createToolContext(t.workspace)
    for (const [tool, args] of [
      [ls, { path: "ro/link" }],
      [ls, { path: "/" }],
      [grep, { pattern: "root", path: "ro/link" }],
      [grep, { pattern: "CANARY", path: "ro-evil" }],
      [find, { pattern: "*", path: "ro/etclink" }]
    ] as const) {
      const msg = await runToolError(tool, args, ctx)
      expect(msg).toContain("outside the readable workspace")
      noCanary(msg)
    }
  })

  test("grep and find never descend through a symlinked directory", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const g = await runToolText(grep, { pattern: CANARY, literal: true }, ctx)
    expect(g).toBe("No matches found.")
    expect(events).toEqual([])
    const f = await runToolText(find, { pattern: "**/*" }, ctx)
    noCanary(f)
    expect(f).not.toContain("passwd")
    expect(f).not.toContain("etclink/")
    expect(f.split("\n")).toContain("ro/src/a.txt")
  })

  test.each([["a\u0000b"], ["a\nb"], ["a\u001bb"], ["a\u007fb"], ["x".repeat(4097)]])("input %# is rejected, not repaired", async (p) => {
    const { ctx } = createToolContext(t.workspace)
    for (const [tool, args] of [
      [read, { path: p }],
      [ls, { path: p }],
      [grep, { pattern: "a", path: p }],
      [grep, { pattern: p }],
      [find, { pattern: p }],
      [write, { path: p, content: "x" }],
      [edit, { path: p, edits: [{ oldText: "a", newText: "b" }] }]
    ] as const) {
      expect(await runToolError(tool, args, ctx)).toMatch(/NUL or control character|longer than 4096 bytes/)
    }
  })

  test("find rejects absolute and .. patterns", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolError(find, { pattern: "/etc/*" }, ctx)).toContain("relative")
    expect(await runToolError(find, { pattern: "../**" }, ctx)).toContain("..")
    expect(await runToolError(grep, { pattern: "x", glob: "src/../../*" }, ctx)).toContain("..")
  })
})

describe("a FIFO in the read-only tree never blocks", () => {
  test("read and grep finish", async () => {
    const fifo = path.join(t.ro, "src", "pipe")
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0)
    try {
      const { ctx } = createToolContext(t.workspace)
      expect(await runToolError(read, { path: "ro/src/pipe" }, ctx)).toContain("not a regular file")
      expect(await runToolText(grep, { pattern: "inside" }, ctx)).toContain("ro/src/a.txt:1: inside a")
      expect(await runToolError(grep, { pattern: "inside", path: "ro/src/pipe" }, ctx)).toContain("not a readable regular file")
    } finally {
      fs.rmSync(fifo)
    }
  })
})

describe("writes stay inside outDir", () => {
  test("write through out/escape -> outside creates nothing there", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const msg = await runToolError(write, { path: "escape/new.txt", content: "x" }, ctx)
    expect(msg).toContain("outside the output directory")
    expect(fs.existsSync(path.join(t.outside, "new.txt"))).toBe(false)
    expect(await runToolError(write, { path: "escape/sub/new.txt", content: "x" }, ctx)).toContain("outside the output directory")
    expect(fs.existsSync(path.join(t.outside, "sub"))).toBe(false)
    expect(events).toEqual([])
  })

  test.each([["../ro/src/a.txt"], ["../ro/new.txt"], ["../secret.txt"], ["/etc/kintsugi-x"], ["../ro-evil/x"]])(
    "write(%p) outside outDir is refused and changes nothing",
    async (p) => {
      const { ctx } = createToolContext(t.workspace)
      const before = fs.readFileSync(path.join(t.ro, "src/a.txt"), "utf8")
      expect(await runToolError(write, { path: p, content: "pwned" }, ctx)).toMatch(/read-only workspace|outside the output directory/)
      expect(fs.readFileSync(path.join(t.ro, "src/a.txt"), "utf8")).toBe(before)
      expect(fs.existsSync(path.join(t.ro, "new.txt"))).toBe(false)
    }
  )

  test("absolute writes into the read-only root are refused as read-only", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolError(write, { path: path.join(t.ro, "new.txt"), content: "x" }, ctx)).toContain("read-only workspace")
    expect(await runToolError(edit, { path: path.join(t.ro, "src/a.txt"), edits: [{ oldText: "inside", newText: "x" }] }, ctx)).toContain(
      "read-only workspace"
    )
    expect(fs.readFileSync(path.join(t.ro, "src/a.txt"), "utf8")).toBe("inside a\n")
  })

  test.each([[".git/config"], [".git/hooks/pre-commit"], ["sub/.git/HEAD"], [".GIT/config"], [".git"]])(
    "write(%p) is refused",
    async (p) => {
      const { ctx } = createToolContext(t.workspace)
      expect(await runToolError(write, { path: p, content: "x" }, ctx)).toContain(".git")
      expect(fs.existsSync(path.join(t.out, ".git"))).toBe(false)
    }
  )

  test("a hard link in outDir to an outside file: write replaces the link", async () => {
    const victim = path.join(t.outside, "victim.txt")
    fs.linkSync(victim, path.join(t.out, "hard.txt"))
    const { ctx, events } = createToolContext(t.workspace)
    await runToolText(write, { path: "hard.txt", content: "new content\n" }, ctx)
    expect(fs.readFileSync(victim, "utf8")).toBe("original\n")
    expect(fs.readFileSync(path.join(t.out, "hard.txt"), "utf8")).toBe("new content\n")
    expect(fs.statSync(path.join(t.out, "hard.txt")).ino).not.toBe(fs.statSync(victim).ino)
    expect(events).toEqual([{ type: "output", path: "hard.txt" }])
  })

  test("a leaf symlink in outDir to an outside file: write does not write through it", async () => {
    const victim = path.join(t.outside, "victim.txt")
    fs.symlinkSync(victim, path.join(t.out, "leaf.txt"))
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolError(edit, { path: "leaf.txt", edits: [{ oldText: "original", newText: "x" }] }, ctx)).toContain("symbolic link")
    await runToolText(write, { path: "leaf.txt", content: "replaced\n" }, ctx)
    expect(fs.readFileSync(victim, "utf8")).toBe("original\n")
    expect(fs.lstatSync(path.join(t.out, "leaf.txt")).isSymbolicLink()).toBe(false)
    expect(fs.readFileSync(path.join(t.out, "leaf.txt"), "utf8")).toBe("replaced\n")
  })

  test("no temp files are left behind in outDir", () => {
    expect(fs.readdirSync(t.out).filter((n) => n.endsWith(".tmp"))).toEqual([])
  })
})
