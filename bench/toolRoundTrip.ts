/**
 * Kernel overhead per tool round trip: a job whose scripted model (zero latency, 127.0.0.1) calls
 * `read` 100 times, against the same 101 model calls made directly with pi-ai and no kernel. The
 * difference per call is what the kernel adds (events, validation, confinement, the read itself).
 */
import { Effect, Stream } from "effect"
import { AgentRuntime } from "../src/contract/AgentRuntime.ts"
import { KernelLive } from "../src/kernel/Kernel.ts"
import { createJob, createJobDirs, createProvider } from "../test/support/jobChild.ts"
import { createOpenAIPiModels } from "../test/support/piModels.ts"
import { startOpenAIServer, type Step } from "../test/support/scriptedServers.ts"

const CALLS = 100
const lines = Array.from({ length: 200 }, (_, i) => `line ${i}: export const v${i} = ${i}`).join("\n")
const dirs = createJobDirs({ "a.ts": lines })
const script = (): Array<Step> => [
  ...Array.from({ length: CALLS }, (_, i): Step => ({
    kind: "turn",
    toolCalls: [{ name: "read", arguments: { path: "src/a.ts", offset: i + 1, limit: 20 } }]
  })),
  { kind: "turn", text: "done" }
]

// Kernel: one job, 100 read round trips.
const kernelServer = await startOpenAIServer(script())
const job = createJob(dirs, { limits: { maxTurns: 0, idleTimeoutSec: 0, timeoutSec: 300 } })
const t0 = performance.now()
const outcome = await Effect.runPromise(
  Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const handle = yield* runtime.start(job)
    yield* Stream.runDrain(handle.events)
    return yield* handle.result
  }).pipe(Effect.provide(KernelLive({ providers: [createProvider(kernelServer, "openai-completions")] })))
)
const kernelMs = performance.now() - t0
await kernelServer.stop()
if (outcome._tag !== "Completed") throw new Error(`bench job failed: ${outcome.message}`)

// Reference: the same model calls through pi-ai alone.
const rawServer = await startOpenAIServer(script())
const { models, model } = createOpenAIPiModels(rawServer.baseUrl)
const t1 = performance.now()
for (let i = 0; i <= CALLS; i++) {
  await models.completeSimple(model, { systemPrompt: "x", messages: [{ role: "user", content: "go", timestamp: Date.now() }] }, { cacheRetention: "none" })
}
const rawMs = performance.now() - t1
await rawServer.stop()
dirs.cleanup()

console.log(`kernel job, ${CALLS} read round trips:   ${kernelMs.toFixed(0)} ms  (${(kernelMs / (CALLS + 1)).toFixed(2)} ms per model call)`)
console.log(`pi-ai alone, ${CALLS + 1} model calls:   ${rawMs.toFixed(0)} ms  (${(rawMs / (CALLS + 1)).toFixed(2)} ms per model call)`)
console.log(`kernel overhead per tool round trip:  ${((kernelMs - rawMs) / CALLS).toFixed(2)} ms`)
