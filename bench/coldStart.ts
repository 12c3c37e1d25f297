/**
 * Job child cold start: spawn `bun src/cli.ts run-job` → the `job.started` line on stdout, median of
 * 20 runs, printed next to a bare `bun -e` process start (the floor any Bun child pays).
 */
import { createEnvelope, createJob, createJobDirs, createProvider, startJobChild } from "../test/support/jobChild.ts"
import { startOpenAIServer, type Step } from "../test/support/scriptedServers.ts"

const RUNS = 20
const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

const steps: Array<Step> = Array.from({ length: RUNS }, () => ({ kind: "turn", text: "ok" }))
const server = await startOpenAIServer(steps)
const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
const envelope = createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")])

const child: Array<number> = []
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now()
  const run = startJobChild(envelope)
  await run.waitFor("job.started")
  child.push(performance.now() - t0)
  await run.done
}
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
console.log(`bare bun process (spawn → first byte),       median of ${RUNS}: ${median(bare).toFixed(1)} ms`)
console.log(`kintsugi's own start-up cost:                         ${(median(child) - median(bare)).toFixed(1)} ms`)
