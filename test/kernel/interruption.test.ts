/**
 * A job belongs to the caller's scope (ARCHITECTURE §4): interrupting the fiber that awaits one of two
 * concurrent jobs aborts that job only; closing the scope of a running job aborts it, its process dead.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test"
import { Chunk, Deferred, Effect, Exit, Fiber, Stream } from "effect"
import { AgentRuntime } from "../../src/contract/AgentRuntime.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { KernelLive } from "../../src/kernel/Kernel.ts"
import { createJobDirs, createJobSpec, createProvider } from "../support/jobChild.ts"
import { pidsWithArg } from "../support/processes.ts"
import { testSandboxConfig } from "../support/sandbox.ts"
import { startOpenAIServer, type ScriptedServer, type Step } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const serve = async (steps: ReadonlyArray<Step>) => {
  const server = await startOpenAIServer(steps)
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  return { server, dirs }
}

/** A step that resolves `arrived` when its request comes in, then answers with `then`. */
const signalling = (arrived: Deferred.Deferred<void>, then: Step | (() => Promise<Step>)): Step => ({
  kind: "fn",
  respond: async () => {
    Effect.runSync(Deferred.succeed(arrived, undefined))
    return typeof then === "function" ? then() : then
  }
})

const kernelFor = (...servers: ReadonlyArray<ScriptedServer>) =>
  KernelLive({
    providers: servers.map((s, i) => ({ ...createProvider(s, "openai-completions"), id: `scripted-${i}` })),
    sandbox: testSandboxConfig()
  })

const terminal = (events: ReadonlyArray<JobEvent>) => events[events.length - 1]

test("interrupting the fiber awaiting one of two concurrent jobs aborts it; the other completes", async () => {
  const aAsked = Effect.runSync(Deferred.make<void>())
  const bAsked = Effect.runSync(Deferred.make<void>())
  const release = Promise.withResolvers<void>()
  // A's model never answers; B's first answer waits until A has been interrupted.
  const a = await serve([signalling(aAsked, { kind: "stall" })])
  const b = await serve([
    signalling(bAsked, async () => {
      await release.promise
      return { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] }
    }),
    { kind: "turn", text: "b is done" }
  ])
  const program = Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const jobA = yield* runtime.start(createJobSpec(a.dirs, { model: { provider: "scripted-0" }, limits: { idleTimeoutSec: 0 } }))
    const jobB = yield* runtime.start(createJobSpec(b.dirs, { model: { provider: "scripted-1" } }))
    const eventsA = yield* Effect.fork(Stream.runCollect(jobA.events))
    const eventsB = yield* Effect.fork(Stream.runCollect(jobB.events))
    const awaitingA = yield* Effect.fork(jobA.result)
    const awaitingB = yield* Effect.fork(jobB.result)
    yield* Deferred.await(aAsked)
    yield* Deferred.await(bAsked)
    // Returns once job A has ended: its terminal event is out by then.
    yield* Fiber.interrupt(awaitingA)
    release.resolve()
    return {
      awaitedA: yield* Fiber.await(awaitingA),
      outcomeB: yield* Fiber.join(awaitingB),
      outcomeA: yield* jobA.result,
      eventsA: Chunk.toArray(yield* Fiber.join(eventsA)),
      eventsB: Chunk.toArray(yield* Fiber.join(eventsB))
    }
  })
  const r = await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(kernelFor(a.server, b.server))))
  expect(Exit.isInterrupted(r.awaitedA)).toBe(true)
  expect(r.outcomeA).toEqual({ _tag: "Failed", reason: "aborted", message: "the job was aborted" })
  expect(terminal(r.eventsA)).toMatchObject({ type: "job.failed", reason: "aborted" })
  // Every span of A is settled: the turn span (status error) and the job span precede the terminal event.
  expect(r.eventsA.filter((e) => e.type === "span").map((e) => e.type === "span" && [e.name, e.status])).toEqual([
    ["kintsugi.turn", "error"],
    ["kintsugi.job", "error"]
  ])
  expect(r.outcomeB).toEqual({ _tag: "Completed", summary: "b is done" })
  expect(terminal(r.eventsB)).toMatchObject({ type: "job.completed", summary: "b is done" })
  expect(b.server.requests.length).toBe(2)
  expect(a.server.requests.length).toBe(1)
})

test("closing the scope of a running job aborts it: terminal event emitted, its process dead", async () => {
  const marker = "60.0421"
  const { server, dirs } = await serve([
    { kind: "turn", toolCalls: [{ name: "shell", arguments: { command: `exec sleep ${marker}` } }] },
    { kind: "turn", text: "never" }
  ])
  const program = Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const handle = yield* Effect.scoped(
      Effect.gen(function* () {
        const h = yield* runtime.start(createJobSpec(dirs, { model: { provider: "scripted-0" }, limits: { idleTimeoutSec: 0 } }))
        // No event says "the process is up": look for it in /proc.
        yield* Effect.promise(() => until(() => pidsWithArg(marker).length > 0, { what: "the tool's sleep", timeoutMs: 60_000 }))
        return h
      })
    )
    // The scope is closed: the job has ended and its events are all queued.
    const alive = pidsWithArg(marker).length
    return { alive, events: Chunk.toArray(yield* Stream.runCollect(handle.events)), outcome: yield* handle.result }
  })
  const r = await Effect.runPromise(program.pipe(Effect.provide(kernelFor(server))))
  expect(r.alive).toBe(0)
  expect(r.outcome).toEqual({ _tag: "Failed", reason: "aborted", message: "the job was aborted" })
  expect(terminal(r.events)).toMatchObject({ type: "job.failed", reason: "aborted" })
  expect(r.events.find((e) => e.type === "span" && e.name === "kintsugi.tool")).toMatchObject({ status: "error" })
})
