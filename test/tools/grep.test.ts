import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import path from "node:path"
import { Effect } from "effect"
import { RE2JS } from "re2js"
import { grep } from "../../src/tools/grep.ts"
import { compileMatcher, requiredLiterals } from "../../src/tools/grepMatcher.ts"
import { caseFolds } from "../../src/tools/grepScan.ts"
import { createToolContext, createWorkspaceTree, runToolError, runToolText, type WorkspaceTree } from "../support/workspace.ts"
import { within } from "../support/waitFor.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

let t: WorkspaceTree
beforeAll(async () => {
  t = await createWorkspaceTree({
    "ro/src/a.ts": "import x from 'y'\nexport const fooBar = 1\n// TODO: fix\nconst a.b = 2\n",
    "ro/src/b.js": "function fooBar() {}\nFOOBAR\n",
    "ro/src/deep/c.ts": "line1\nline2\nneedle here\nline4\nline5\nline6\nneedle again\nline8\n",
    "ro/docs/readme.md": "needle in docs\n",
    "ro/crlf.txt": "alpha end\r\nbeta\r\n",
    "ro/.git/config": "needle in git\n",
    "ro/node_modules/pkg/index.js": "needle in node_modules\n",
    "ro/bin.dat": "needle\u0000binary",
    "ro/many.txt": Array.from({ length: 300 }, (_, i) => `hit ${i + 1}`).join("\n"),
    "ro/wide.txt": `${"w".repeat(2000)}needle${"z".repeat(2000)}\n`,
    "ro/canary.txt": "CANARY-55 token\n"
  })
  fs.writeFileSync(path.join(t.ro, "big.txt"), Buffer.alloc(5 * 1024 * 1024, 0x61))
})
afterAll(() => t.cleanup())

describe("grep", () => {
  test("regex over the default directory, sorted, relative to the workspace root", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(grep, { pattern: "foo[A-Z]ar", path: "ro/src" }, ctx)).toBe(
      "ro/src/a.ts:2: export const fooBar = 1\nro/src/b.js:1: function fooBar() {}"
    )
  })

  test("literal mode does not interpret metacharacters; ignoreCase works in both modes", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(grep, { pattern: "a.b", literal: true, path: "ro/src" }, ctx)).toBe("ro/src/a.ts:4: const a.b = 2")
    expect(await runToolText(grep, { pattern: "foobar", literal: true, ignoreCase: true, path: "ro/src/b.js" }, ctx)).toBe(
      "ro/src/b.js:1: function fooBar() {}\nro/src/b.js:2: FOOBAR"
    )
    expect(await runToolText(grep, { pattern: "^FOO", ignoreCase: true, path: "ro/src" }, ctx)).toBe("ro/src/b.js:2: FOOBAR")
  })

  test("glob filters by file name at any depth, or by path with a slash", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(grep, { pattern: "needle", glob: "*.ts" }, ctx)).toBe(
      "ro/src/deep/c.ts:3: needle here\nro/src/deep/c.ts:7: needle again"
    )
    expect(await runToolText(grep, { pattern: "needle", glob: "docs/**/*.md" }, ctx)).toBe("ro/docs/readme.md:1: needle in docs")
  })

  test("skips .git, binary files and files over 4 MB, but searches node_modules", async () => {
    const { ctx } = createToolContext(t.workspace)
    const text = await runToolText(grep, { pattern: "needle", literal: true }, ctx)
    expect(text).not.toContain(".git")
    expect(text).not.toContain("bin.dat")
    expect(text).toContain("ro/node_modules/pkg/index.js:1: needle in node_modules")
    expect(text).toContain("[1 files over 4 MB skipped]")
  })

  test("context lines, merged blocks, separators and one source.read per block", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const one = await runToolText(grep, { pattern: "needle", path: "ro/src/deep/c.ts", context: 1 }, ctx)
    expect(one).toBe(
      [
        "ro/src/deep/c.ts-2- line2",
        "ro/src/deep/c.ts:3: needle here",
        "ro/src/deep/c.ts-4- line4",
        "--",
        "ro/src/deep/c.ts-6- line6",
        "ro/src/deep/c.ts:7: needle again",
        "ro/src/deep/c.ts-8- line8"
      ].join("\n")
    )
    expect(events).toEqual([
      { type: "source.read", tool: "grep", path: "ro/src/deep/c.ts", firstLine: 2, lastLine: 4 },
      { type: "source.read", tool: "grep", path: "ro/src/deep/c.ts", firstLine: 6, lastLine: 8 }
    ])
    events.length = 0
    await runToolText(grep, { pattern: "needle", path: "ro/src/deep/c.ts", context: 2 }, ctx)
    expect(events).toEqual([{ type: "source.read", tool: "grep", path: "ro/src/deep/c.ts", firstLine: 1, lastLine: 8 }])
  })

  test("stops at the match limit and says so", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const text = await runToolText(grep, { pattern: "^hit", path: "ro/many.txt" }, ctx)
    const lines = text.split("\n")
    expect(lines).toHaveLength(101)
    expect(lines[99]).toBe("ro/many.txt:100: hit 100")
    expect(lines[100]).toBe("[match limit 100 reached; narrow the pattern, path or glob, or raise limit]")
    // Adjacent matching lines form one contiguous range: one event.
    expect(events).toEqual([{ type: "source.read", tool: "grep", path: "ro/many.txt", firstLine: 1, lastLine: 100 }])
    const five = await runToolText(grep, { pattern: "hit", path: "ro/many.txt", limit: 5 }, ctx)
    expect(five.split("\n")).toHaveLength(6)
  })

  test("matches CRLF line ends with $ and shows long lines around the match", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(grep, { pattern: "end$", path: "ro/crlf.txt" }, ctx)).toBe("ro/crlf.txt:1: alpha end")
    const wide = await runToolText(grep, { pattern: "needle", path: "ro/wide.txt" }, ctx)
    expect(wide).toContain("needle")
    expect(wide.length).toBeLessThan(600)
  })

  test("no matches, bad regex and ReDoS-shaped patterns", async () => {
    const { ctx } = createToolContext(t.workspace)
    expect(await runToolText(grep, { pattern: "zzz-nothing", path: "ro/src" }, ctx)).toBe("No matches found.")
    expect(await runToolError(grep, { pattern: "(?=x)" }, ctx)).toContain("invalid regular expression")
    expect(await runToolError(grep, { pattern: "a(" }, ctx)).toContain("invalid regular expression")
    fs.writeFileSync(path.join(t.ro, "redos.txt"), `${"a".repeat(5000)}!\n`)
    // About 2^5000 steps for a backtracking engine: an answer at all is the linear-time engine.
    const answer = runToolText(grep, { pattern: "^(a+)+$", path: "ro/redos.txt" }, ctx)
    expect(await within(answer, { what: "grep's answer to a ReDoS-shaped pattern", timeoutMs: 20_000 })).toBe("No matches found.")
  })

  test("events name ranges only, never content", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    expect(await runToolText(grep, { pattern: "CANARY-55" }, ctx)).toContain("CANARY-55 token")
    expect(JSON.stringify(events)).not.toContain("CANARY")
    expect(events).toEqual([{ type: "source.read", tool: "grep", path: "ro/canary.txt", firstLine: 1, lastLine: 1 }])
  })

  test("reports progress while it runs", async () => {
    const { ctx, progressCalls } = createToolContext(t.workspace)
    await runToolText(grep, { pattern: "needle" }, ctx)
    expect(progressCalls()).toBeGreaterThan(0)
  })
})

describe("case-insensitive prefilter", () => {
  test.each([
    ["createserver", "x = http.CreateSERVER()"],
    ["quick", "QUIC\u212a"],
    ["ss", "\u017fS"],
    ["a_b", "A_B"]
  ])("%p never rejects %p, which RE2 matches", async (pattern, line) => {
    expect(RE2JS.compile(RE2JS.quote(pattern), RE2JS.CASE_INSENSITIVE).test(line)).toBe(true)
    for (const literal of [true, false]) {
      const m = await Effect.runPromise(compileMatcher(pattern, { literal, ignoreCase: true }))
      expect(m.mayMatchBytes(Buffer.from(`head\n${line}\ntail`))).toBe(true)
      expect(m.test(line)).toBe(true)
    }
  })

  test("the WebAssembly SIMD fold and the JavaScript one agree on every length, alignment and byte", () => {
    const { simd, words } = caseFolds()
    expect(simd).toBeDefined()
    if (simd === undefined) return
    const all = Buffer.alloc(70_000)
    for (let i = 0; i < all.length; i++) all[i] = (i * 7919 + (i >> 8)) & 0xff
    const ascii = Buffer.from(Array.from(all, (b) => b & 0x7f))
    for (const source of [all, ascii]) {
      for (const [start, end] of [
        [0, 0],
        [0, 1],
        [1, 17],
        [3, 64],
        [0, 4095],
        [2, 70_000],
        [0, 65_537]
      ] as const) {
        const bytes = source.subarray(start, end)
        const a = simd(bytes)
        const expected = Buffer.from(Array.from(bytes, (b) => b | 0x20))
        expect({ out: Buffer.from(a.out), high: a.high }).toEqual({ out: expected, high: bytes.some((b) => b >= 0x80) })
        const b = words(bytes)
        expect({ out: Buffer.from(b.out), high: b.high }).toEqual({ out: expected, high: bytes.some((b) => b >= 0x80) })
      }
    }
  })

  test("rejects files without the literal in any case", async () => {
    const m = await Effect.runPromise(compileMatcher("createServer", { literal: true, ignoreCase: true }))
    expect(m.mayMatchBytes(Buffer.from("create server\nCREATE_SERVER\n"))).toBe(false)
  })
})

describe("requiredLiterals", () => {
  test.each([
    ["createServer", ["createServer"]],
    ["function\\s+\\w+Async", ["function", "Async"]],
    ["ab+c", ["ab"]],
    ["abc?d", ["ab"]],
    ["foo.*barbaz", ["barbaz", "foo"]],
    ["a{0,3}bcd", ["bcd"]],
    ["\\.test\\.ts", [".test.ts"]],
    ["foo|bar", []],
    ["(?i)hello", []],
    ["[abc]de", ["de"]],
    ["x(yz)+q", []],
    ["\\x41BC", []]
  ])("%p -> %p", (pattern, expected) => {
    expect(requiredLiterals(pattern)).toEqual(expected)
  })

  test("never rejects a line that RE2 matches", async () => {
    const lines = ["createServer(", "ab", "abbbc", "acd", "barbaz", "ac", "xyzq", "foo bar", "fooo", "aaaabcd", "x.test.ts", "ABC"]
    const patterns = ["ab+c", "abc?d", "a{0,3}bcd", "fo+", "x(yz)*q", "[ab]c", "\\.test\\.ts$", "^a.c", "AB?C", "foo\\s?bar"]
    for (const p of patterns) {
      const m = await Effect.runPromise(compileMatcher(p, { literal: false, ignoreCase: false }))
      const re = RE2JS.compile(p)
      for (const line of lines) {
        if (re.test(line)) {
          expect(m.mayMatchBytes(Buffer.from(`zz\n${line}\n`))).toBe(true)
          expect(m.test(line)).toBe(true)
        }
      }
    }
  })
})
