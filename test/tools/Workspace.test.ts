import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import path from "node:path"
import { Effect, Either } from "effect"
import {
  atomicWrite,
  isInside,
  resolveReadPath,
  resolveWorkspace,
  resolveWritePath,
  validateInput,
  WorkspaceInvalid
} from "../../src/job/confinement.ts"
import { createWorkspaceTree, type WorkspaceTree } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

let t: WorkspaceTree
beforeAll(async () => {
  t = await createWorkspaceTree(
    { "ro/src/a.txt": "a\n", "WORKSPACE.md": "guide\n", "notes.md": "not readable\n" },
    {
      readOnly: ["ro", "WORKSPACE.md"]
    }
  )
  fs.symlinkSync(t.ro, path.join(t.root, "rolink"))
})
afterAll(() => t.cleanup())

const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(Effect.either(e))

describe("isInside", () => {
  test("is a component-wise prefix test", () => {
    expect(isInside("/w/ro", "/w/ro")).toBe(true)
    expect(isInside("/w/ro/x", "/w/ro")).toBe(true)
    expect(isInside("/w/ro-evil/x", "/w/ro")).toBe(false)
    expect(isInside("/w/r", "/w/ro")).toBe(false)
    expect(isInside("/anything", "/")).toBe(true)
  })
})

describe("validateInput", () => {
  test("accepts up to 4096 bytes counted in UTF-8, rejects beyond", async () => {
    expect(Either.isRight(await run(validateInput("x".repeat(4096), "path")))).toBe(true)
    // 2048 two-byte characters = 4096 bytes; one more is over.
    expect(Either.isRight(await run(validateInput("é".repeat(2048), "path")))).toBe(true)
    const over = await run(validateInput("é".repeat(2049), "path"))
    expect(Either.isLeft(over) && over.left.message).toBe("path is longer than 4096 bytes")
  })
  test("rejects empty, NUL, C0, DEL and C1 characters", async () => {
    for (const bad of ["", "a\u0000", "\tx", "a\rb", "\u007f", "\u0085"]) {
      expect(Either.isLeft(await run(validateInput(bad, "path")))).toBe(true)
    }
  })
})

describe("resolveWorkspace", () => {
  test("canonicalizes every entry", async () => {
    const r = await Effect.runPromise(
      resolveWorkspace({ root: t.root, readOnly: [path.join(t.root, "rolink"), "WORKSPACE.md"], outDir: t.out })
    )
    expect(r).toEqual({ root: t.root, readOnly: [t.ro, path.join(t.root, "WORKSPACE.md")], outDir: t.out })
  })

  test("refuses overlapping outDir and read-only entries, and missing ones, listing every problem", async () => {
    const r = await run(
      resolveWorkspace({ root: t.root, readOnly: [t.root, path.join(t.out, "x"), path.join(t.root, "missing")], outDir: t.out })
    )
    expect(Either.isLeft(r)).toBe(true)
    if (Either.isRight(r)) return
    expect(r.left).toBeInstanceOf(WorkspaceInvalid)
    expect(r.left.problems).toEqual([
      { path: "workspace.readOnly.0", message: "overlaps workspace.outDir" },
      { path: "workspace.readOnly.1", message: "does not exist" },
      { path: "workspace.readOnly.2", message: "does not exist" }
    ])
    const inside = await run(resolveWorkspace({ root: t.root, readOnly: [t.ro], outDir: path.join(t.ro, "src") }))
    expect(Either.isLeft(inside) && inside.left.problems).toEqual([{ path: "workspace.readOnly.0", message: "overlaps workspace.outDir" }])
  })

  test("the first read-only entry must be a directory", async () => {
    const r = await run(resolveWorkspace({ root: t.root, readOnly: [path.join(t.root, "WORKSPACE.md")], outDir: t.out }))
    expect(Either.isLeft(r) && r.left.problems).toEqual([{ path: "workspace.readOnly.0", message: "is not a directory" }])
  })
})

describe("resolveReadPath", () => {
  test("relative inputs start at workspace.root; a file entry matches exactly", async () => {
    const a = await Effect.runPromise(resolveReadPath(t.workspace, "ro/src/a.txt"))
    expect(a).toEqual({ path: path.join(t.ro, "src/a.txt"), root: t.ro, display: "ro/src/a.txt" })
    const guide = await Effect.runPromise(resolveReadPath(t.workspace, "WORKSPACE.md"))
    expect(guide.root).toBe(path.join(t.root, "WORKSPACE.md"))
    const notes = await run(resolveReadPath(t.workspace, "notes.md"))
    expect(Either.isLeft(notes) && notes.left.message).toBe("path is outside the readable workspace: notes.md")
  })

  test("symlinks inside the workspace resolve to their canonical target", async () => {
    const a = await Effect.runPromise(resolveReadPath(t.workspace, "rolink/src/a.txt"))
    expect(a.display).toBe("ro/src/a.txt")
  })
})

describe("resolveWritePath", () => {
  test("relative inputs start at outDir; missing directories are listed in order", async () => {
    const w = await Effect.runPromise(resolveWritePath(t.workspace, "reports/2024/summary.md"))
    expect(w).toMatchObject({ base: t.out, missing: ["reports", "2024"], name: "summary.md", display: "reports/2024/summary.md" })
  })

  test(". and .. below a missing directory are refused; above it they resolve", async () => {
    const bad = await run(resolveWritePath(t.workspace, "nope/../x.md"))
    expect(Either.isLeft(bad) && bad.left.message).toContain('"." or ".."')
    fs.mkdirSync(path.join(t.out, "exists"), { recursive: true })
    const ok = await Effect.runPromise(resolveWritePath(t.workspace, "exists/../x.md"))
    expect(ok.path).toBe(path.join(t.out, "x.md"))
  })

  test("a path naming a directory is refused", async () => {
    for (const p of ["dir/", ".", "a/.."]) {
      const r = await run(resolveWritePath(t.workspace, p))
      expect(Either.isLeft(r) && r.left.message).toContain("must name a file")
    }
  })
})

describe("atomicWrite", () => {
  test("creates missing parents and keeps an existing file's mode", async () => {
    const target = await Effect.runPromise(resolveWritePath(t.workspace, "deep/er/file.sh"))
    await Effect.runPromise(atomicWrite(target, "#!/bin/sh\n"))
    expect(fs.readFileSync(path.join(t.out, "deep/er/file.sh"), "utf8")).toBe("#!/bin/sh\n")
    fs.chmodSync(path.join(t.out, "deep/er/file.sh"), 0o755)
    await Effect.runPromise(atomicWrite(target, "#!/bin/sh\necho\n"))
    expect(fs.statSync(path.join(t.out, "deep/er/file.sh")).mode & 0o777).toBe(0o755)
  })

  test("a parent swapped for a symlink after resolution is refused, nothing written outside", async () => {
    const target = await Effect.runPromise(resolveWritePath(t.workspace, "swap/inner/file.txt"))
    // The race the descriptor checks exist for: `swap` appears as a link to outside between check and write.
    fs.symlinkSync(t.outside, path.join(t.out, "swap"))
    const r = await run(atomicWrite(target, "x"))
    expect(Either.isLeft(r)).toBe(true)
    expect(fs.existsSync(path.join(t.outside, "inner"))).toBe(false)
  })

  test("writing over a directory fails with a clear message", async () => {
    fs.mkdirSync(path.join(t.out, "adir"), { recursive: true })
    fs.writeFileSync(path.join(t.out, "adir", "keep"), "")
    const target = await Effect.runPromise(resolveWritePath(t.workspace, "adir"))
    const r = await run(atomicWrite(target, "x"))
    expect(Either.isLeft(r) && r.left.message).toBe("adir is a directory")
  })
})
