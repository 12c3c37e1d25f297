/**
 * grep's fast paths: workers open files relative to a directory descriptor verified once (openat,
 * O_NOFOLLOW) and refuse whatever the per-file checks refuse; the walk opens subdirectories relative to
 * their parent (openat, O_DIRECTORY, O_NOFOLLOW), lists them with getdents64 and releases its
 * descriptors when stopped early; only the lines holding a whole-text match candidate are tested, with
 * exactly the answer of testing every line; the case-insensitive byte prefilter answers the same for
 * any alignment of its input.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import path from "node:path"
import {
  closeQuietly,
  listDirAt,
  openDirSyncChecked,
  openSubdirAt,
  readFileAtSyncChecked,
  type Scratch
} from "../../src/job/confinementSync.ts"
import { startSearch, type FileResult } from "../../src/tools/grepPool.ts"
import { buildMatcher, scanBytes, type LineMatcher } from "../../src/tools/grepScan.ts"
import { drive, walkTree, type WalkStatus } from "../../src/tools/walkTree.ts"
import { createWorkspaceTree, type WorkspaceTree } from "../support/workspace.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(60_000)

const onLinux = process.platform === "linux"

let t: WorkspaceTree
beforeAll(async () => {
  t = await createWorkspaceTree(
    {
      "ro/plain.txt": "needle one\n",
      "ro/d/x.txt": "needle in d\n",
      "ro/bin.dat": "needle\u0000binary",
      "ro/big.txt": "needle ".repeat(200)
    },
    {
      outsideFiles: {
        "canary.txt": "needle CANARY-91 outside\n",
        "sub/secret.txt": "needle CANARY-92 deep\n",
        "d/x.txt": "needle CANARY-93 swapped\n"
      }
    }
  )
  fs.symlinkSync(path.join(t.outside, "canary.txt"), path.join(t.ro, "link.txt"))
  fs.symlinkSync(t.outside, path.join(t.ro, "linkdir"))
  Bun.spawnSync(["mkfifo", path.join(t.ro, "fifo")])
})
afterAll(() => t.cleanup())

const scratch: Scratch = { buf: Buffer.allocUnsafe(1024) }

describe.skipIf(!onLinux)("reading files relative to a verified directory descriptor", () => {
  test("a directory is opened only when it is a real directory whose descriptor is that path inside the root", () => {
    const ok = openDirSyncChecked(t.ro, t.ro)
    expect(ok).toBeDefined()
    if (ok !== undefined) closeQuietly(ok.fd)
    // The last component a symlink to outside; an earlier one; a directory outside; a file; a prefix look-alike.
    for (const dir of [
      path.join(t.ro, "linkdir"),
      path.join(t.ro, "linkdir", "sub"),
      t.outside,
      path.join(t.ro, "plain.txt"),
      `${t.ro}-evil`
    ]) {
      expect(`${dir}: ${openDirSyncChecked(dir, t.ro) === undefined}`).toBe(`${dir}: true`)
    }
  })

  test("only one regular file entry is read: no symlink, FIFO, path with a slash, '.' or '..'", () => {
    const dir = openDirSyncChecked(t.ro, t.ro)
    if (dir === undefined) throw new Error("ro did not open")
    try {
      const read = (name: string) => {
        const r = readFileAtSyncChecked(dir, name, 1 << 20, scratch)
        return r instanceof Buffer ? r.toString("utf8") : r
      }
      expect(read("plain.txt")).toBe("needle one\n")
      expect(read("d/x.txt")).toBeUndefined() // inside, but not one component
      for (const name of [
        "link.txt",
        "fifo",
        "d",
        "linkdir",
        "..",
        ".",
        "",
        "../ro/plain.txt",
        "linkdir/canary.txt",
        "missing.txt",
        "plain.txt\u0000x"
      ]) {
        expect(`${JSON.stringify(name)}: ${read(name)}`).toBe(`${JSON.stringify(name)}: undefined`)
      }
      expect(readFileAtSyncChecked(dir, "big.txt", 100, scratch)).toBe("too-large")
      expect(readFileAtSyncChecked(dir, "bin.dat", 1 << 20, scratch, (head) => head.includes(0))).toBe("skipped")
    } finally {
      closeQuietly(dir.fd)
    }
  })

  test("a worker terminated while holding a directory open: the descriptor is closed once its thread exits", async () => {
    // \s+$ on a run of spaces not followed by a line end takes quadratic time. A terminated worker's
    // thread runs on until the pattern returns (Bun 1.4 cannot interrupt a regex), then exits.
    const tree = await createWorkspaceTree({ "ro/stuck/a.txt": "fine\n", "ro/stuck/b.txt": `${" ".repeat(40_000)}x\n` })
    const stuckDir = path.join(tree.ro, "stuck")
    const holding = () =>
      fs.readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`) === stuckDir
        } catch {
          return false
        }
      }).length
    const search = (pattern: string, deadlineMs: number) => {
      const s = startSearch(
        { pattern, literal: false, ignoreCase: false, context: 0, limit: 100, maxBytes: 1 << 20, root: tree.ro },
        {
          onFile: () => true,
          deadline: performance.now() + deadlineMs,
          stallMs: 0,
          signal: new AbortController().signal,
          progress: () => {}
        }
      )
      s.add(path.join(stuckDir, "a.txt"))
      s.add(path.join(stuckDir, "b.txt"))
      return s.finish()
    }
    try {
      expect(await search("fine", 30_000)).toEqual({ kind: "done" }) // workers started
      expect(await search("\\s+$", 300)).toMatchObject({ kind: "stalled" })
      await until(() => holding() === 0, { what: "the stalled workers to let go of the stuck files", timeoutMs: 150_000, everyMs: 100 })
      expect(holding()).toBe(0)
    } finally {
      await tree.cleanup()
    }
  }, 180_000)

  test("a worker refuses a path through a symlinked directory, and a directory swapped for a symlink after the walk", async () => {
    const swapped = path.join(t.ro, "d")
    const files = [
      path.join(t.ro, "linkdir", "sub", "secret.txt"),
      path.join(t.ro, "linkdir", "canary.txt"),
      path.join(swapped, "x.txt"),
      path.join(t.ro, "plain.txt")
    ]
    // The walk saw ro/d/x.txt; before a worker opens it, ro/d becomes a symlink to a directory outside.
    fs.rmSync(swapped, { recursive: true })
    fs.symlinkSync(path.join(t.outside, "d"), swapped)
    const results: Array<FileResult> = []
    const search = startSearch(
      { pattern: "needle", literal: true, ignoreCase: false, context: 0, limit: 100, maxBytes: 1 << 20, root: t.ro },
      {
        onFile: (_, r) => results.push(r) > 0,
        deadline: performance.now() + 30_000,
        stallMs: 15_000,
        signal: new AbortController().signal,
        progress: () => {}
      }
    )
    for (const f of files) search.add(f)
    expect(await search.finish()).toEqual({ kind: "done" })
    expect(results.slice(0, 3)).toEqual(["unreadable", "unreadable", "unreadable"])
    expect(JSON.stringify(results)).not.toContain("CANARY")
    expect(results[3]).toMatchObject({ hits: [0], hitText: ["needle one"] })
  })
})

describe.skipIf(!onLinux)("the walk through directory descriptors", () => {
  test("a subdirectory opens relative to its parent only when it is a real directory entry", () => {
    const ro = openDirSyncChecked(t.ro, t.ro)
    if (ro === undefined) throw new Error("ro did not open")
    try {
      fs.mkdirSync(path.join(t.ro, "sub"), { recursive: true })
      const sub = openSubdirAt(ro, "sub")
      expect(sub).toBeDefined()
      if (sub !== undefined) closeQuietly(sub.fd)
      for (const name of ["linkdir", "plain.txt", "fifo", "..", ".", "", "sub/..", "missing"]) {
        expect(`${JSON.stringify(name)}: ${openSubdirAt(ro, name) === undefined}`).toBe(`${JSON.stringify(name)}: true`)
      }
      const listed = new Map(listDirAt(ro)?.map((e) => [e.name, e.kind]))
      expect(listed.has(".")).toBe(false)
      expect(listed.has("..")).toBe(false)
      expect([listed.get("plain.txt"), listed.get("sub"), listed.get("link.txt"), listed.get("linkdir"), listed.get("fifo")]).toEqual([
        "file",
        "dir",
        "symlink",
        "symlink",
        "other"
      ])
    } finally {
      closeQuietly(ro.fd)
    }
  })

  test("a directory swapped for a symlink to outside while the walk runs is not descended", async () => {
    const tree = await createWorkspaceTree(
      { "ro/a/1.txt": "x", "ro/a/2.txt": "x", "ro/b/3.txt": "x" },
      { outsideFiles: { "secret/canary.txt": "CANARY-94" } }
    )
    try {
      const status: WalkStatus = { entries: 0, stopped: undefined }
      const walk = walkTree(tree.ro, tree.ro, { maxEntries: 100, maxDepth: 8 }, status)
      const seen = [walk.next().value?.rel]
      // ro/a is being walked; ro/b is not opened yet.
      fs.rmSync(path.join(tree.ro, "b"), { recursive: true })
      fs.symlinkSync(path.join(tree.outside, "secret"), path.join(tree.ro, "b"))
      for (const e of walk) seen.push(e.rel)
      // ro/b was listed as a directory; opened now, it is a symlink: skipped, its target never listed.
      expect(seen).toEqual(["a/1.txt", "a/2.txt"])
    } finally {
      await tree.cleanup()
    }
  })

  test("a walk stopped early (a limit, the deadline) releases every directory descriptor it held", async () => {
    const deep: Record<string, string> = {}
    for (let i = 0; i < 30; i++) deep[`ro/${"d/".repeat(i)}f${i}.txt`] = "x"
    const tree = await createWorkspaceTree(deep)
    try {
      const open = () => fs.readdirSync("/proc/self/fd").length
      const before = open()
      const status: WalkStatus = { entries: 0, stopped: undefined }
      let files = 0
      const walk = walkTree(tree.ro, tree.ro, { maxEntries: 1000, maxDepth: 64 }, status)
      await drive(
        walk,
        { signal: new AbortController().signal, deadline: performance.now() + 30_000, progress: () => {}, status },
        () => ++files < 25
      )
      expect(files).toBe(25)
      expect(open()).toBe(before)
    } finally {
      await tree.cleanup()
    }
  })
})

// ---------------------------------------------------------------------------------------------------

/** The same matcher without its whole-text candidate search and its anchors: every line is tested. */
const everyLine = (m: LineMatcher): LineMatcher => {
  const { nextCandidate: _, anchors: __, foldedLines: ___, ...rest } = m
  return rest
}

describe("testing only the lines that hold a match candidate", () => {
  test("the native and literal engines search candidates; the answer equals testing every line", () => {
    let seed = 7
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const pieces = ["a", "b", "ab", "A", " ", "\t", "-", "x", "é", "\u212a", "k", "S", "\u017f", "needle", "NeEdLe", "😀", "\r"]
    const texts: Array<string> = [
      "",
      "\n",
      "\n\n",
      "a",
      "a\n",
      "a\r\n",
      "\r\n",
      "needle",
      "x\nneedle\r\n\r\nneedle\n",
      "a\n\nneedle\n\n\nab needle EdLe\n"
    ]
    for (let i = 0; i < 150; i++) {
      const lines = Array.from({ length: rnd(8) }, () => Array.from({ length: rnd(6) }, () => pieces[rnd(pieces.length)]).join(""))
      const eol = rnd(2) === 0 ? "\n" : "\r\n"
      texts.push(lines.join(eol) + (rnd(2) === 0 ? eol : ""))
    }
    const patterns: Array<[string, { literal: boolean; ignoreCase: boolean }]> = [
      ["needle", { literal: true, ignoreCase: false }],
      ["needle", { literal: true, ignoreCase: true }],
      ["K", { literal: true, ignoreCase: true }],
      ["", { literal: true, ignoreCase: false }],
      ["a\\s+b", { literal: false, ignoreCase: false }], // \s also matches "\n": a whole-text match may span lines
      ["b$", { literal: false, ignoreCase: false }],
      ["^$", { literal: false, ignoreCase: false }],
      ["^", { literal: false, ignoreCase: false }],
      ["x*", { literal: false, ignoreCase: false }],
      ["a.b", { literal: false, ignoreCase: false }],
      ["[ab]+\\s*$", { literal: false, ignoreCase: true }],
      ["\\bab\\b", { literal: false, ignoreCase: false }],
      // Required literals: the lines holding the rarest are the only ones decoded.
      ["ne+dle\\s*ab", { literal: false, ignoreCase: false }],
      ["ab.*needle", { literal: false, ignoreCase: false }],
      ["Ed[Ll]e", { literal: false, ignoreCase: false }],
      // Case-insensitive required literals: the lines holding one in any ASCII case (on the folded bytes).
      ["ne+dle\\s*ab", { literal: false, ignoreCase: true }],
      ["needle", { literal: false, ignoreCase: true }],
      ["sk", { literal: true, ignoreCase: true }]
    ]
    let compared = 0
    let withHits = 0
    for (const [pattern, opts] of patterns) {
      const m = buildMatcher(pattern, opts)
      expect(`${pattern} ${m.engine}: ${m.nextCandidate !== undefined}`).toBe(`${pattern} ${m.engine}: true`)
      for (const text of texts) {
        const bytes = Buffer.from(text, "utf8")
        for (const [context, limit] of [
          [0, 1000],
          [0, 1],
          [2, 1000],
          [1, 2]
        ] as const) {
          const want = scanBytes(bytes, everyLine(m), context, limit)
          const got = scanBytes(bytes, m, context, limit)
          expect(`${JSON.stringify(pattern)} on ${JSON.stringify(text)} (${context}, ${limit}): ${JSON.stringify(got)}`).toBe(
            `${JSON.stringify(pattern)} on ${JSON.stringify(text)} (${context}, ${limit}): ${JSON.stringify(want)}`
          )
          if (want !== undefined) withHits++
          compared++
        }
      }
    }
    expect(compared).toBeGreaterThan(5000)
    expect(withHits).toBeGreaterThan(500)
  })

  test("re2js patterns test every line, or the lines holding a required literal", () => {
    expect(buildMatcher("(a|aa)+b", { literal: false, ignoreCase: false }).nextCandidate).toBeUndefined()
    const m = buildMatcher("(ne|xx)+edle", { literal: false, ignoreCase: false })
    expect(m.engine).toBe("re2")
    expect(m.anchors?.map((a) => a.toString())).toEqual(["edle"])
    const text = "needle\r\nxx edle\nab\nxxedle needle\n\nnope edle"
    for (const limit of [1, 1000]) {
      expect(scanBytes(Buffer.from(text), m, 0, limit)).toEqual(scanBytes(Buffer.from(text), everyLine(m), 0, limit))
    }
    expect(scanBytes(Buffer.from(text), m, 0, 1000)?.hits).toEqual([0, 3])
  })
})

describe("the case-insensitive byte prefilter", () => {
  test("answers the same at every alignment, with the literal in the 4-byte words or the tail", () => {
    const m = buildMatcher("CreateServer", { literal: true, ignoreCase: true })
    for (const body of [
      "xx createSERVER",
      "createserver",
      "CREATESERVE",
      "createserve r",
      "ab\u212aé createserver",
      "\u017f createserve"
    ]) {
      // A file holding U+212A or U+017F always passes for a literal with k or s ("CreateServer" has an s).
      const want = body.toLowerCase().includes("createserver") || /[\u212a\u017f]/.test(body)
      for (let pad = 0; pad < 8; pad++) {
        // A buffer whose byteOffset is `pad` (the workers' buffer is aligned; others are copied first).
        const backing = Buffer.alloc(body.length * 2 + 16)
        const bytes = backing.subarray(pad, pad + Buffer.byteLength(body))
        bytes.write(body)
        expect(`${body} @${pad}: ${m.mayMatchBytes(bytes)}`).toBe(`${body} @${pad}: ${want}`)
      }
    }
  })

  test("a case-insensitive literal finds its lines on the folded bytes, unless the file holds U+212A or U+017F for its k or s", () => {
    const m = buildMatcher("Sk", { literal: true, ignoreCase: true })
    expect(m.foldedLines?.(Buffer.from("a\nxSKy\nsk\r\nS k\n"), 100)).toEqual({ hits: [1, 2], text: ["xSKy", "sk"] })
    expect(m.foldedLines?.(Buffer.from("a\n\u017fK\n"), 100)).toBeUndefined()
    expect(scanBytes(Buffer.from("a\n\u017fK\n"), m, 0, 100)?.hits).toEqual([1])
  })

  test("a file with U+212A KELVIN SIGN or U+017F LONG S still passes for a literal with k or s", () => {
    const m = buildMatcher("ks", { literal: true, ignoreCase: true })
    expect(m.mayMatchBytes(Buffer.from("\u212a\u017f"))).toBe(true)
    expect(m.test("\u212a\u017f")).toBe(true)
    expect(m.mayMatchBytes(Buffer.from("k s kx sk"))).toBe(false)
  })
})
