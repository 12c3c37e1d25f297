/**
 * Process tool overhead: one `shell` call (`true`) through the runner vs a bare Bun.spawn, unconfined
 * and inside the bubblewrap sandbox (vs a bare Bun.spawn of the same bwrap line; bounded vs not), under
 * Landlock (vs a bare Bun start, its floor), a `git` call vs bare
 * git, and the runner's peak RSS while a command floods 1 GB of output (FLOOD=0 skips it). Not a test.
 * Each tool row prints its ratio to the same spawn line (goal: ≤ 1.5×); the unconfined rows
 * also to that spawn in a new session (`detached: true`), which the runner needs for its group kill.
 * BEFORE=<another checkout> adds that checkout's unconfined shell and git tools to the same rounds
 * (loaded with its own `effect`), so a change is compared under the same load. SHELL_ONLY=unconfined
 * runs only the unconfined `shell true` rows and ends with a `ROW shell-true` line for bench/load.ts.
 */
import { Effect } from "effect"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { baseEnvironment, createProcessRunner } from "../src/tools/ProcessRunner.ts"
import { DEFAULT_RESOURCES } from "../src/tools/jobResources.ts"
import { bwrapArgs, probeBwrap, probeLandlock } from "../src/tools/Sandbox.ts"
import { makeGitTool } from "../src/tools/git.ts"
import { makeShellTool } from "../src/tools/shell.ts"
import { createToolContext } from "../test/support/workspace.ts"

const RUNS = Number(process.env["RUNS"] ?? 50)
const WARMUP = Number(process.env["WARMUP"] ?? 5)
const root = realpathSync(mkdtempSync(join(tmpdir(), "bench-shell-")))
const jobTmp = realpathSync(mkdtempSync(join(tmpdir(), "bench-shell-tmp-")))
const runner = createProcessRunner()
const shell = makeShellTool(runner)
const git = makeGitTool(runner)
const workspace = { root, readOnly: [root], outDir: root }
const { ctx } = createToolContext(workspace, 600_000)

const middle = (times: Array<number>): number => times.sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? Number.NaN
/**
 * Medians of RUNS interleaved rounds (each function once per round, in order), after WARMUP rounds
 * (the JIT settles): on a shared machine the load moves between rounds, and every row sees the same moves.
 */
const medians = async (fs: ReadonlyArray<() => Promise<unknown>>): Promise<Array<number>> => {
  for (let i = 0; i < WARMUP; i++) for (const f of fs) await f()
  const times = fs.map((): Array<number> => [])
  for (let i = 0; i < RUNS; i++) {
    for (const [j, f] of fs.entries()) {
      const t = performance.now()
      await f()
      times[j]?.push(performance.now() - t)
    }
  }
  return times.map(middle)
}
const bare = async (argv: Array<string>, detached = false) => {
  const p = Bun.spawn(argv, { cwd: root, stdout: "pipe", stderr: "pipe", stdin: "ignore", detached })
  await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
}
const row = (label: string, ms: number) => console.log(`${label.padEnd(50)} ${ms.toFixed(2).padStart(8)} ms`)

Bun.spawnSync(["git", "init", "-q"], { cwd: root })
const ratio = (label: string, ours: number, reference: number, refLabel: string) =>
  console.log(`${label.padEnd(50)} ${ours.toFixed(2).padStart(8)} ms  ${(ours / reference).toFixed(2)}× ${refLabel} (goal ≤ 1.5×)`)
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")
console.log(`median of ${RUNS} interleaved rounds each, ${process.platform} ${process.arch}, Bun ${Bun.version}, load average ${load()}`)
const pair = async (refLabel: string, reference: () => Promise<unknown>, label: string, ours: () => Promise<unknown>, vs: string) => {
  const [r = Number.NaN, o = Number.NaN] = await medians([reference, ours])
  row(refLabel, r)
  ratio(label, o, r, vs)
}
/** Unconfined rows: the plain spawn, the same spawn in a new session (what the runner does: detached), the tool. */
const triple = async (refLabel: string, argv: Array<string>, label: string, ours: () => Promise<unknown>, vs: string) => {
  const [r = Number.NaN, d = Number.NaN, o = Number.NaN] = await medians([() => bare(argv), () => bare(argv, true), ours])
  row(refLabel, r)
  row(`  the same, detached (new session, as the runner)`, d)
  ratio(label, o, r, vs)
  console.log(`${"".padEnd(50)} ${"".padStart(8)}     ${(o / d).toFixed(2)}× the detached spawn`)
  return { bare: r, detached: d, tool: o }
}
const tool = (t: typeof shell, args: Record<string, unknown>) => () => Effect.runPromise(t.execute(args).pipe(Effect.provide(ctx)))
if (process.env["SHELL_ONLY"] === "unconfined") {
  const t = await triple(
    "bare Bun.spawn(['bash','-c','true'])",
    ["bash", "-c", "true"],
    "shell tool { command: 'true' } via runner",
    tool(shell, { command: "true" }),
    "bare Bun.spawn"
  )
  console.log(
    `ROW shell-true ms=${t.tool.toFixed(3)} bareMs=${t.bare.toFixed(3)} detachedMs=${t.detached.toFixed(3)} ratio=${(t.tool / t.bare).toFixed(3)} runs=${RUNS}`
  )
  console.log(`load average after the rounds: ${load()}`)
  await Effect.runPromise(runner.killAll)
  rmSync(root, { recursive: true, force: true })
  rmSync(jobTmp, { recursive: true, force: true })
  process.exit(0)
}
const beforeCheckout = process.env["BEFORE"]
if (beforeCheckout !== undefined) {
  // Every module from the other checkout, its own `effect` included: Effects of two copies do not mix.
  const from = (path: string) => import(join(beforeCheckout, path))
  const [{ Effect: E }, { createProcessRunner: oldRunner }, { makeShellTool: oldShell }, { makeGitTool: oldGit }, support] =
    await Promise.all([
      from("node_modules/effect"),
      from("src/tools/ProcessRunner.ts"),
      from("src/tools/shell.ts"),
      from("src/tools/git.ts"),
      from("test/support/workspace.ts")
    ])
  const oldCtx = support.createToolContext(workspace, 600_000).ctx
  const r = oldRunner()
  const old = (t: typeof shell, args: Record<string, unknown>) => () => E.runPromise(t.execute(args).pipe(E.provide(oldCtx)))
  const cases: ReadonlyArray<readonly [string, Array<string>, typeof shell, typeof shell, Record<string, unknown>]> = [
    ["shell { command: 'true' }", ["bash", "-c", "true"], shell, oldShell(r), { command: "true" }],
    [
      "git rev-parse --is-inside-work-tree",
      ["git", "rev-parse", "--is-inside-work-tree"],
      git,
      oldGit(r),
      { args: ["rev-parse", "--is-inside-work-tree"] }
    ]
  ]
  // The call right after the bare spawn pays more than the next one (up to 0.3 ms under load): both orders.
  for (const [label, argv, ours, theirs, args] of cases) {
    const [b = Number.NaN, o = Number.NaN, t = Number.NaN] = await medians([() => bare(argv), tool(ours, args), old(theirs, args)])
    const [b2 = Number.NaN, t2 = Number.NaN, o2 = Number.NaN] = await medians([() => bare(argv), old(theirs, args), tool(ours, args)])
    row(`bare ${argv.join(" ")} (two orders)`, (b + b2) / 2)
    ratio(`${label}, this checkout (1st, 2nd)`, (o + o2) / 2, (b + b2) / 2, `bare (${(o / b).toFixed(2)}×, ${(o2 / b2).toFixed(2)}×)`)
    ratio(`${label}, BEFORE (2nd, 1st)`, (t + t2) / 2, (b + b2) / 2, `bare (${(t / b).toFixed(2)}×, ${(t2 / b2).toFixed(2)}×)`)
  }
  await E.runPromise(r.killAll)
}
await triple(
  "bare Bun.spawn(['bash','-c','true'])",
  ["bash", "-c", "true"],
  "shell tool { command: 'true' } via runner",
  tool(shell, { command: "true" }),
  "bare Bun.spawn"
)
const sandbox = probeBwrap()
if (sandbox._tag === "Bwrap") {
  const boxed = createProcessRunner({ sandbox: { bwrap: sandbox.bwrap, workspace: workspace } })
  const line = [sandbox.bwrap, ...bwrapArgs(workspace, baseEnvironment(root, "bench"), root), "/usr/bin/bash", "-c", "true"]
  await pair(
    "bare Bun.spawn(<same bwrap line> bash -c true)",
    () => bare(line),
    "shell tool { command: 'true' } in the sandbox",
    tool(makeShellTool(boxed), { command: "true" }),
    "the bare bwrap line"
  )
  const gitLine = [
    sandbox.bwrap,
    ...bwrapArgs(workspace, baseEnvironment(root, "bench"), root),
    "/usr/bin/git",
    "rev-parse",
    "--is-inside-work-tree"
  ]
  await pair(
    "bare Bun.spawn(<same bwrap line> git rev-parse)",
    () => bare(gitLine),
    "git tool rev-parse in the sandbox",
    tool(makeGitTool(boxed), { args: ["rev-parse", "--is-inside-work-tree"] }),
    "the bare bwrap git line"
  )
  // The job's bounds: prlimit before bwrap, the tracker's watch, a private /tmp bound from disk.
  const bounded = createProcessRunner({
    sandbox: { bwrap: sandbox.bwrap, workspace },
    tmpDir: jobTmp,
    resources: DEFAULT_RESOURCES,
    outDir: root
  })
  await pair(
    "shell tool { command: 'true' } in the sandbox",
    tool(makeShellTool(boxed), { command: "true" }),
    "the same, bounded (prlimit, watch, job /tmp)",
    tool(makeShellTool(bounded), { command: "true" }),
    "unbounded"
  )
  await Effect.runPromise(Effect.zip(boxed.killAll, bounded.killAll))
} else console.log(`sandbox rows skipped: ${sandbox._tag === "Unavailable" ? sandbox.reason : "off"}`)
const landlock = probeLandlock()
if (landlock._tag === "Landlock") {
  // Landlock's floor is a Bun start (confineExec.ts confines itself, then execs prlimit and bash).
  const confined = createProcessRunner({
    landlock: { bun: landlock.bun, script: landlock.script, workspace },
    tmpDir: jobTmp,
    resources: DEFAULT_RESOURCES,
    outDir: root
  })
  const script = join(jobTmp, "one.js")
  await Bun.write(script, "process.exitCode = 0\n")
  const [bunStart = Number.NaN, ours = Number.NaN] = await medians([
    () => bare([process.execPath, script]),
    tool(makeShellTool(confined), { command: "true" })
  ])
  row("bare Bun.spawn([bun, <a one-line script>])", bunStart)
  ratio("shell tool { command: 'true' } under Landlock, bounded", ours, bunStart, "a bare Bun start")
  await Effect.runPromise(confined.killAll)
} else console.log(`Landlock rows skipped: ${landlock._tag === "Unavailable" ? landlock.reason : "off"}`)
await triple(
  "bare git rev-parse --is-inside-work-tree",
  ["git", "rev-parse", "--is-inside-work-tree"],
  "git tool rev-parse --is-inside-work-tree",
  tool(git, { args: ["rev-parse", "--is-inside-work-tree"] }),
  "bare git"
)
console.log(`load average after the rounds: ${load()}`)
if (process.env["FLOOD"] === "0") {
  await Effect.runPromise(runner.killAll)
  rmSync(root, { recursive: true, force: true })
  rmSync(jobTmp, { recursive: true, force: true })
  process.exit(0)
}

Bun.gc(true)
const before = process.memoryUsage().rss
let peak = before
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10)
const t = performance.now()
const flood = await Effect.runPromise(shell.execute({ command: "yes | head -c 1G", timeoutSec: 600 }).pipe(Effect.provide(ctx)))
clearInterval(sampler)
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`
console.log(
  `1 GiB flood (yes | head -c 1G): ${((performance.now() - t) / 1000).toFixed(1)} s, RSS before ${mb(before)}, peak ${mb(peak)} (+${mb(peak - before)}), result ${flood.text.length} chars`
)
await Effect.runPromise(runner.killAll)
rmSync(root, { recursive: true, force: true })
rmSync(jobTmp, { recursive: true, force: true })
