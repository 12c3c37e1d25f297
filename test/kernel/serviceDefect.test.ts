/**
 * A job's limits, workspace and model are built after `job.started` (the start waits for
 * none of them): a defect while building them still ends the job with `job.failed` (reason error, the generic
 * message, no detail) and the event stream ends, as a defect later in the job does.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test"
import { Chunk, Effect, Stream } from "effect"
import { makeAgentRuntime } from "../../src/kernel/Kernel.ts"
import { makeSandbox } from "../../src/tools/Sandbox.ts"
import { createJobDirs, createJobSpec, createProvider } from "../support/jobChild.ts"
import { testSandboxConfig } from "../support/sandbox.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

test("a defect while the job's model service is built after job.started ends the job with job.failed", async () => {
  const server = await startOpenAIServer([{ kind: "turn", text: "never asked" }])
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const diagnostics: Array<string> = []
  const runtime = makeAgentRuntime(
    {
      providers: [{ ...createProvider(server, "openai-completions"), id: "scripted-0" }],
      sandbox: testSandboxConfig(),
      diagnostics: (line) => void diagnostics.push(line)
    },
    makeSandbox(testSandboxConfig()),
    () => Effect.die(new Error("the model service could not be built"))
  )
  const { outcome, events } = await Effect.runPromise(
    Effect.gen(function* () {
      const job = yield* runtime.start(createJobSpec(dirs, { model: { provider: "scripted-0" } }))
      const events = Chunk.toArray(yield* Stream.runCollect(job.events))
      return { outcome: yield* job.result, events }
    }).pipe(Effect.scoped)
  )
  expect(events[0]?.type).toBe("job.started")
  expect(events.at(-1)).toMatchObject({ type: "job.failed", reason: "error" })
  expect(outcome).toMatchObject({ _tag: "Failed", reason: "error" })
  expect(JSON.stringify(events)).not.toContain("could not be built")
  expect(server.requests.length).toBe(0)
})
