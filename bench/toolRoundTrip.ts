/**
 * Kernel overhead per tool round trip: a job whose scripted model (zero latency, 127.0.0.1) calls
 * `read` 100 times, against the same 101 model calls made directly with pi-ai and no kernel, with the
 * same growing transcript (the same tool definitions, and tool results of the same text). The
 * difference per call is what the kernel adds (events, validation, confinement, the read itself).
 */
import type { Message } from "@earendil-works/pi-ai"
import { Effect } from "effect"
import { createProcessRunner } from "../src/tools/ProcessRunner.ts"
import { createKernelTools } from "../src/tools/registry.ts"
import { createJobSpec } from "../test/support/jobChild.ts"
import { createOpenAIPiModels } from "../test/support/piModels.ts"
import { startOpenAIServer, type Step } from "../test/support/scriptedServers.ts"
import { createReadFixture, FIXTURE_LINES, readRoundTrips, timeKernelJob } from "./readRoundTrips.ts"

const CALLS = 100
const lines = FIXTURE_LINES
const dirs = createReadFixture()
const script = (): Array<Step> => readRoundTrips(CALLS)

const job = createJobSpec(dirs, { limits: { maxTurns: 0, idleTimeoutSec: 0, timeoutSec: 300 } })

/** Kernel: one job, 100 read round trips. */
const kernelRun = async (): Promise<number> => {
  const kernelServer = await startOpenAIServer(script())
  const { outcome, ms: kernelMs } = await timeKernelJob(kernelServer, job)
  await kernelServer.stop()
  if (outcome._tag !== "Completed") throw new Error(`bench job failed: ${outcome.message}`)
  return kernelMs
}

/** Reference: the same model calls through pi-ai alone. */
const rawRun = async (): Promise<number> => {
  const rawServer = await startOpenAIServer(script())
  const { models, model } = createOpenAIPiModels(rawServer.baseUrl)
  const kernelTools = await Effect.runPromise(
    createKernelTools(["read", "ls", "grep", "find", "write", "edit", "shell", "git"], createProcessRunner())
  )
  const tools = kernelTools.map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters
  }))
  const fileLines = lines.split("\n")
  const messages: Array<Message> = [{ role: "user", content: job.task, timestamp: Date.now() }]
  const t1 = performance.now()
  for (let i = 0; i <= CALLS; i++) {
    const msg = await models.completeSimple(model, { systemPrompt: job.agent.instructions, messages, tools }, { cacheRetention: "none" })
    messages.push(msg)
    for (const b of msg.content) {
      if (b.type !== "toolCall") continue
      const text = fileLines.slice(i, i + 20).join("\n")
      messages.push({
        role: "toolResult",
        toolCallId: b.id,
        toolName: b.name,
        content: [{ type: "text", text }],
        isError: false,
        timestamp: Date.now()
      })
    }
  }
  const rawMs = performance.now() - t1
  await rawServer.stop()
  return rawMs
}

// Alternate and take medians: the first run of either pays JIT warm-up.
const RUNS = 5
const kernelTimes: Array<number> = []
const rawTimes: Array<number> = []
for (let r = 0; r < RUNS; r++) {
  kernelTimes.push(await kernelRun())
  rawTimes.push(await rawRun())
}
dirs.cleanup()
const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const kernelMs = median(kernelTimes)
const rawMs = median(rawTimes)

console.log(`median of ${RUNS} runs each`)
console.log(
  `kernel job, ${CALLS} read round trips:   ${kernelMs.toFixed(0)} ms  (${(kernelMs / (CALLS + 1)).toFixed(2)} ms per model call)`
)
console.log(
  `pi-ai alone, same transcript, ${CALLS + 1} calls:   ${rawMs.toFixed(0)} ms  (${(rawMs / (CALLS + 1)).toFixed(2)} ms per model call)`
)
console.log(`kernel overhead per tool round trip:  ${((kernelMs - rawMs) / CALLS).toFixed(2)} ms`)
