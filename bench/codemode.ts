/**
 * codemode against direct tool calls: a job whose scripted model (zero latency, 127.0.0.1) calls `read`
 * 100 times, beside a job whose model makes one codemode call running the same 100 reads; model calls,
 * bytes sent to the model and wall time. Then what one QuickJS sandbox costs to create.
 */
import { newQuickJSWASMModule, RELEASE_SYNC } from "quickjs-emscripten"
import { DEFAULT_SANDBOX_LIMITS, runScript } from "../src/tools/codemode/QuickJsSandbox.ts"
import { newQuickJsInstance } from "../src/tools/codemode/quickJsModule.ts"
import { createJobSpec } from "../test/support/jobChild.ts"
import { startOpenAIServer, type Step } from "../test/support/scriptedServers.ts"
import { createReadFixture, readRoundTrips, timeKernelJob } from "./readRoundTrips.ts"

const CALLS = 100
const RUNS = 5
const N = 200
const dirs = createReadFixture()

const direct = (): Array<Step> => readRoundTrips(CALLS)
const viaCodemode = (): Array<Step> => [
  {
    kind: "turn",
    toolCalls: [
      {
        name: "codemode",
        arguments: {
          script:
            `let n = 0\nfor (let i = 0; i < ${CALLS}; i++) n += (await tools.read({ path: "src/a.ts", offset: i + 1, limit: 20 })).length\n` +
            `print("read ${CALLS} ranges, " + n + " characters")`
        }
      }
    ]
  },
  { kind: "turn", text: "done" }
]

interface Run {
  readonly ms: number
  readonly modelCalls: number
  readonly bytesToModel: number
}

/** One in-process kernel job over `steps` with only `tool` granted. */
const runJob = async (steps: Array<Step>, tool: string): Promise<Run> => {
  const server = await startOpenAIServer(steps)
  const job = createJobSpec(dirs, { agent: { tools: [tool] }, limits: { maxTurns: 0, idleTimeoutSec: 0, timeoutSec: 300 } })
  const { outcome, ms } = await timeKernelJob(server, job)
  const bytesToModel = server.requests.reduce((sum, r) => sum + JSON.stringify(r.body).length, 0)
  const modelCalls = server.requests.length
  await server.stop()
  if (outcome._tag !== "Completed") throw new Error(`bench job failed: ${outcome.message}`)
  return { ms, modelCalls, bytesToModel }
}

const median = (xs: ReadonlyArray<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const timeN = async (n: number, f: () => unknown): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await f()
    times.push(performance.now() - t)
  }
  return median(times)
}

// Before any job: the first instance pays the wasm compile.
const t0 = performance.now()
await newQuickJsInstance(DEFAULT_SANDBOX_LIMITS.memoryBytes)
const firstLoad = performance.now() - t0

// Alternate and take medians: the first run of either pays JIT warm-up.
const directRuns: Array<Run> = []
const codemodeRuns: Array<Run> = []
for (let r = 0; r < RUNS; r++) {
  directRuns.push(await runJob(direct(), "read"))
  codemodeRuns.push(await runJob(viaCodemode(), "codemode"))
}
dirs.cleanup()

const instanceMs = await timeN(N, async () => {
  const { module } = await newQuickJsInstance(DEFAULT_SANDBOX_LIMITS.memoryBytes)
  const rt = module.newRuntime()
  rt.newContext().dispose()
  rt.dispose()
})
const shared = await newQuickJSWASMModule(RELEASE_SYNC)
const bareMs = await timeN(N, () => {
  const rt = shared.newRuntime()
  rt.newContext().dispose()
  rt.dispose()
})
const noop = async () => ({ ok: true, text: "" }) as const
const wholeMs = await timeN(N, () => runScript({ script: "print(1)", functions: ["read"], call: noop, limits: DEFAULT_SANDBOX_LIMITS }))

const d = { ms: median(directRuns.map((r) => r.ms)), calls: directRuns[0]?.modelCalls ?? 0, bytes: directRuns[0]?.bytesToModel ?? 0 }
const c = { ms: median(codemodeRuns.map((r) => r.ms)), calls: codemodeRuns[0]?.modelCalls ?? 0, bytes: codemodeRuns[0]?.bytesToModel ?? 0 }
const kb = (b: number) => `${(b / 1024).toFixed(0)} KB`
console.log(`${CALLS} reads, median of ${RUNS} in-process jobs each (scripted model, no latency):`)
console.log(`                          model calls   sent to the model   wall time`)
console.log(`  direct tool calls       ${String(d.calls).padStart(11)}   ${kb(d.bytes).padStart(17)}   ${d.ms.toFixed(0).padStart(6)} ms`)
console.log(`  one codemode script     ${String(c.calls).padStart(11)}   ${kb(c.bytes).padStart(17)}   ${c.ms.toFixed(0).padStart(6)} ms`)
console.log(
  `  saved                   ${String(d.calls - c.calls).padStart(11)}   ${kb(d.bytes - c.bytes).padStart(17)}   ${(d.ms - c.ms).toFixed(0).padStart(6)} ms`
)
console.log(`QuickJS, median of ${N}:`)
console.log(`  first load (compile the wasm, once per process):             ${firstLoad.toFixed(1)} ms`)
console.log(`  fresh instance (own 80 MB-max memory) + runtime + context:   ${instanceMs.toFixed(2)} ms`)
console.log(`  runtime + context on one shared instance (reference):        ${bareMs.toFixed(2)} ms`)
console.log(`  whole sandboxed run of print(1) (instance, limits, API, eval, dispose): ${wholeMs.toFixed(2)} ms`)
