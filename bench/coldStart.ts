/**
 * Job child start: spawn → `job.started` and spawn → the terminal event (a whole one-turn
 * job against a scripted model server), medians of RUNS interleaved rounds, for
 *   - the child from the sources (`bun src/cli.ts run-job`), with the transpiler cache warm and empty;
 *   - the same child as the Bun bytecode bundle the worker runs (src/worker/child/jobChildBundle.ts), and the
 *     same bundle's JS without its .jsc beside it: how much the bytecode saves (were the .jsc rejected,
 *     the two rows would be alike);
 *   - a child started ahead by the worker's pool (JobChildren), once it is loaded and its warm-up is
 *     over (its CPU time stands still): envelope written → event;
 *   - a bare `bun -e` process (spawn → first byte), writing with `process.stdout.write` (the reference
 *     whose ratios the rows print) and with `fs.writeSync` as the job child writes: the
 *     first loads Node's streams (the job child never does), the second is the floor any Bun child pays;
 *   - the decode floor (bench/decodeFloor/, built as the job child is): the child's own entry (exit
 *     guard, non-dumpable, stdin) loading only the contract's decoders instead of the kernel, then
 *     `job.started`. A lower bound: the real child also runs the refusal checks (workspace, job roots,
 *     model, sandbox answer) before `job.started`; no split of the bundle goes below it.
 * Goals: ≤ 60 ms cold, ≤ 10 ms from the warm pool. BEFORE=<another checkout> adds its source child, its
 * bytecode bundle, and its bundle started ahead (`run-job --ahead`, settled the same way), in the same rounds;
 * its children get this checkout's environment (`childEnv`: its JIT settings included), and this checkout's
 * bundle built by the same plain `bun build` line, so the two bundles compare like for like.
 */
import { Effect, Exit, Scope } from "effect"
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { runJobArgs } from "../src/jobChild/args.ts"
import { probeBwrap, SANDBOX_PROBED_ENV } from "../src/tools/Sandbox.ts"
import { makeJobChildren } from "../src/worker/child/JobChildren.ts"
import { buildJobChild } from "../src/worker/child/jobChildBuild.ts"
import { ensureBundle, jobChildCacheDir, sourceKey } from "../src/worker/child/jobChildBundle.ts"
import { childEnv, createEnvelope, createJob, createJobDirs, createProvider, startJobChild } from "../test/support/jobChild.ts"
import { startOpenAIServer, type Step } from "../test/support/scriptedServers.ts"

const RUNS = Number(process.env["RUNS"] ?? 11)
const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

const steps: Array<Step> = Array.from({ length: 14 * RUNS + 8 }, () => ({ kind: "turn", text: "ok" }))
const server = await startOpenAIServer(steps)
const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
/** Every temporary directory of the run, removed at exit, a failed one's too. */
const temps: Array<string> = []
const tempDir = (prefix: string): string => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  temps.push(dir)
  return dir
}
process.on("exit", () => {
  dirs.cleanup()
  for (const dir of temps) rmSync(dir, { recursive: true, force: true })
})
const envelope = createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")])
const cacheDir = jobChildCacheDir(join(tmpdir(), "kintsugi-bench-data"))
// A private copy: a build of newer sources (another process, or the pool below) removes older bundles from the cache.
const bundleDir = tempDir("kintsugi-bench-bundle-")
const built = await ensureBundle(cacheDir, sourceKey())
cpSync(dirname(built), bundleDir, { recursive: true })
const bundle = join(bundleDir, basename(built))
/** A copy of the bundle's directory without its .jsc files (the SDK bundles' too): Bun parses the JS. */
const noBytecodeDir = tempDir("kintsugi-bench-nojsc-")
const noBytecode = join(noBytecodeDir, basename(bundle))
cpSync(dirname(bundle), noBytecodeDir, { recursive: true, filter: (src) => !src.endsWith(".jsc") })
/** The decode floor's bundle, built by the job child's build (the same options and plugins). */
const floorDir = tempDir("kintsugi-bench-floor-")
const floorProblems = await buildJobChild(floorDir, join(import.meta.dir, "decodeFloor", "entry.ts"))
if (floorProblems.length > 0) throw new Error(`the decode floor's bundle did not build: ${floorProblems.join("; ")}`)
const floorEntry = join(floorDir, "entry.js")
const emptyCache = () => tempDir("kintsugi-bench-tcache-")

interface Timing {
  readonly started: number
  readonly ended: number
  /** The child's CPU time (user + system, every thread) for the whole job: the machine's load disturbs it less than wall time. */
  readonly cpu?: number
}

/** user + system CPU ms of an exited child. */
const cpuMs = (proc: Bun.Subprocess): number => {
  const usage = proc.resourceUsage()
  return usage === undefined ? NaN : Number(usage.cpuTime.user + usage.cpuTime.system) / 1000
}

/** One child from spawn: ms to job.started and to its terminal event. */
const cold = async (entry?: string, env?: Record<string, string>): Promise<Timing> => {
  const t0 = performance.now()
  const run = startJobChild(envelope, { ...(entry === undefined ? {} : { entry }), ...(env === undefined ? {} : { env }) })
  await run.waitFor("job.started")
  const started = performance.now() - t0
  const { code, events } = await run.done
  const ended = performance.now() - t0
  const last = events.at(-1)
  if (code !== 0 || last?.type !== "job.completed")
    throw new Error(`job child ${entry ?? "from the sources"} exited ${code} after ${JSON.stringify(last)}`)
  return { started, ended, cpu: cpuMs(run.proc) }
}

/** The decode floor from spawn: ms to its job.started line. */
const decodeFloor = async (): Promise<number> => {
  const t0 = performance.now()
  const run = startJobChild(envelope, { entry: floorEntry })
  await run.waitFor("job.started")
  const started = performance.now() - t0
  const { code, stderr } = await run.done
  if (code !== 0) throw new Error(`the decode floor exited ${code}: ${stderr.slice(0, 500)}`)
  return started
}

/** Whether the waiting child armed its exit guard (a SIGTERM handler): it is loaded and reads stdin. */
const armed = (pid: number): boolean => {
  const hex = /SigCgt:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, "latin1"))?.[1]
  return hex !== undefined && (BigInt(`0x${hex}`) & (1n << 14n)) !== 0n
}

/** The CPU time (clock ticks, every thread) `pid` has used. */
const cpuTicks = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]?.split(" ") ?? []
  return Number(fields[11] ?? 0) + Number(fields[12] ?? 0)
}

/** Waits until `pid` is armed and its CPU time stood still for 300 ms (loaded, warm-up over): at most 20 s. */
const settled = async (pid: number): Promise<void> => {
  const until = performance.now() + 20_000
  while (!armed(pid) && performance.now() < until) await Bun.sleep(5)
  let last = cpuTicks(pid)
  let still = 0
  while (still < 300 && performance.now() < until) {
    await Bun.sleep(20)
    const now = cpuTicks(pid)
    still = now === last ? still + 20 : 0
    last = now
  }
}

/** Envelope written to a waiting child → job.started / job.completed. */
const timeWaiting = async (child: Bun.Subprocess<"pipe", "pipe", "pipe">): Promise<Timing> => {
  const t0 = performance.now()
  child.stdin.write(JSON.stringify(envelope))
  await child.stdin.end()
  let started = NaN
  let ended = NaN
  let text = ""
  const decoder = new TextDecoder()
  for await (const chunk of child.stdout) {
    text += decoder.decode(chunk, { stream: true })
    if (Number.isNaN(started) && text.includes('"type":"job.started"')) started = performance.now() - t0
    if (text.includes('"type":"job.completed"')) {
      ended = performance.now() - t0
      break
    }
  }
  await child.exited
  if (Number.isNaN(ended)) throw new Error(`the waiting child ended without job.completed: ${await new Response(child.stderr).text()}`)
  return { started, ended }
}

const scope = Effect.runSync(Scope.make())
// As the worker does (JobChildren.ts): the pool probes the sandbox once and gives its children the answer.
const probe = probeBwrap()
const sandboxProbed = probe._tag === "Bwrap" ? probe.bwrap : undefined
const probedEnv: Record<string, string> = sandboxProbed === undefined ? {} : { [SANDBOX_PROBED_ENV]: sandboxProbed }
const pool = await Effect.runPromise(
  Scope.extend(makeJobChildren({ cacheDir, bundle: true, prestart: "always", refillWhen: "started", sandboxProbed }), scope)
)

/** A job on the child the pool started ahead, once it settled: envelope written → job.started / terminal event. */
const warm = async (): Promise<Timing> => {
  let pid = await Effect.runPromise(pool.waiting)
  while (pid === undefined) {
    await Bun.sleep(5)
    pid = await Effect.runPromise(pool.waiting)
  }
  await settled(pid)
  const spawned = await Effect.runPromise(pool.take)
  const timing = await timeWaiting(spawned.child)
  spawned.onStarted?.()
  return timing
}

/** The same with a child of `entry` started ahead by hand (`bun <entry> run-job --ahead`), for another checkout's bundle. */
const warmOf = async (entry: string): Promise<Timing> => {
  const child = Bun.spawn(["bun", entry, ...runJobArgs(true)], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env: childEnv() })
  await settled(child.pid)
  return timeWaiting(child)
}

const bare = async (script = "process.stdout.write('x')"): Promise<number> => {
  const t0 = performance.now()
  const p = Bun.spawn(["bun", "-e", script], { stdout: "pipe" })
  await new Response(p.stdout).text()
  return performance.now() - t0
}

const before = process.env["BEFORE"]
/** The other checkout's bundle, built by its own `bun build` line (the one its jobChildBundle.ts runs). */
const beforeBundle = async (checkout: string): Promise<string> => {
  const out = tempDir("kintsugi-bench-before-")
  // The entry's place in that checkout's layout (src/jobChild/entry.ts, or src/jobChildEntry.ts before it).
  const entry = [join(checkout, "src", "jobChild", "entry.ts"), join(checkout, "src", "jobChildEntry.ts")].find((f) => existsSync(f)) ?? ""
  const build = Bun.spawn(["bun", "build", "--target=bun", "--format=cjs", "--bytecode", `--outdir=${out}`, entry], {
    cwd: checkout,
    stdout: "ignore",
    stderr: "inherit"
  })
  const bundled = join(out, basename(entry).replace(/\.ts$/, ".js"))
  if ((await build.exited) !== 0 || !existsSync(bundled)) throw new Error(`bun build of ${checkout} failed`)
  return bundled
}
const beforeEntry = before === undefined ? undefined : await beforeBundle(before)
/** This checkout built by the same plain line, so the two bundles compare like for like. */
const plainEntry = before === undefined ? undefined : await beforeBundle(join(import.meta.dir, ".."))
const rows = {
  source: [] as Array<Timing>,
  sourceEmpty: [] as Array<Timing>,
  bundle: [] as Array<Timing>,
  bundleSelf: [] as Array<Timing>,
  noBytecode: [] as Array<Timing>,
  warm: [] as Array<Timing>,
  warmHand: [] as Array<Timing>,
  before: [] as Array<Timing>,
  beforeBundle: [] as Array<Timing>,
  beforeWarm: [] as Array<Timing>,
  plainBundle: [] as Array<Timing>,
  plainWarm: [] as Array<Timing>,
  floor: [] as Array<number>,
  bare: [] as Array<number>,
  bareSync: [] as Array<number>
}
// One round of each, interleaved, so every row sees the same load.
for (let i = 0; i < RUNS; i++) {
  rows.source.push(await cold())
  rows.sourceEmpty.push(await cold(undefined, { BUN_RUNTIME_TRANSPILER_CACHE_PATH: emptyCache() }))
  rows.bundle.push(await cold(bundle, probedEnv))
  rows.bundleSelf.push(await cold(bundle))
  rows.noBytecode.push(await cold(noBytecode))
  rows.floor.push(await decodeFloor())
  rows.warm.push(await warm())
  rows.warmHand.push(await warmOf(bundle))
  if (before !== undefined) rows.before.push(await cold(join(before, "src", "cli.ts")))
  if (beforeEntry !== undefined) {
    rows.beforeBundle.push(await cold(beforeEntry))
    rows.beforeWarm.push(await warmOf(beforeEntry))
  }
  if (plainEntry !== undefined) {
    rows.plainBundle.push(await cold(plainEntry))
    rows.plainWarm.push(await warmOf(plainEntry))
  }
  rows.bare.push(await bare())
  rows.bareSync.push(await bare("require('node:fs').writeSync(1, 'x')"))
}
await Effect.runPromise(Scope.close(scope, Exit.void))
await server.stop()

const floor = median(rows.bare)
const ms = (n: number) => `${n.toFixed(1).padStart(7)} ms`
const line = (label: string, t: Array<Timing>, goal?: number) => {
  const s = median(t.map((x) => x.started))
  const e = median(t.map((x) => x.ended))
  const vsGoal = goal === undefined ? "" : `  ${(s / goal).toFixed(2)}× the ${goal} ms goal`
  const cpu = t.every((x) => x.cpu !== undefined) ? `  cpu ${median(t.map((x) => x.cpu ?? NaN)).toFixed(1)} ms` : ""
  console.log(`${label.padEnd(58)} ${ms(s)} ${ms(e)}   ${(s / floor).toFixed(2)}× bare bun${vsGoal}${cpu}`)
}
console.log(`job child start, medians of ${RUNS} interleaved rounds, ${process.platform} ${process.arch}, Bun ${Bun.version}`)
console.log(`${"".padEnd(58)} ${"→ started".padStart(10)} ${"→ completed".padStart(10)}`)
line("from the sources (src/cli.ts run-job), transpiler cache warm", rows.source, 60)
line("from the sources, transpiler cache empty (fresh HOME/image)", rows.sourceEmpty, 60)
line("bytecode bundle (what the worker starts), cold", rows.bundle, 60)
line("  the same bundle probing the sandbox itself (run-job by hand)", rows.bundleSelf, 60)
line("  the same bundle's JS without its .jsc (no bytecode)", rows.noBytecode)
const floorStarted = median(rows.floor)
console.log(
  `${"  the decode floor: its entry + the contract's decoders".padEnd(58)} ${ms(floorStarted)} ${"".padStart(10)}   ${(floorStarted / floor).toFixed(2)}× bare bun  ${(floorStarted / 60).toFixed(2)}× the 60 ms goal; the bundle is ${(median(rows.bundle.map((x) => x.started)) - floorStarted).toFixed(1)} ms over it`
)
line("started ahead by the pool (envelope written → event)", rows.warm, 10)
line("  the bundle started ahead by hand, as the other checkout's", rows.warmHand, 10)
if (before !== undefined) line(`the child of ${before}`, rows.before)
if (beforeEntry !== undefined) {
  line(`  its bytecode bundle, cold`, rows.beforeBundle, 60)
  line(`  its bundle waiting for its envelope (envelope → event)`, rows.beforeWarm, 10)
}
if (plainEntry !== undefined) {
  line("this checkout's bundle built by that same line, cold", rows.plainBundle, 60)
  line("  that bundle waiting for its envelope (envelope → event)", rows.plainWarm, 10)
}
/** after/before of two rows: wall time to job.started, and the child's CPU time for the whole job. */
const versus = (label: string, after: Array<Timing>, beforeRows: Array<Timing>) => {
  const wall = median(after.map((x) => x.started)) / median(beforeRows.map((x) => x.started))
  const cpu = median(after.map((x) => x.cpu ?? NaN)) / median(beforeRows.map((x) => x.cpu ?? NaN))
  console.log(`${label.padEnd(58)} wall ${wall.toFixed(2)}×, cpu ${cpu.toFixed(2)}× (this checkout / ${before})`)
}
if (before !== undefined) versus("after/before: the child from the sources", rows.source, rows.before)
if (beforeEntry !== undefined && plainEntry !== undefined)
  versus("after/before: the bundle built by the same line", rows.plainBundle, rows.beforeBundle)
console.log(`${"bare bun process (spawn → first byte)".padEnd(58)} ${ms(floor)}`)
const syncFloor = median(rows.bareSync)
console.log(
  `${"  the same writing with fs.writeSync (no Node streams)".padEnd(58)} ${ms(syncFloor)}   bundle cold = ${(median(rows.bundle.map((x) => x.started)) / syncFloor).toFixed(2)}× this, decode floor ${(floorStarted / syncFloor).toFixed(2)}×`
)
