/**
 * Process tool overhead: one `shell` call (`true`) through the runner vs a bare Bun.spawn, unconfined
 * and inside the bubblewrap sandbox (vs a bare Bun.spawn of the same bwrap line), a `git` call vs bare
 * git, and the runner's peak RSS while a command floods 1 GB of output (FLOOD=0 skips it). Not a test.
 * Each tool row prints its ratio to the same spawn line (issue 15 goal: ≤ 1.5×).
 */
import { Effect } from "effect"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { baseEnvironment, createProcessRunner } from "../src/tools/ProcessRunner.ts"
import { bwrapArgs, probeBwrap } from "../src/tools/Sandbox.ts"
import { makeGitTool } from "../src/tools/git.ts"
import { makeShellTool } from "../src/tools/shell.ts"
import { createToolContext } from "../test/support/workspace.ts"

const RUNS = Number(process.env["RUNS"] ?? 50)
const root = realpathSync(mkdtempSync(join(tmpdir(), "bench-shell-")))
const runner = createProcessRunner()
const shell = makeShellTool(runner)
const git = makeGitTool(runner)
const workspace = { root, readOnly: [root], outDir: root }
const { ctx } = createToolContext(workspace, 600_000)

const median = async (f: () => Promise<unknown>): Promise<number> => {
  await f() // warm-up
  const times: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now()
    await f()
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)] ?? Number.NaN
}
const bare = async (argv: Array<string>) => {
  const p = Bun.spawn(argv, { cwd: root, stdout: "pipe", stderr: "pipe", stdin: "ignore" })
  await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
}
const row = (label: string, ms: number) => console.log(`${label.padEnd(50)} ${ms.toFixed(2).padStart(8)} ms`)

Bun.spawnSync(["git", "init", "-q"], { cwd: root })
const ratio = (label: string, ours: number, reference: number, refLabel: string) =>
  console.log(`${label.padEnd(50)} ${ours.toFixed(2).padStart(8)} ms  ${(ours / reference).toFixed(2)}× ${refLabel} (goal ≤ 1.5×)`)
console.log(`median of ${RUNS} runs each, ${process.platform} ${process.arch}, Bun ${Bun.version}`)
const bareTrue = await median(() => bare(["bash", "-c", "true"]))
row("bare Bun.spawn(['bash','-c','true'])", bareTrue)
ratio("shell tool { command: 'true' } via runner", await median(() => Effect.runPromise(shell.execute({ command: "true" }).pipe(Effect.provide(ctx)))), bareTrue, "bare Bun.spawn")
const sandbox = probeBwrap()
if (sandbox._tag === "Bwrap") {
  const boxed = createProcessRunner({ sandbox: { bwrap: sandbox.bwrap, workspace: workspace } })
  const line = [sandbox.bwrap, ...bwrapArgs(workspace, baseEnvironment(root, "bench"), root), "/usr/bin/bash", "-c", "true"]
  const bareBox = await median(() => bare(line))
  row("bare Bun.spawn(<same bwrap line> bash -c true)", bareBox)
  ratio("shell tool { command: 'true' } in the sandbox", await median(() => Effect.runPromise(makeShellTool(boxed).execute({ command: "true" }).pipe(Effect.provide(ctx)))), bareBox, "the bare bwrap line")
  const gitLine = [sandbox.bwrap, ...bwrapArgs(workspace, baseEnvironment(root, "bench"), root), "/usr/bin/git", "rev-parse", "--is-inside-work-tree"]
  const bareBoxGit = await median(() => bare(gitLine))
  row("bare Bun.spawn(<same bwrap line> git rev-parse)", bareBoxGit)
  ratio("git tool rev-parse in the sandbox", await median(() => Effect.runPromise(makeGitTool(boxed).execute({ args: ["rev-parse", "--is-inside-work-tree"] }).pipe(Effect.provide(ctx)))), bareBoxGit, "the bare bwrap git line")
  await Effect.runPromise(boxed.killAll)
} else console.log(`sandbox rows skipped: ${sandbox._tag === "Unavailable" ? sandbox.reason : "off"}`)
const bareGit = await median(() => bare(["git", "rev-parse", "--is-inside-work-tree"]))
row("bare git rev-parse --is-inside-work-tree", bareGit)
ratio("git tool rev-parse --is-inside-work-tree", await median(() => Effect.runPromise(git.execute({ args: ["rev-parse", "--is-inside-work-tree"] }).pipe(Effect.provide(ctx)))), bareGit, "bare git")
if (process.env["FLOOD"] === "0") {
  await Effect.runPromise(runner.killAll)
  rmSync(root, { recursive: true, force: true })
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
console.log(`1 GiB flood (yes | head -c 1G): ${((performance.now() - t) / 1000).toFixed(1)} s, RSS before ${mb(before)}, peak ${mb(peak)} (+${mb(peak - before)}), result ${flood.text.length} chars`)
await Effect.runPromise(runner.killAll)
rmSync(root, { recursive: true, force: true })
