/**
 * Every failure reason from a scripted model scenario through the real job child, with the exact
 * terminal event and exit code; the loop and streaming guards at their thresholds; deny patterns and
 * timeouts around running tools.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { createEnvelope, createJob, createJobDirs, createProvider, runJobChild, type JobOverrides } from "../support/jobChild.ts"
import { startOpenAIServer, type Step } from "../support/scriptedServers.ts"
import { pidsWithArg } from "../support/processes.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const run = async (steps: ReadonlyArray<Step>, overrides: JobOverrides = {}) => {
  const server = await startOpenAIServer(steps)
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n", "b.ts": "export const b = 2\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const result = await runJobChild(createEnvelope(createJob(dirs, overrides), [createProvider(server, "openai-completions")]))
  return { ...result, server, dirs }
}

const last = (events: ReadonlyArray<JobEvent>) => events[events.length - 1]
const readCall = (path: string): Step => ({ kind: "turn", toolCalls: [{ name: "read", arguments: { path } }] })
const answer: Step = { kind: "turn", text: "done" }

describe("failure reasons", () => {
  test("max-turns: the model still calls tools when maxTurns is reached", async () => {
    const r = await run([readCall("src/a.ts"), readCall("src/b.ts"), readCall("src/a.ts"), answer], { limits: { maxTurns: 2 } })
    expect(r.code).toBe(1)
    expect(last(r.events)).toMatchObject({
      type: "job.failed",
      reason: "max-turns",
      message: "the job reached maxTurns (2) before the model finished"
    })
    expect(r.server.requests.length).toBe(2)
  })

  test("budget: checked after the model call that overspends; no turn after it", async () => {
    const costly: Step = { kind: "turn", toolCalls: [{ name: "ls", arguments: {} }], usage: { input: 100_000, output: 10_000 } }
    const r = await run([costly, answer], { limits: { maxCostUsd: 0.1 } })
    expect(r.code).toBe(1)
    const failed = last(r.events)
    expect(failed).toMatchObject({ type: "job.failed", reason: "budget" })
    expect(failed?.type === "job.failed" && failed.message).toContain("maxCostUsd ($0.1)")
    expect(r.server.requests.length).toBe(1)
    expect(r.events.some((e) => e.type === "tool.call")).toBe(false)
  })

  test("timeoutSec fires while a tool is running, and the tool's process is killed", async () => {
    const sleeper: Step = {
      kind: "turn",
      toolCalls: [{ name: "shell", arguments: { command: "echo started > out/pid.txt; exec sleep 60.0231" } }]
    }
    const r = await run([sleeper, answer], { limits: { timeoutSec: 2, idleTimeoutSec: 0 } })
    expect(r.code).toBe(1)
    expect(last(r.events)).toMatchObject({ type: "job.failed", reason: "timeout", message: "the job exceeded timeoutSec (2 s)" })
    expect(readFileSync(join(r.dirs.out, "pid.txt"), "utf8")).toBe("started\n")
    // By argument in the host's /proc: inside the sandbox `$$` is a pid of the job's own namespace.
    expect(pidsWithArg("60.0231")).toEqual([])
  })

  test("idleTimeoutSec fires while a silent tool runs", async () => {
    const silent: Step = { kind: "turn", toolCalls: [{ name: "shell", arguments: { command: "sleep 60" } }] }
    const r = await run([silent, answer], { limits: { timeoutSec: 30, idleTimeoutSec: 1 } })
    expect(r.code).toBe(1)
    expect(last(r.events)).toMatchObject({
      type: "job.failed",
      reason: "timeout",
      message: "no model or tool progress for idleTimeoutSec (1 s)"
    })
  })
})

describe("loop: the same call with the same answer", () => {
  test("11 identical call+answer pairs continue", async () => {
    const r = await run([...Array.from({ length: 11 }, () => readCall("src/a.ts")), answer])
    expect(r.code).toBe(0)
    expect(last(r.events)).toMatchObject({ type: "job.completed", summary: "done" })
  })

  test("the 12th stops with loop and the spec's message", async () => {
    const r = await run([...Array.from({ length: 12 }, () => readCall("src/a.ts")), answer])
    expect(r.code).toBe(1)
    expect(last(r.events)).toMatchObject({
      type: "job.failed",
      reason: "loop",
      message: "stopped: read was called with the same arguments 12 times"
    })
    expect(r.server.requests.length).toBe(12)
    // From the 5th repeat the model is told it is repeating itself.
    expect(r.server.requests[4]!.rawBody).not.toContain("same arguments")
    expect(r.server.requests[5]!.rawBody).toContain("same arguments 5 times")
  })

  test("a novel call in between resets the count", async () => {
    const steps = [
      ...Array.from({ length: 11 }, () => readCall("src/a.ts")),
      readCall("src/b.ts"),
      ...Array.from({ length: 11 }, () => readCall("src/a.ts")),
      answer
    ]
    const r = await run(steps, { limits: { maxTurns: 0 } })
    expect(r.code).toBe(0)
  })

  test("blocked calls count", async () => {
    const blocked: Step = { kind: "turn", toolCalls: [{ name: "shell", arguments: { command: "touch out/marker" } }] }
    const r = await run([...Array.from({ length: 12 }, () => blocked), answer], { agent: { denyCommandPatterns: ["touch"] } })
    expect(r.code).toBe(1)
    expect(last(r.events)).toMatchObject({
      type: "job.failed",
      reason: "loop",
      message: "stopped: shell was called with the same arguments 12 times"
    })
    expect(existsSync(join(r.dirs.out, "marker"))).toBe(false)
  })
})

describe("loop: one turn streaming too much", () => {
  const ANSWER = "done"
  test("150,000 characters of thinking and text pass", async () => {
    const r = await run([{ kind: "turn", thinking: "t".repeat(150_000 - ANSWER.length), text: ANSWER, chunkSize: 4096 }])
    expect(r.code).toBe(0)
  })

  test("150,001 trip loop with the spec's message", async () => {
    const r = await run([{ kind: "turn", thinking: "t".repeat(150_001 - ANSWER.length), text: ANSWER, chunkSize: 4096 }])
    expect(r.code).toBe(1)
    expect(last(r.events)).toMatchObject({
      type: "job.failed",
      reason: "loop",
      message: "stopped: one turn produced 151k characters of thinking without a tool call"
    })
  })

  const writeOf = (total: number): Step => {
    const base = JSON.stringify({ path: "big.txt", content: "" }).length
    return {
      kind: "turn",
      toolCalls: [{ name: "write", arguments: { path: "big.txt", content: "x".repeat(total - base) } }],
      chunkSize: 8192
    }
  }

  test("400,000 characters of tool-call arguments pass", async () => {
    const r = await run([writeOf(400_000), answer])
    expect(r.code).toBe(0)
    expect(r.events.some((e) => e.type === "output" && e.path === "big.txt")).toBe(true)
  })

  test("400,001 trip loop", async () => {
    const r = await run([writeOf(400_001), answer])
    expect(r.code).toBe(1)
    expect(last(r.events)).toMatchObject({
      type: "job.failed",
      reason: "loop",
      message: "stopped: one turn produced 401k characters of tool-call arguments"
    })
    expect(existsSync(join(r.dirs.out, "big.txt"))).toBe(false)
  })
})

describe("deny patterns", () => {
  test("a matching shell command never runs, is reported, and the model gets an error result", async () => {
    const touch: Step = { kind: "turn", toolCalls: [{ name: "shell", arguments: { command: "touch out/marker" } }] }
    const r = await run([touch, answer], { agent: { denyCommandPatterns: ["^rm ", "touch"] } })
    expect(r.code).toBe(0)
    expect(existsSync(join(r.dirs.out, "marker"))).toBe(false)
    const call = r.events.find((e) => e.type === "tool.call")
    expect(call).toMatchObject({ tool: "shell", allowed: false, reason: "command matches denyCommandPatterns[1]" })
    expect(r.events.find((e) => e.type === "tool.result")).toMatchObject({ success: false })
    expect(r.server.requests[1]!.rawBody).toContain("Blocked: command matches denyCommandPatterns[1]")
  })

  test("a command that does not match runs", async () => {
    const touch: Step = { kind: "turn", toolCalls: [{ name: "shell", arguments: { command: "touch out/marker" } }] }
    const r = await run([touch, answer], { agent: { denyCommandPatterns: ["^rm "] } })
    expect(r.code).toBe(0)
    expect(existsSync(join(r.dirs.out, "marker"))).toBe(true)
    expect(r.events.find((e) => e.type === "tool.call")).toMatchObject({ allowed: true })
  })
})
