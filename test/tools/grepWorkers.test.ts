/**
 * grep's search workers: a catastrophic pattern is stopped at the per-call limit while the job's
 * thread keeps running, results keep walk order and limits across many files and workers, workers
 * refuse what the confinement rules refuse, the native-regex translation agrees with RE2, and the
 * worker starts from a bytecode bundle.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { RE2JS } from "re2js"
import { grep } from "../../src/tools/grep.ts"
import { startSearch, warmUpWorkers, type FileResult } from "../../src/tools/grepPool.ts"
import { buildMatcher, nativeSource, warmUpScan } from "../../src/tools/grepScan.ts"
import { createToolContext, createWorkspaceTree, runToolError, runToolText, type WorkspaceTree } from "../support/workspace.ts"

setDefaultTimeout(60_000)

let t: WorkspaceTree
beforeAll(async () => {
  const many: Record<string, string> = {}
  for (let i = 0; i < 200; i++) many[`ro/many/f${String(i).padStart(3, "0")}.txt`] = "hit A\nmiss\nhit B\n"
  t = await createWorkspaceTree(
    { ...many, "ro/plain.txt": "needle one\n", "ro/long.txt": `${"a".repeat(1_000_000)}!\n` },
    { outsideFiles: { "canary.txt": "needle CANARY-77 outside\n" } }
  )
  fs.symlinkSync(path.join(t.outside, "canary.txt"), path.join(t.ro, "link.txt"))
})
afterAll(() => t.cleanup())

describe("grep per-call limit", () => {
  test("(a+)+$ against a long line fails within the per-call limit while a 10 ms heartbeat keeps firing", async () => {
    // 2 s left in the job: the call's limit is 1 s.
    const { ctx } = createToolContext(t.workspace, 2000)
    let beats = 0
    let maxGap = 0
    let last = performance.now()
    const heartbeat = setInterval(() => {
      const now = performance.now()
      maxGap = Math.max(maxGap, now - last)
      last = now
      beats++
    }, 10)
    let message: string
    try {
      message = await runToolError(grep, { pattern: "(a+)+$", path: "ro/long.txt" }, ctx)
    } finally {
      clearInterval(heartbeat)
    }
    expect(message).toContain("1 s limit")
    expect(message).toContain("ro/long.txt")
    // The pattern never ran on this thread: the heartbeat fired all along (a blocked thread shows one
    // gap as long as the whole call's 1 s limit, and a handful of beats; a loaded machine stays below).
    expect(beats).toBeGreaterThanOrEqual(20)
    expect(maxGap).toBeLessThan(1000)
    // The stuck worker was terminated; the next call gets a fresh one.
    expect(await runToolText(grep, { pattern: "needle", path: "ro/plain.txt" }, ctx)).toBe("ro/plain.txt:1: needle one")
  })
})

describe("grep across workers", () => {
  test("200 files: walk order, the match limit and context exactly as a sequential scan", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const plain = await runToolText(grep, { pattern: "^hit", path: "ro/many", limit: 51 }, ctx)
    const expected: Array<string> = []
    for (let i = 0; expected.length < 51; i++) {
      const f = `ro/many/f${String(i).padStart(3, "0")}.txt`
      expected.push(`${f}:1: hit A`)
      if (expected.length < 51) expected.push(`${f}:3: hit B`)
    }
    expect(plain).toBe([...expected, "[match limit 51 reached; narrow the pattern, path or glob, or raise limit]"].join("\n"))
    expect(events).toHaveLength(51)
    events.length = 0
    const withContext = await runToolText(grep, { pattern: "^hit", path: "ro/many", limit: 51, context: 1 }, ctx)
    const lines = withContext.split("\n")
    // 25 whole files (3 lines + "--"), then file 25 with only its first hit and one line of context.
    expect(lines.slice(0, 4)).toEqual(["ro/many/f000.txt:1: hit A", "ro/many/f000.txt-2- miss", "ro/many/f000.txt:3: hit B", "--"])
    expect(lines.slice(-4)).toEqual([
      "--",
      "ro/many/f025.txt:1: hit A",
      "ro/many/f025.txt-2- miss",
      "[match limit 51 reached; narrow the pattern, path or glob, or raise limit]"
    ])
    expect(events).toHaveLength(26)
    expect(events[25]).toEqual({ type: "source.read", tool: "grep", path: "ro/many/f025.txt", firstLine: 1, lastLine: 2 })
  })

  test("concurrent calls: one ending at its limit does not cut the other short", async () => {
    const { ctx } = createToolContext(t.workspace)
    const [full, first] = await Promise.all([
      runToolText(grep, { pattern: "hit B", literal: true, path: "ro/many", limit: 1000 }, ctx),
      runToolText(grep, { pattern: "hit A", literal: true, path: "ro/many", limit: 1 }, ctx)
    ])
    expect(full.split("\n")).toHaveLength(200)
    expect(full.split("\n")[199]).toBe("ro/many/f199.txt:3: hit B")
    expect(first.split("\n")[0]).toBe("ro/many/f000.txt:1: hit A")
  })

  test("workers that ran their warm-up answer every kind of search as before it", async () => {
    const { ctx } = createToolContext(t.workspace)
    const searches = [
      { pattern: "hit B", literal: true, path: "ro/many" },
      { pattern: "HIT b", literal: true, ignoreCase: true, path: "ro/many" },
      { pattern: "^hit\\s+A$", path: "ro/many" },
      { pattern: "[AB]$", path: "ro/many", context: 1 }
    ]
    const cold = await Promise.all(searches.map((args) => runToolText(grep, { ...args, limit: 1000 }, ctx)))
    expect(() => warmUpScan()).not.toThrow()
    await warmUpWorkers()
    const warm = await Promise.all(searches.map((args) => runToolText(grep, { ...args, limit: 1000 }, ctx)))
    expect(warm).toEqual(cold)
    expect(warm[1]?.split("\n")).toHaveLength(200)
  })

  test("a symlink to a file outside is neither followed by the walk nor opened by a worker", async () => {
    const { ctx } = createToolContext(t.workspace)
    const text = await runToolText(grep, { pattern: "needle", path: "ro", glob: "*.txt" }, ctx)
    expect(text).toBe("ro/plain.txt:1: needle one")
    expect(await runToolError(grep, { pattern: "needle", path: "ro/link.txt" }, ctx)).toContain("outside")
  })

  test("workers refuse a symlink, a path outside the root and a FIFO handed to them directly", async () => {
    const fifo = path.join(t.ro, "fifo")
    Bun.spawnSync(["mkfifo", fifo])
    const files = [path.join(t.ro, "link.txt"), path.join(t.outside, "canary.txt"), fifo, path.join(t.ro, "plain.txt")]
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

// ---------------------------------------------------------------------------------------------------

const re2 = (p: string, ignoreCase: boolean) => RE2JS.compile(p, RE2JS.MULTILINE | (ignoreCase ? RE2JS.CASE_INSENSITIVE : 0))

describe("native regex translation", () => {
  test("engines: the bench patterns run natively, nested repetition and RE2-only syntax on re2js", () => {
    const engine = (pattern: string, ignoreCase = false, literal = false) => buildMatcher(pattern, { literal, ignoreCase }).engine
    expect(engine("createServer", false, true)).toBe("literal")
    expect(engine("CREATESERVER", true, true)).toBe("native")
    expect(engine("function\\s+\\w+Async")).toBe("native")
    expect(engine("[0-9]{3}-[0-9]{4}-[0-9]{4}")).toBe("native")
    expect(engine("^(a+)+$")).toBe("native") // flattened to ^a+$
    for (const p of ["(a|aa)+b", "(a+b+)*c", "(?i)x", "\\pL", "[[:alpha:]]", "\\x{41}", "a\\z", "(?P<n>x)"]) expect(engine(p)).toBe("re2")
    expect(engine("\\w+", true)).toBe("re2") // JS folds U+017F and U+212A into \w under iu
    expect(engine("é", true)).toBe("re2")
  })

  test("random patterns: every line RE2 matches, and only those, at the same index", () => {
    let seed = 42
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const pick = <A>(xs: ReadonlyArray<A>): A => xs[rnd(xs.length)] as A
    const atoms = [
      "a",
      "b",
      "A",
      "0",
      "-",
      ".",
      "\\d",
      "\\w",
      "\\s",
      "\\S",
      "\\W",
      "\\D",
      "[ab]",
      "[^a]",
      "[a-c]",
      "[]a]",
      "é",
      "\\.",
      "\\-",
      "{",
      "}",
      " ",
      "\\t"
    ]
    const quants = ["", "", "", "*", "+", "?", "{1,2}", "*?", "+?", "{2}"]
    const gen = (depth: number): string => {
      let s = ""
      const n = 1 + rnd(4)
      for (let i = 0; i < n; i++) {
        const r = rnd(10)
        if (r === 0 && depth < 2) s += `(${gen(depth + 1)})${pick(quants)}`
        else if (r === 1 && depth < 2) s += `(?:${gen(depth + 1)}|${gen(depth + 1)})`
        else if (r === 2) s += pick(["^", "$", "\\b", "\\B"])
        else s += pick(atoms) + pick(quants)
      }
      return s
    }
    const alphabet = [
      "a",
      "b",
      "A",
      "B",
      "0",
      "7",
      " ",
      "\t",
      "-",
      ".",
      "_",
      "é",
      "É",
      "\u212a",
      "\u017f",
      "k",
      "s",
      "S",
      "\r",
      "😀",
      "{",
      "}",
      "]",
      "\u2028"
    ]
    const lines = Array.from({ length: 80 }, () => Array.from({ length: rnd(12) }, () => pick(alphabet)).join(""))
    let compared = 0
    for (let k = 0; k < 500; k++) {
      const pattern = gen(0)
      for (const ignoreCase of [false, true]) {
        let re: RE2JS
        try {
          re = re2(pattern, ignoreCase)
        } catch {
          continue
        }
        if (nativeSource(pattern, ignoreCase) === undefined) continue
        const m = buildMatcher(pattern, { literal: false, ignoreCase })
        expect(m.engine).toBe("native")
        const text = lines.join("\n")
        let anyLine = false
        for (const line of lines) {
          const want = re.test(line)
          const ctx = `${JSON.stringify(pattern)} ${ignoreCase ? "i" : ""} on ${JSON.stringify(line)}`
          expect(`${ctx}: ${m.test(line)}`).toBe(`${ctx}: ${want}`)
          if (want) {
            anyLine = true
            const rm = re.matcher(line)
            expect(`${ctx}: ${m.indexIn(line)}`).toBe(`${ctx}: ${rm.find() ? rm.start() : -1}`)
          }
          compared++
        }
        if (anyLine) {
          // The whole-file prefilters never reject a file with a matching line (LF and CRLF files).
          for (const t2 of [text, lines.join("\r\n")]) {
            expect(m.mayMatchBytes(Buffer.from(t2))).toBe(true)
            expect(m.mayMatchText(t2)).toBe(true)
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(10_000)
  })

  test("case folding of ASCII letters agrees with RE2 on every BMP character", () => {
    for (const pattern of ["[a-z]", "[^a-z]", "k", "S", "[A-Z0-9_]"]) {
      const js = new RegExp(nativeSource(pattern, true) ?? "(?!)", "iu")
      const re = re2(pattern, true)
      const differ: Array<string> = []
      for (let cp = 0; cp <= 0xffff; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue
        const ch = String.fromCharCode(cp)
        if (js.test(ch) !== re.test(ch)) differ.push(`U+${cp.toString(16)}`)
      }
      expect(`${pattern}: ${differ.join(" ")}`).toBe(`${pattern}: `)
    }
  })
})

// ---------------------------------------------------------------------------------------------------

describe("grep from a Bun bytecode bundle", () => {
  test("the worker runs from the bundle's own grepWorker.js, or from the sources when the bundle lacks it", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-grep-bundle-"))
    try {
      const src = path.join(import.meta.dir, "..", "..", "src", "tools")
      const support = path.join(import.meta.dir, "..", "support", "workspace.ts")
      const entry = path.join(dir, "entry.ts")
      fs.writeFileSync(
        entry,
        [
          `import { Effect } from ${JSON.stringify(Bun.resolveSync("effect", import.meta.dir))}`,
          `import { grep } from ${JSON.stringify(path.join(src, "grep.ts"))}`,
          `import { grepWorkerUrl } from ${JSON.stringify(path.join(src, "grepPool.ts"))}`,
          `import { createToolContext } from ${JSON.stringify(support)}`,
          `const ws = JSON.parse(process.argv[2] ?? "{}")`,
          `const { ctx } = createToolContext(ws)`,
          // CommonJS (what bytecode needs without --compile): no top-level await.
          `void Effect.runPromise(Effect.provide(grep.execute({ pattern: "needle", path: "ro/plain.txt" }), ctx)).then((out) =>`,
          `  console.log(JSON.stringify({ url: grepWorkerUrl(), text: out.text })))`
        ].join("\n")
      )
      const run = async (entrypoints: Array<string>, out: string) => {
        const build = await Bun.build({ entrypoints, outdir: out, target: "bun", format: "cjs", bytecode: true, naming: "[name].[ext]" })
        expect(build.logs.map(String)).toEqual([])
        expect(build.success).toBe(true)
        const child = Bun.spawnSync(["bun", path.join(out, "entry.js"), JSON.stringify(t.workspace)], { cwd: os.tmpdir() })
        expect(child.stderr.toString()).toBe("")
        return JSON.parse(child.stdout.toString()) as { url: string; text: string }
      }
      const withWorker = await run([entry, path.join(src, "grepWorker.ts")], path.join(dir, "a"))
      expect(withWorker).toEqual({ url: pathToFileURL(path.join(dir, "a", "grepWorker.js")).href, text: "ro/plain.txt:1: needle one" })
      const withoutWorker = await run([entry], path.join(dir, "b"))
      expect(withoutWorker).toEqual({ url: pathToFileURL(path.join(src, "grepWorker.ts")).href, text: "ro/plain.txt:1: needle one" })
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)
})
