/**
 * The kernel as an Effect layer, the way an orchestrator composes it: start, stream events, abort.
 * Also: every child process is dead at the moment the terminal event is seen, whatever the reason.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Layer, Stream } from "effect"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { AgentRuntime, type JobHandle } from "../../src/contract/AgentRuntime.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { KernelLive } from "../../src/kernel/Kernel.ts"
import { dumpableFlag, makeNonDumpable } from "../../src/kernel/nonDumpable.ts"
import { decodeJob } from "../../src/kernel/decodeJob.ts"
import { createJobDirs, createJobSpec, createProvider, type JobDirs, type JobOverrides } from "../support/jobChild.ts"
import { testSandboxConfig } from "../support/sandbox.ts"
import { startOpenAIServer, type Step } from "../support/scriptedServers.ts"
import { pidsWithArg } from "../support/processes.ts"
import { until } from "../support/waitFor.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

/** Starts a job in-process; `onEvent` runs synchronously as each event arrives. */
const startJob = async (
  steps: ReadonlyArray<Step>,
  overrides: JobOverrides,
  onEvent: (e: JobEvent, h: JobHandle, dirs: JobDirs) => void
) => {
  const server = await startOpenAIServer(steps)
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const layer = KernelLive({ providers: [createProvider(server, "openai-completions")], sandbox: testSandboxConfig() })
  const program = Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const handle = yield* runtime.start(createJobSpec(dirs, overrides))
    const events: Array<JobEvent> = []
    yield* Stream.runForEach(handle.events, (e) =>
      Effect.sync(() => {
        events.push(e)
        onEvent(e, handle, dirs)
      })
    )
    return { events, outcome: yield* handle.result }
  })
  return { ...(await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer)))), dirs, server }
}

describe("KernelConfig.onEvent", () => {
  test("gets each event as it is emitted: job.started before the model is asked, every event before the stream has it, in order", async () => {
    const server = await startOpenAIServer([{ kind: "turn", text: "hello" }])
    const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
    cleanups.push(
      () => server.stop(),
      () => dirs.cleanup()
    )
    const heard: Array<JobEvent> = []
    let requestsAtStart = -1
    const onEvent = (e: JobEvent) => {
      heard.push(e)
      if (e.type === "job.started") requestsAtStart = server.requests.length
    }
    const layer = KernelLive({ providers: [createProvider(server, "openai-completions")], sandbox: testSandboxConfig(), onEvent })
    const streamed: Array<JobEvent> = []
    const heardFirst: Array<boolean> = []
    const program = Effect.gen(function* () {
      const runtime = yield* AgentRuntime
      const handle = yield* runtime.start(createJobSpec(dirs, {}))
      yield* Stream.runForEach(handle.events, (e) =>
        Effect.sync(() => {
          heardFirst.push(heard[streamed.length] === e)
          streamed.push(e)
        })
      )
      return yield* handle.result
    })
    const outcome = await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer)))
    expect(outcome).toEqual({ _tag: "Completed", summary: "hello" })
    expect(requestsAtStart).toBe(0)
    expect(server.requests.length).toBe(1)
    expect(heard.map((e) => e.seq)).toEqual(streamed.map((e) => e.seq))
    expect(heard.at(-1)).toMatchObject({ type: "job.completed" })
    expect(heardFirst.every((b) => b)).toBe(true)
  })
})

describe("AgentRuntime layer", () => {
  test("composes with other layers and runs a job to its outcome", async () => {
    const r = await startJob([{ kind: "turn", text: "hello" }], {}, () => {})
    expect(r.outcome).toEqual({ _tag: "Completed", summary: "hello" })
    expect(r.events[r.events.length - 1]).toMatchObject({ type: "job.completed", summary: "hello" })
    // An untrusted document is decoded once, outside the kernel, with every problem listed.
    const decoded = decodeJob({})
    expect(decoded._tag === "Left" && decoded.left.problems.map((p) => p.path)).toEqual(
      expect.arrayContaining(["agent", "task", "model", "workspace", "limits"])
    )
    // Layer.merge with an unrelated layer still provides AgentRuntime; no provider → the model is refused.
    const merged = Layer.merge(KernelLive({ providers: [] }), Layer.empty)
    const refused = await Effect.runPromise(
      Effect.flip(Effect.flatMap(AgentRuntime, (rt) => rt.start(createJobSpec(r.dirs))).pipe(Effect.scoped, Effect.provide(merged)))
    )
    expect(refused._tag).toBe("JobRefused")
    expect(refused.problems.map((p) => p.path)).toEqual(["model"])
  })

  // Both tests find the processes by a unique argument in the host's /proc: inside the sandbox `$$`
  // and `$!` are pids of the job's own PID namespace.
  test("abort() ends the job as aborted; the running tool's process is dead when job.failed is seen", async () => {
    const marker = "60.0173"
    const sleeper: Step = {
      kind: "turn",
      toolCalls: [{ name: "shell", arguments: { command: `echo started > out/pid.txt; exec sleep ${marker}` } }]
    }
    let aliveBeforeAbort: boolean | undefined
    let aliveAtTerminal: boolean | undefined
    const r = await startJob([sleeper, { kind: "turn", text: "never" }], { limits: { idleTimeoutSec: 0 } }, (e, handle, dirs) => {
      if (e.type === "tool.call") {
        // Abort once the shell has exec'd its sleep.
        void until(() => existsSync(join(dirs.out, "pid.txt")) && pidsWithArg(marker).length > 0, { what: "the tool's sleep" })
          .then(
            () => true,
            () => false
          )
          .then((started) => {
            aliveBeforeAbort = started
            Effect.runFork(handle.abort)
          })
      }
      if (e.type === "job.failed") aliveAtTerminal = pidsWithArg(marker).length > 0
    })
    expect(r.outcome).toEqual({ _tag: "Failed", reason: "aborted", message: "the job was aborted" })
    expect(aliveBeforeAbort).toBe(true)
    expect(aliveAtTerminal).toBe(false)
  })

  test("a background process a command left behind is dead before job.completed", async () => {
    const marker = "300.0173"
    const leaver: Step = {
      kind: "turn",
      toolCalls: [{ name: "shell", arguments: { command: `(sleep ${marker} & echo $! > out/bg.txt); echo started` } }]
    }
    const seen: Array<boolean> = []
    const r = await startJob([leaver, { kind: "turn", text: "ok" }], {}, (e, _h, dirs) => {
      if (e.type === "job.completed") seen.push(existsSync(join(dirs.out, "bg.txt")), pidsWithArg(marker).length > 0)
    })
    expect(r.outcome._tag).toBe("Completed")
    expect(seen).toEqual([true, false])
  })
})

test("the job child's non-dumpable switch works on this machine", () => {
  if (process.platform !== "linux") return
  expect(makeNonDumpable()).toBe(true)
  expect(dumpableFlag()).toBe(0)
})
