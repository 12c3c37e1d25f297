/** The fixture both round-trip benches share: a 200-line file and a model that reads it in `calls` turns, then answers. */
import { Effect, Stream } from "effect"
import { AgentRuntime, type JobOutcome } from "../src/contract/AgentRuntime.ts"
import type { JobSpec } from "../src/contract/JobSpec.ts"
import { KernelLive } from "../src/kernel/Kernel.ts"
import { createJobDirs, createProvider } from "../test/support/jobChild.ts"
import type { ScriptedServer, Step } from "../test/support/scriptedServers.ts"

export const FIXTURE_LINES = Array.from({ length: 200 }, (_, i) => `line ${i}: export const v${i} = ${i}`).join("\n")

export const createReadFixture = () => createJobDirs({ "a.ts": FIXTURE_LINES })

/** `calls` direct `read` tool calls on src/a.ts, one per turn, then a final answer. */
export const readRoundTrips = (calls: number): Array<Step> => [
  ...Array.from(
    { length: calls },
    (_, i): Step => ({
      kind: "turn",
      toolCalls: [{ name: "read", arguments: { path: "src/a.ts", offset: i + 1, limit: 20 } }]
    })
  ),
  { kind: "turn", text: "done" }
]

/** Runs `job` in-process against `server` (an OpenAI-compatible scripted model); its outcome and wall time. */
export const timeKernelJob = async (
  server: ScriptedServer,
  job: JobSpec
): Promise<{ readonly outcome: JobOutcome; readonly ms: number }> => {
  const t0 = performance.now()
  const outcome = await Effect.runPromise(
    Effect.gen(function* () {
      const handle = yield* (yield* AgentRuntime).start(job)
      yield* Stream.runDrain(handle.events)
      return yield* handle.result
    }).pipe(Effect.scoped, Effect.provide(KernelLive({ providers: [createProvider(server, "openai-completions")] })))
  )
  return { outcome, ms: performance.now() - t0 }
}
