/**
 * Job child cold start: spawn `bun src/cli.ts run-job` → the `job.started` line on stdout, median of
 * 20 runs, beside the same child bundled to Bun bytecode and a bare `bun -e` process start (the
 * floor any Bun child pays).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createEnvelope, createJob, createJobDirs, createProvider, startJobChild } from "../test/support/jobChild.ts"
import { startOpenAIServer, type Step } from "../test/support/scriptedServers.ts"

const RUNS = Number(process.env["RUNS"] ?? 20)
const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

const steps: Array<Step> = Array.from({ length: 3 * RUNS }, () => ({ kind: "turn", text: "ok" }))
const server = await startOpenAIServer(steps)
const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
const envelope = createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")])

const measure = async (entry?: string, runs = RUNS): Promise<Array<number>> => {
  const times: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    const run = startJobChild(envelope, entry === undefined ? {} : { entry })
    await run.waitFor("job.started")
    times.push(performance.now() - t0)
    const { code } = await run.done
    if (code !== 0) throw new Error(`job child exited ${code}`)
  }
  return times
}
// BEFORE=<another checkout>: its `src/cli.ts run-job` in alternation with ours, under the same load.
const before = process.env["BEFORE"]
const child: Array<number> = []
const other: Array<number> = []
for (let i = 0; i < RUNS; i++) {
  child.push(...(await measureOnce()))
  if (before !== undefined) other.push(...(await measureOnce(join(before, "src", "cli.ts"))))
}
function measureOnce(entry?: string) {
  return measure(entry, 1)
}
const outdir = mkdtempSync(join(tmpdir(), "kintsugi-bc-"))
const build = await Bun.build({
  entrypoints: [join(import.meta.dir, "..", "src", "jobChildEntry.ts")],
  target: "bun",
  format: "cjs",
  bytecode: true,
  outdir
})
if (!build.success) throw new Error(build.logs.join("\n"))
const bytecode = await measure(join(outdir, "jobChildEntry.js"))
rmSync(outdir, { recursive: true, force: true })
const bare: Array<number> = []
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now()
  const p = Bun.spawn(["bun", "-e", "process.stdout.write('x')"], { stdout: "pipe" })
  await new Response(p.stdout).text()
  bare.push(performance.now() - t0)
}
await server.stop()
dirs.cleanup()
console.log(`job child cold start (spawn → job.started), median of ${RUNS}: ${median(child).toFixed(1)} ms`)
if (before !== undefined) console.log(`the child of ${before},  median of ${RUNS}: ${median(other).toFixed(1)} ms`)
console.log(`same child bundled to Bun bytecode,          median of ${RUNS}: ${median(bytecode).toFixed(1)} ms`)
console.log(`bare bun process (spawn → first byte),       median of ${RUNS}: ${median(bare).toFixed(1)} ms`)
console.log(`kintsugi's own start-up cost:                         ${(median(child) - median(bare)).toFixed(1)} ms`)
