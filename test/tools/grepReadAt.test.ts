/**
 * grep's fast paths: workers open files relative to a directory descriptor verified once (openat,
 * O_NOFOLLOW) and refuse whatever the per-file checks refuse; only the lines holding a whole-text
 * match candidate are tested, with exactly the answer of testing every line; the case-insensitive byte
 * prefilter answers the same for any alignment of its input.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import path from "node:path"
import { closeQuietly, openDirSyncChecked, readFileAtSyncChecked, type Scratch } from "../../src/tools/confinementSync.ts"
import { startSearch, type FileResult } from "../../src/tools/grepPool.ts"
import { buildMatcher, scanBytes, type LineMatcher } from "../../src/tools/grepScan.ts"
import { createWorkspaceTree, type WorkspaceTree } from "../support/workspace.ts"

setDefaultTimeout(60_000)

const onLinux = process.platform === "linux"

let t: WorkspaceTree
beforeAll(async () => {
  t = await createWorkspaceTree(
    { "ro/plain.txt": "needle one\n", "ro/d/x.txt": "needle in d\n", "ro/bin.dat": "needle\u0000binary", "ro/big.txt": "needle ".repeat(200) },
    { outsideFiles: { "canary.txt": "needle CANARY-91 outside\n", "sub/secret.txt": "needle CANARY-92 deep\n", "d/x.txt": "needle CANARY-93 swapped\n" } }
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
    for (const dir of [path.join(t.ro, "linkdir"), path.join(t.ro, "linkdir", "sub"), t.outside, path.join(t.ro, "plain.txt"), `${t.ro}-evil`]) {
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
      for (const name of ["link.txt", "fifo", "d", "linkdir", "..", ".", "", "../ro/plain.txt", "linkdir/canary.txt", "missing.txt", "plain.txt\u0000x"]) {
        expect(`${JSON.stringify(name)}: ${read(name)}`).toBe(`${JSON.stringify(name)}: undefined`)
      }
      expect(readFileAtSyncChecked(dir, "big.txt", 100, scratch)).toBe("too-large")
      expect(readFileAtSyncChecked(dir, "bin.dat", 1 << 20, scratch, (head) => head.includes(0))).toBe("skipped")
    } finally {
      closeQuietly(dir.fd)
    }
  })

  test("a worker refuses a path through a symlinked directory, and a directory swapped for a symlink after the walk", async () => {
    const swapped = path.join(t.ro, "d")
    const files = [path.join(t.ro, "linkdir", "sub", "secret.txt"), path.join(t.ro, "linkdir", "canary.txt"), path.join(swapped, "x.txt"), path.join(t.ro, "plain.txt")]
    // The walk saw ro/d/x.txt; before a worker opens it, ro/d becomes a symlink to a directory outside.
    fs.rmSync(swapped, { recursive: true })
    fs.symlinkSync(path.join(t.outside, "d"), swapped)
    const results: Array<FileResult> = []
    const search = startSearch(
      { pattern: "needle", literal: true, ignoreCase: false, context: 0, limit: 100, maxBytes: 1 << 20, root: t.ro },
      { onFile: (_, r) => results.push(r) > 0, deadline: performance.now() + 30_000, stallMs: 15_000, signal: new AbortController().signal, progress: () => {} }
    )
    for (const f of files) search.add(f)
    expect(await search.finish()).toEqual({ kind: "done" })
    expect(results.slice(0, 3)).toEqual(["unreadable", "unreadable", "unreadable"])
    expect(JSON.stringify(results)).not.toContain("CANARY")
    expect(results[3]).toMatchObject({ hits: [0], hitText: ["needle one"] })
  })
})

// ---------------------------------------------------------------------------------------------------

/** The same matcher without its whole-text candidate search: every line is tested. */
const everyLine = (m: LineMatcher): LineMatcher => {
  const { nextCandidate: _, ...rest } = m
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
    const texts: Array<string> = ["", "\n", "\n\n", "a", "a\n", "a\r\n", "\r\n", "needle", "x\nneedle\r\n\r\nneedle\n"]
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
      ["\\bab\\b", { literal: false, ignoreCase: false }]
    ]
    let compared = 0
    let withHits = 0
    for (const [pattern, opts] of patterns) {
      const m = buildMatcher(pattern, opts)
      expect(`${pattern} ${m.engine}: ${m.nextCandidate !== undefined}`).toBe(`${pattern} ${m.engine}: true`)
      for (const text of texts) {
        const bytes = Buffer.from(text, "utf8")
        for (const [context, limit] of [[0, 1000], [0, 1], [2, 1000], [1, 2]] as const) {
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

  test("re2js patterns test every line", () => {
    expect(buildMatcher("(a|aa)+b", { literal: false, ignoreCase: false }).nextCandidate).toBeUndefined()
  })
})

describe("the case-insensitive byte prefilter", () => {
  test("answers the same at every alignment, with the literal in the 4-byte words or the tail", () => {
    const m = buildMatcher("CreateServer", { literal: true, ignoreCase: true })
    for (const body of ["xx createSERVER", "createserver", "CREATESERVE", "createserve r", "ab\u212aé createserver", "\u017f createserve"]) {
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

  test("a file with U+212A KELVIN SIGN or U+017F LONG S still passes for a literal with k or s", () => {
    const m = buildMatcher("ks", { literal: true, ignoreCase: true })
    expect(m.mayMatchBytes(Buffer.from("\u212a\u017f"))).toBe(true)
    expect(m.test("\u212a\u017f")).toBe(true)
    expect(m.mayMatchBytes(Buffer.from("k s kx sk"))).toBe(false)
  })
})
