/**
 * The grep tool (this thread walks, search workers match) vs ripgrep over this project's node_modules:
 * same patterns, same file set (rg told -uu, --no-follow, skip .git, files over 4 MB).
 * What a job sees: the first grep call of a fresh job (a job child of the bytecode bundle started ahead
 * as the worker's pool starts it, given its envelope once its warm-up is done; the call's
 * `kintsugi.tool` span) against a fresh `rg` process, median of FRESH_RUNS jobs each, in interleaved
 * rounds (FRESH=0 skips it). And later calls in one warm process (WARM=0 skips them): median of 5 runs each after a discarded one, wall time
 * and CPU time (every thread of this process for ours, the rg process's user + system), which a machine
 * busy with other work inflates far less than wall time. Not a test: `bun bench/grep.ts`.
 * BEFORE=<another checkout> adds a row per pattern for that checkout's grep tool over the same files,
 * timed the same way in a child process (its own Effect and workers), just after ours; and to the fresh
 * jobs a column for that checkout's own bundle, a job child of it after each of ours.
 * Each fresh-job case ends with a `ROW grep-first-call-<n>` line for bench/load.ts.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"

const RUNS = 5
/** Fresh jobs per pattern (each a new job child). */
const FRESH_RUNS = Number(process.env["FRESH_RUNS"] ?? 5)
const before = process.env["BEFORE"]
/** Set in the child that times BEFORE's grep tool: the case to time, the checkout, the files. */
const childCase = process.env["GREP_BENCH_CASE"]
const tree = process.env["GREP_BENCH_TREE"] ?? path.join(import.meta.dir, "..")
const { Effect } = (await import(Bun.resolveSync("effect", tree))) as typeof import("effect")
const { grep } = (await import(path.join(tree, "src", "tools", "grep.ts"))) as typeof import("../src/tools/grep.ts")
const { createToolContext } = (await import(
  path.join(tree, "test", "support", "workspace.ts")
)) as typeof import("../test/support/workspace.ts")

const nodeModules = fs.realpathSync.native(process.env["GREP_BENCH_DIR"] ?? path.join(import.meta.dir, "..", "node_modules"))
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

/** One run: its matches and, for a child process, the CPU time it used (ms). */
interface Run {
  readonly matches: number
  readonly childCpuMs?: number
}

const timeIt = async (f: () => Promise<Run>): Promise<{ ms: number; cpuMs: number; matches: number }> => {
  let { matches } = await f() // warm-up: page cache and JIT
  const times: Array<number> = []
  const cpu: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    const before = process.cpuUsage()
    const run = await f()
    const used = process.cpuUsage(before)
    times.push(performance.now() - start)
    cpu.push(run.childCpuMs ?? (used.user + used.system) / 1000)
    matches = run.matches
  }
  return { ms: median(times), cpuMs: median(cpu), matches }
}

const ours = async (c: Case): Promise<Run> => {
  const out = await Effect.runPromise(Effect.provide(grep.execute({ ...c.args, limit: 1000 }), ctx))
  if (out.text.includes("[match limit")) throw new Error(`"${c.label}" hit the match limit; pick a rarer pattern`)
  // The tool shows at most 50 KB; when it cut, its note carries the full count.
  const total = /showing \d+ of (\d+) matching lines/.exec(out.text)?.[1]
  return { matches: total !== undefined ? Number(total) : out.text.split("\n").filter((l) => /^.+?:\d+: /.test(l)).length }
}

const rgArgs = (c: Case, threads?: number): Array<string> => [
  "-uu", // --no-ignore --hidden: no .gitignore filtering, hidden files included, binary files still skipped
  "--no-follow",
  "--no-config",
  "--max-filesize",
  "4M",
  "-g",
  "!.git",
  "--no-heading",
  "-n",
  ...(c.args.literal === true ? ["-F"] : []),
  ...(c.args.ignoreCase === true ? ["-i"] : []),
  ...(threads === undefined ? [] : ["-j", String(threads)]),
  "-e",
  c.args.pattern,
  nodeModules
]

const rg = (c: Case, threads?: number) => async (): Promise<Run> => {
  const r = Bun.spawnSync(["rg", ...rgArgs(c, threads)], { stdout: "pipe", stderr: "ignore" })
  const usage = r.resourceUsage
  return {
    matches: r.stdout
      .toString()
      .split("\n")
      .filter((l) => l.length > 0).length,
    childCpuMs: usage === undefined ? Number.NaN : Number(usage.cpuTime.user + usage.cpuTime.system) / 1000
  }
}

/** BEFORE's grep tool on case `i`, timed by this file run as a child with that checkout's modules. */
const timeBefore = (checkout: string, i: number): { ms: number; cpuMs: number; matches: number } => {
  const child = Bun.spawnSync(["bun", import.meta.path], {
    env: { ...process.env, GREP_BENCH_CASE: String(i), GREP_BENCH_TREE: checkout, GREP_BENCH_DIR: nodeModules },
    stderr: "inherit"
  })
  return JSON.parse(child.stdout.toString()) as { ms: number; cpuMs: number; matches: number }
}

if (childCase !== undefined) {
  const c = cases[Number(childCase)]
  if (c === undefined) throw new Error(`no case ${childCase}`)
  console.log(JSON.stringify(await timeIt(() => ours(c))))
  fs.rmSync(outDir, { recursive: true, force: true })
  process.exit(0)
}

const hasRg = Bun.which("rg") !== null
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")
console.log(
  `grep benchmark over ${nodeModules} (median of ${RUNS} runs after one warm-up, ${os.cpus().length} CPUs, load average ${load()})`
)
if (before !== undefined) console.log(`"before" rows: the grep tool of ${before}`)
if (!hasRg) console.log("ripgrep (rg) is not installed: the rg columns are skipped (Debian: apt-get install -y ripgrep)")
const header = [
  "pattern",
  "kintsugi ms",
  ...(hasRg ? ["rg ms", "ratio", "rg -j1 ms", "ratio -j1"] : []),
  "cpu ms",
  ...(hasRg ? ["rg cpu", "cpu ratio", "rg -j1 cpu", "cpu ratio -j1"] : []),
  "matches (ours/rg)"
]
const rows: Array<Array<string>> = [header]
for (const [i, c] of (process.env["WARM"] === "0" ? [] : cases).entries()) {
  const a = await timeIt(() => ours(c))
  const p = before === undefined ? undefined : timeBefore(before, i)
  if (!hasRg) {
    rows.push([c.label, a.ms.toFixed(0), a.cpuMs.toFixed(0), String(a.matches)])
    if (p !== undefined) rows.push(["  before", p.ms.toFixed(0), p.cpuMs.toFixed(0), String(p.matches)])
    continue
  }
  const b = await timeIt(rg(c))
  const b1 = await timeIt(rg(c, 1))
  const row = (label: string, x: { ms: number; cpuMs: number; matches: number }) => [
    label,
    x.ms.toFixed(0),
    b.ms.toFixed(0),
    `${(x.ms / b.ms).toFixed(1)}x`,
    b1.ms.toFixed(0),
    `${(x.ms / b1.ms).toFixed(1)}x`,
    x.cpuMs.toFixed(0),
    b.cpuMs.toFixed(0),
    `${(x.cpuMs / b.cpuMs).toFixed(1)}x`,
    b1.cpuMs.toFixed(0),
    `${(x.cpuMs / b1.cpuMs).toFixed(1)}x`,
    `${x.matches}/${b.matches}`
  ]
  rows.push(row(c.label, a))
  if (p !== undefined) rows.push(row("  before", p))
}
const printTable = (table: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = (table[0] ?? []).map((_, i) => Math.max(...table.map((r) => (r[i] ?? "").length)))
  for (const r of table) console.log(r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  "))
}

/** The first grep call of a fresh job against a fresh rg, per case: FRESH_RUNS interleaved rounds. */
const freshJobs = async (): Promise<void> => {
  const { childEnvironment, runJobProcess, spawnJobChild } = await import("../src/worker/child/JobProcess.ts")
  const { ensureBundle, sourceKey } = await import("../src/worker/child/jobChildBundle.ts")
  const { startOpenAIServer } = await import("../src/testing/scriptedServers.ts")
  const { toolResultsOf } = await import("../src/testing/toolResultsOf.ts")
  const { WORKER_NAMES } = await import("../src/tools/grepPool.ts")
  // A private cache: a bundle in a shared one is removed once someone builds one of newer sources.
  const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-bench-bundle-"))
  const entry = await ensureBundle(cacheDir, sourceKey())
  // BEFORE's bundle, built by that checkout's own builder from its own sources.
  const beforeEntry =
    before === undefined
      ? undefined
      : await (async () => {
          const b = (await import(
            path.join(before, "src", "worker", "child", "jobChildBundle.ts")
          )) as typeof import("../src/worker/child/jobChildBundle.ts")
          return b.ensureBundle(path.join(cacheDir, "before"), b.sourceKey())
        })()
  const env = await Effect.runPromise(childEnvironment)
  const cpuTicks = (pid: number): number => {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1")
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return Number(f[11]) + Number(f[12])
  }
  const threads = (pid: number): Array<string> =>
    fs.readdirSync(`/proc/${pid}/task`).map((t) => {
      try {
        return fs.readFileSync(`/proc/${pid}/task/${t}/comm`, "latin1").trim()
      } catch {
        return ""
      }
    })
  /**
   * A job child of a bundle started ahead, as the worker's pool starts it, once its warm-up is over:
   * grep's workers up (this checkout's) and no CPU used for 300 ms.
   */
  const settledChild = async (from: string) => {
    const spawned = spawnJobChild(from, env, true)
    for (;;) {
      const ticks = cpuTicks(spawned.child.pid)
      await Bun.sleep(300)
      const workers = from !== entry || threads(spawned.child.pid).includes(WORKER_NAMES.bytecode)
      if (workers && cpuTicks(spawned.child.pid) === ticks) return spawned
    }
  }
  const workspace = { root: path.dirname(nodeModules), readOnly: [nodeModules], outDir }
  /** One fresh job whose model asks for one grep call: the call's span duration and its matches. */
  const firstCall = async (c: Case, from: string): Promise<{ ms: number; cpuMs: number; matches: number }> => {
    const server = await startOpenAIServer([
      { kind: "turn", toolCalls: [{ name: "grep", arguments: { ...c.args, limit: 1000 } }] },
      { kind: "turn", text: "done" }
    ])
    try {
      const child = await settledChild(from)
      let ms = Number.NaN
      let cpuMs = Number.NaN
      const ticks = cpuTicks(child.child.pid)
      const envelope = {
        job: {
          agent: { id: "bench", version: 1, instructions: "Search.", tools: ["grep"] },
          task: "Search.",
          model: { provider: "bench", id: "bench-model" },
          workspace,
          limits: { timeoutSec: 120, idleTimeoutSec: 60, maxTurns: 4 },
          metadata: { trigger: "bench" }
        },
        providers: [
          {
            id: "bench",
            api: "openai-completions",
            baseUrl: server.baseUrl,
            apiKey: "bench",
            models: [
              { id: "bench-model", contextWindow: 128_000, maxTokens: 1024, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } }
            ]
          }
        ]
      }
      const settlement = await Effect.runPromise(
        runJobProcess(
          envelope as Parameters<typeof runJobProcess>[0],
          {
            onEvent: (e) =>
              Effect.sync(() => {
                if (e.type === "span" && e.name === "kintsugi.tool" && e.attributes["tool"] === "grep") {
                  ms = e.durationMs
                  // Clock ticks of 10 ms: every thread of the child from its envelope to the call's end.
                  cpuMs = (cpuTicks(child.child.pid) - ticks) * 10
                }
              }),
            abortRequested: Effect.succeed(false),
            log: () => Effect.void
          },
          Effect.succeed(child)
        )
      )
      if (settlement.status !== "completed") throw new Error(`the bench job ended ${settlement.status}`)
      const request = server.requests[1]
      const text = request === undefined ? "" : (toolResultsOf(request)[0] ?? "")
      const total = /showing \d+ of (\d+) matching lines/.exec(text)?.[1]
      return {
        ms,
        cpuMs,
        matches: total !== undefined ? Number(total) : text.split("\n").filter((l) => /^.+?:\d+: /.test(l)).length
      }
    } finally {
      await server.stop()
    }
  }
  console.log(
    `\nfirst grep call of a fresh job (a bundle's job child started ahead, after its warm-up) vs a fresh rg, median of ${FRESH_RUNS} rounds, load average ${load()}`
  )
  const table: Array<Array<string>> = [
    [
      "pattern",
      "first call ms",
      ...(hasRg ? ["rg ms", "ratio (goal ≤ 1.5)"] : []),
      ...(beforeEntry === undefined ? [] : ["BEFORE ms", ...(hasRg ? ["BEFORE ratio"] : [])]),
      "cpu ms (job start + call)",
      ...(hasRg ? ["rg cpu", "cpu ratio"] : []),
      ...(beforeEntry === undefined ? [] : ["BEFORE cpu"]),
      "matches (ours/rg)"
    ]
  ]
  for (const c of cases) {
    const ours: Array<number> = []
    const theirs: Array<number> = []
    const old: Array<number> = []
    const oursCpu: Array<number> = []
    const theirCpu: Array<number> = []
    const oldCpu: Array<number> = []
    let matches = ""
    for (let i = 0; i < FRESH_RUNS; i++) {
      const a = await firstCall(c, entry)
      ours.push(a.ms)
      oursCpu.push(a.cpuMs)
      if (beforeEntry !== undefined) {
        const b = await firstCall(c, beforeEntry)
        old.push(b.ms)
        oldCpu.push(b.cpuMs)
      }
      if (hasRg) {
        const t = performance.now()
        const r = await rg(c)()
        theirs.push(performance.now() - t)
        theirCpu.push(r.childCpuMs ?? Number.NaN)
        matches = `${a.matches}/${r.matches}`
      } else matches = String(a.matches)
    }
    const [o, r, b] = [median(ours), median(theirs), median(old)]
    console.log(
      `ROW grep-first-call-${cases.indexOf(c)} case=${c.label.replaceAll(/\s+/g, "_")} ms=${o.toFixed(1)}` +
        (hasRg ? ` rgMs=${r.toFixed(1)} ratio=${(o / r).toFixed(3)}` : "") +
        (beforeEntry === undefined ? "" : ` beforeMs=${b.toFixed(1)}`)
    )
    table.push([
      c.label,
      o.toFixed(0),
      ...(hasRg ? [r.toFixed(0), `${(o / r).toFixed(2)}x`] : []),
      ...(beforeEntry === undefined ? [] : [b.toFixed(0), ...(hasRg ? [`${(b / r).toFixed(2)}x`] : [])]),
      median(oursCpu).toFixed(0),
      ...(hasRg ? [median(theirCpu).toFixed(0), `${(median(oursCpu) / median(theirCpu)).toFixed(2)}x`] : []),
      ...(beforeEntry === undefined ? [] : [median(oldCpu).toFixed(0)]),
      matches
    ])
  }
  printTable(table)
  fs.rmSync(cacheDir, { recursive: true, force: true })
}

console.log("\nlater calls in one warm process:")
printTable(rows)
if (process.env["FRESH"] !== "0" && process.platform === "linux") await freshJobs()
console.log(`load average at the end: ${load()}`)
fs.rmSync(outDir, { recursive: true, force: true })
