/**
 * The grep tool (this thread walks, search workers match) vs ripgrep over this project's node_modules:
 * same patterns, same file set (rg told -uu, --no-follow, skip .git, files over 4 MB), median of 5 runs
 * each. Not a test: `bun bench/grep.ts`.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { Effect } from "effect"
import { grep } from "../src/tools/grep.ts"
import { createToolContext } from "../test/support/workspace.ts"

const RUNS = 5
const nodeModules = fs.realpathSync.native(path.join(import.meta.dir, "..", "node_modules"))
const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-bench-out-"))
const { ctx } = createToolContext({ root: path.dirname(nodeModules), readOnly: [nodeModules], outDir }, 600_000)

interface Case {
  readonly label: string
  readonly args: { pattern: string; literal?: boolean; ignoreCase?: boolean }
}
const cases: ReadonlyArray<Case> = [
  { label: "literal createServer", args: { pattern: "createServer", literal: true } },
  { label: "regex function\\s+\\w+Async", args: { pattern: "function\\s+\\w+Async" } },
  { label: "regex [0-9]{3}-[0-9]{4}-[0-9]{4}", args: { pattern: "[0-9]{3}-[0-9]{4}-[0-9]{4}" } },
  { label: "ignoreCase literal CREATESERVER", args: { pattern: "CREATESERVER", literal: true, ignoreCase: true } }
]

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

const timeIt = async (f: () => Promise<number>): Promise<{ ms: number; matches: number }> => {
  let matches = await f() // warm-up: page cache and JIT
  const times: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    matches = await f()
    times.push(performance.now() - start)
  }
  return { ms: median(times), matches }
}

const ours = async (c: Case): Promise<number> => {
  const out = await Effect.runPromise(Effect.provide(grep.execute({ ...c.args, limit: 1000 }), ctx))
  if (out.text.includes("[match limit")) throw new Error(`"${c.label}" hit the match limit; pick a rarer pattern`)
  // The tool shows at most 50 KB; when it cut, its note carries the full count.
  const total = /showing \d+ of (\d+) matching lines/.exec(out.text)?.[1]
  return total !== undefined ? Number(total) : out.text.split("\n").filter((l) => /^.+?:\d+: /.test(l)).length
}

const rgArgs = (c: Case, threads?: number): Array<string> => [
  "-uu", // --no-ignore --hidden: no .gitignore filtering, hidden files included, binary files still skipped
  "--no-follow",
  "--no-config",
  "--max-filesize", "4M",
  "-g", "!.git",
  "--no-heading", "-n",
  ...(c.args.literal === true ? ["-F"] : []),
  ...(c.args.ignoreCase === true ? ["-i"] : []),
  ...(threads === undefined ? [] : ["-j", String(threads)]),
  "-e", c.args.pattern,
  nodeModules
]

const rg = (c: Case, threads?: number) => async (): Promise<number> => {
  const r = Bun.spawnSync(["rg", ...rgArgs(c, threads)], { stdout: "pipe", stderr: "ignore" })
  return r.stdout.toString().split("\n").filter((l) => l.length > 0).length
}

const hasRg = Bun.which("rg") !== null
console.log(`grep benchmark over ${nodeModules} (median of ${RUNS} runs after one warm-up, ${os.cpus().length} CPUs)`)
if (!hasRg) console.log("ripgrep (rg) is not installed: the rg columns are skipped (Debian: apt-get install -y ripgrep)")
const header = ["pattern", "kintsugi ms", ...(hasRg ? ["rg ms", "ratio", "rg -j1 ms", "ratio -j1"] : []), "matches (ours/rg)"]
const rows: Array<Array<string>> = [header]
for (const c of cases) {
  const a = await timeIt(() => ours(c))
  if (!hasRg) {
    rows.push([c.label, a.ms.toFixed(0), String(a.matches)])
    continue
  }
  const b = await timeIt(rg(c))
  const b1 = await timeIt(rg(c, 1))
  rows.push([
    c.label,
    a.ms.toFixed(0),
    b.ms.toFixed(0),
    `${(a.ms / b.ms).toFixed(1)}x`,
    b1.ms.toFixed(0),
    `${(a.ms / b1.ms).toFixed(1)}x`,
    `${a.matches}/${b.matches}`
  ])
}
const widths = header.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)))
for (const r of rows) console.log(r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  "))
fs.rmSync(outDir, { recursive: true, force: true })
