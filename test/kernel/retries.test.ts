/**
 * Retries of failed model calls through pi-ai's real OpenAI and Anthropic clients against the scripted
 * servers: what is retried, how often, how long it waits, and what the failure message says.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Stream } from "effect"
import { AgentRuntime } from "../../src/contract/AgentRuntime.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { KernelLive } from "../../src/kernel/Kernel.ts"
import type { RetryPolicy } from "../../src/kernel/retryPolicy.ts"
import { createJob, createJobDirs, createProvider, TEST_API_KEY, type JobOverrides, type ScriptedApi } from "../support/jobChild.ts"
import { testSandboxConfig } from "../support/sandbox.ts"
import { startAnthropicServer, startOpenAIServer, type ScriptedServer, type Step } from "../support/scriptedServers.ts"

setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

/** Small waits so the suite stays fast; the policy's shape is the production one. */
const FAST: Partial<RetryPolicy> = { baseDelayMs: 20, maxDelayMs: 200 }

type SpanEvent = Extract<JobEvent, { type: "span" }>

interface RunOptions {
  readonly overrides?: JobOverrides
  readonly retry?: Partial<RetryPolicy>
  /** Runs synchronously as each event arrives. */
  readonly onEvent?: (e: JobEvent, server: ScriptedServer) => void
}

const runJob = async (api: ScriptedApi, steps: ReadonlyArray<Step>, options: RunOptions = {}) => {
  const overrides = options.overrides ?? {}
  const scripted = await (api === "openai-completions" ? startOpenAIServer : startAnthropicServer)(steps)
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(() => scripted.stop(), () => dirs.cleanup())
  const layer = KernelLive({ providers: [createProvider(scripted, api)], sandbox: testSandboxConfig(), retry: options.retry ?? FAST })
  const job = createJob(dirs, { ...overrides, agent: { tools: ["read"], ...overrides.agent } })
  const program = Effect.gen(function* () {
    const handle = yield* (yield* AgentRuntime).start(job)
    const events: Array<JobEvent> = []
    yield* Stream.runForEach(handle.events, (e) =>
      Effect.sync(() => {
        events.push(e)
        options.onEvent?.(e, scripted)
      })
    )
    return { events, outcome: yield* handle.result }
  })
  const r = await Effect.runPromise(Effect.provide(program, layer))
  const retries = r.events.filter((e): e is SpanEvent => e.type === "span" && e.name === "kintsugi.retry")
  return { ...r, retries, requests: scripted.requests, terminal: r.events[r.events.length - 1] }
}

const httpError = (status: number, message: string, headers?: Record<string, string>): Step => ({
  kind: "http-error",
  status,
  body: { error: { message, type: "scripted" } },
  ...(headers === undefined ? {} : { headers })
})

describe("retried failures", () => {
  for (const api of ["openai-completions", "anthropic-messages"] as const) {
    test(`${api}: 429 twice then an answer → completed, 2 retry spans, 3 requests`, async () => {
      const r = await runJob(api, [httpError(429, "slow down"), httpError(429, "slow down"), { kind: "turn", text: "done" }])
      expect(r.outcome).toEqual({ _tag: "Completed", summary: "done" })
      expect(r.requests.length).toBe(3)
      // The same request each time: a retry adds nothing to the conversation.
      expect(new Set(r.requests.map((q) => q.rawBody)).size).toBe(1)
      expect(r.retries.map((s) => s.attributes)).toEqual([
        expect.objectContaining({ attempt: 1, statusCode: 429, cause: "status", serverRequested: false, provider: "scripted", model: "scripted-model" }),
        expect.objectContaining({ attempt: 2, statusCode: 429 })
      ])
      const turns = r.events.filter((e): e is SpanEvent => e.type === "span" && e.name === "kintsugi.turn")
      expect(turns.length).toBe(1)
      expect(r.retries.every((s) => s.parentSpanId === turns[0]?.spanId && s.status === "ok")).toBe(true)
      // Attributes are names and numbers, never the provider's text.
      expect(JSON.stringify(r.retries)).not.toContain("slow down")
      const usage = r.events.filter((e) => e.type === "usage")
      expect(usage.length).toBe(3)
      expect(usage[usage.length - 1]).toMatchObject({ turns: 1 })
    })
  }

  test("Retry-After: 2 is honoured, and the idle watchdog (1 s) does not fire during the wait", async () => {
    const r = await runJob("openai-completions", [httpError(429, "slow down", { "retry-after": "2" }), { kind: "turn", text: "done" }], {
      overrides: { limits: { idleTimeoutSec: 1 } }
    })
    expect(r.outcome).toEqual({ _tag: "Completed", summary: "done" })
    expect(r.requests.length).toBe(2)
    expect(r.retries.length).toBe(1)
    expect(r.retries[0]?.attributes).toMatchObject({ statusCode: 429, serverRequested: true, waitMs: 2000 })
  })

  test("503 for ever → error before timeoutSec, naming the status, the provider's message and why retrying stopped", async () => {
    const forever = Array.from({ length: 200 }, () => httpError(503, "upstream unavailable"))
    const r = await runJob("openai-completions", forever, {
      overrides: { limits: { timeoutSec: 2, idleTimeoutSec: 1 } },
      retry: { baseDelayMs: 50, maxRetries: 1000 }
    })
    expect(r.outcome).toMatchObject({ _tag: "Failed", reason: "error" })
    expect(r.terminal).toMatchObject({ type: "job.failed", reason: "error" })
    const message = r.terminal?.type === "job.failed" ? r.terminal.message : ""
    expect(message).toContain("HTTP 503: upstream unavailable")
    expect(message).toContain("the next retry wait would pass timeoutSec")
    expect(r.requests.length).toBeGreaterThanOrEqual(3)
    expect(r.retries.length).toBe(r.requests.length - 1)
    expect(r.retries.reduce((sum, s) => sum + Number(s.attributes["waitMs"]), 0)).toBeLessThan(2000)
  })

  test("529 overloaded_error (Anthropic) is retried", async () => {
    const overloaded: Step = {
      kind: "http-error",
      status: 529,
      body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }
    }
    const r = await runJob("anthropic-messages", [overloaded, { kind: "turn", text: "done" }])
    expect(r.outcome._tag).toBe("Completed")
    expect(r.retries.map((s) => s.attributes["statusCode"])).toEqual([529])
  })
})

describe("failures that are not retried", () => {
  test("400 → error after one request, with the provider's message", async () => {
    const r = await runJob("openai-completions", [httpError(400, "tools[0].name: invalid"), { kind: "turn", text: "never" }])
    expect(r.requests.length).toBe(1)
    expect(r.retries).toEqual([])
    expect(r.outcome).toEqual({
      _tag: "Failed",
      reason: "error",
      message: "model call failed: the provider answered HTTP 400: tools[0].name: invalid (scripted)"
    })
  })

  for (const api of ["openai-completions", "anthropic-messages"] as const) {
    test(`${api}: 401 → error after one request; the message names the provider's words without the key`, async () => {
      const body = { type: "error", error: { type: "authentication_error", message: `Incorrect API key provided: ${TEST_API_KEY}` } }
      const r = await runJob(api, [{ kind: "http-error", status: 401, body }, { kind: "turn", text: "never" }])
      expect(r.requests.length).toBe(1)
      expect(r.retries).toEqual([])
      const expected = "model call failed: the provider answered HTTP 401: Incorrect API key provided: [redacted] (authentication_error)"
      expect(r.outcome).toEqual({ _tag: "Failed", reason: "error", message: expected })
      expect(r.terminal).toMatchObject({ type: "job.failed", reason: "error", message: expected })
      expect(JSON.stringify(r.events)).not.toContain(TEST_API_KEY)
    })
  }

  test("a stream that breaks after text was emitted is not retried (the text would be repeated)", async () => {
    // Stopping the server once the stall's text is out breaks the stream mid-answer (ECONNRESET).
    const r = await runJob("openai-completions", [{ kind: "stall", afterText: "partial answer" }, { kind: "turn", text: "never" }], {
      overrides: { limits: { idleTimeoutSec: 0 } },
      onEvent: (e, server) => {
        if (e.type === "message.delta") void server.stop()
      }
    })
    expect(r.events.some((e) => e.type === "message.delta")).toBe(true)
    expect(r.retries).toEqual([])
    expect(r.outcome).toMatchObject({ _tag: "Failed", reason: "error" })
    expect(r.outcome._tag === "Failed" && r.outcome.message).toContain("not retried: part of the answer had already been streamed")
  })
})
