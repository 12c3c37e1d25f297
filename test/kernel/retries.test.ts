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
import { createJobSpec, createJobDirs, createProvider, TEST_API_KEY, type JobOverrides, type ScriptedApi } from "../support/jobChild.ts"
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
  cleanups.push(
    () => scripted.stop(),
    () => dirs.cleanup()
  )
  const layer = KernelLive({ providers: [createProvider(scripted, api)], sandbox: testSandboxConfig(), retry: options.retry ?? FAST })
  const job = createJobSpec(dirs, { ...overrides, agent: { tools: ["read"], ...overrides.agent } })
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
  const r = await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer)))
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
        expect.objectContaining({
          attempt: 1,
          statusCode: 429,
          cause: "status",
          serverRequested: false,
          provider: "scripted",
          model: "scripted-model"
        }),
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

  test("a Retry-After longer than the time left is not waited for: error at once, with the provider's words", async () => {
    const r = await runJob("openai-completions", [httpError(429, "quota", { "retry-after": "60" }), { kind: "turn", text: "never" }], {
      overrides: { limits: { timeoutSec: 5 } }
    })
    expect(r.requests.length).toBe(1)
    expect(r.retries).toEqual([])
    expect(r.outcome).toEqual({
      _tag: "Failed",
      reason: "error",
      message: "model call failed: the provider answered HTTP 429: quota (scripted) (the next retry wait would pass timeoutSec)"
    })
  })

  test("503 for ever → error before timeoutSec, naming the status, the provider's message and why retrying stopped", async () => {
    const forever = Array.from({ length: 200 }, () => httpError(503, "upstream unavailable"))
    // Waits of 675-900 ms, then 1350-1800 ms: the second can never fit in what is left of 2 s, so the
    // job gives up after 2 requests, long before the deadline (and never races it).
    const r = await runJob("openai-completions", forever, {
      overrides: { limits: { timeoutSec: 2, idleTimeoutSec: 1 } },
      retry: { baseDelayMs: 900, maxRetries: 1000 }
    })
    const expected =
      "model call failed: the provider answered HTTP 503: upstream unavailable (scripted) (after 2 attempts; the next retry wait would pass timeoutSec)"
    expect(r.outcome).toEqual({ _tag: "Failed", reason: "error", message: expected })
    expect(r.terminal).toMatchObject({ type: "job.failed", reason: "error", message: expected })
    expect(r.requests.length).toBe(2)
    expect(r.retries.map((s) => s.attributes["statusCode"])).toEqual([503])
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

/** The OpenAI SSE frames of a one-text answer, as raw HTTP body text. */
const answerBody = (text: string): string =>
  [
    { choices: [{ index: 0, delta: { role: "assistant", content: text }, finish_reason: null }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    { choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } }
  ]
    .map(
      (c) =>
        `data: ${JSON.stringify({ id: "chatcmpl-raw", object: "chat.completion.chunk", created: 1, model: "scripted-model", ...c })}\n\n`
    )
    .join("") + "data: [DONE]\n\n"

/** What a raw server sends for its n-th request: SSE text, then either the end of the response or a cut. */
type RawAnswer = { readonly body: string; readonly cut: boolean }

/**
 * A model endpoint on a raw TCP socket, so a response can be cut mid-stream: a cut answer sends 200,
 * SSE headers and `body` as one chunk, then closes the connection mid-response.
 */
const startRawServer = (answer: (requestNumber: number) => RawAnswer) => {
  let requests = 0
  const listener = Bun.listen<{ buf: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (socket) => void (socket.data = { buf: "" }),
      data: (socket, chunk) => {
        socket.data.buf += chunk.toString()
        const head = socket.data.buf.indexOf("\r\n\r\n")
        const length = Number(/content-length: *(\d+)/i.exec(socket.data.buf)?.[1] ?? 0)
        if (head < 0 || Buffer.byteLength(socket.data.buf) < head + 4 + length) return
        requests += 1
        const { body, cut } = answer(requests)
        const size = Buffer.byteLength(body)
        if (cut) {
          const chunkText = size === 0 ? "" : `${size.toString(16)}\r\n${body}\r\n`
          socket.write(`HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n${chunkText}`)
          // Closed without the chunked terminator, a moment later: Bun's fetch may report a close that
          // arrives with the data before it hands the data on, and the test needs the data parsed.
          setTimeout(() => socket.end(), size === 0 ? 0 : 200)
          return
        }
        socket.end(`HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${size}\r\nconnection: close\r\n\r\n${body}`)
      }
    }
  })
  const baseUrl = `http://127.0.0.1:${listener.port}`
  const stop = async () => listener.stop(true)
  // createProvider only reads baseUrl; the rest satisfies ScriptedServer.
  const asServer = (prefix: string): ScriptedServer => ({
    baseUrl: baseUrl + prefix,
    requests: [],
    append: () => undefined,
    remaining: () => 0,
    stop
  })
  return { asServer, requests: () => requests, stop }
}

const runRaw = async (api: ScriptedApi, server: ScriptedServer, retry: Partial<RetryPolicy>) => {
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const layer = KernelLive({ providers: [createProvider(server, api)], sandbox: testSandboxConfig(), retry })
  const program = Effect.gen(function* () {
    const handle = yield* (yield* AgentRuntime).start(createJobSpec(dirs, { agent: { tools: ["read"] } }))
    const events = yield* Stream.runCollect(handle.events)
    return { events: [...events], outcome: yield* handle.result }
  })
  const r = await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(layer)))
  return { ...r, retries: r.events.filter((e): e is SpanEvent => e.type === "span" && e.name === "kintsugi.retry") }
}

test("a connection cut before any text is retried", async () => {
  const raw = startRawServer((n) => (n === 1 ? { body: "", cut: true } : { body: answerBody("done"), cut: false }))
  const r = await runRaw("openai-completions", raw.asServer("/v1"), FAST)
  expect(r.outcome).toEqual({ _tag: "Completed", summary: "done" })
  expect(raw.requests()).toBe(2)
  expect(r.retries.map((s) => s.attributes)).toEqual([expect.objectContaining({ attempt: 1, cause: "connection" })])
  expect(r.retries[0]?.attributes).not.toHaveProperty("statusCode")
})

test("the usage a failed attempt reported still counts", async () => {
  // Anthropic reports input tokens at message_start; the stream is then cut, every time.
  const started = `event: message_start\ndata: ${JSON.stringify({
    type: "message_start",
    message: {
      id: "msg_raw",
      type: "message",
      role: "assistant",
      model: "scripted-model",
      content: [],
      stop_reason: null,
      usage: { input_tokens: 1000, output_tokens: 0 }
    }
  })}\n\n`
  const raw = startRawServer(() => ({ body: started, cut: true }))
  const r = await runRaw("anthropic-messages", raw.asServer(""), { ...FAST, maxRetries: 1 })
  expect(raw.requests()).toBe(2)
  expect(r.retries.length).toBe(1)
  expect(r.outcome).toMatchObject({ _tag: "Failed", reason: "error" })
  expect(r.outcome._tag === "Failed" && r.outcome.message).toContain("connection to the provider failed")
  const usage = r.events.filter((e) => e.type === "usage")
  expect(usage.map((u) => u.inputTokens)).toEqual([1000, 2000])
  expect(usage[usage.length - 1]?.costUsd).toBeCloseTo((2000 * 3) / 1_000_000, 12)
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
      const r = await runJob(api, [
        { kind: "http-error", status: 401, body },
        { kind: "turn", text: "never" }
      ])
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
    const r = await runJob(
      "openai-completions",
      [
        { kind: "stall", afterText: "partial answer" },
        { kind: "turn", text: "never" }
      ],
      {
        overrides: { limits: { idleTimeoutSec: 0 } },
        onEvent: (e, server) => {
          if (e.type === "message.delta") void server.stop()
        }
      }
    )
    expect(r.events.some((e) => e.type === "message.delta")).toBe(true)
    expect(r.retries).toEqual([])
    expect(r.outcome).toMatchObject({ _tag: "Failed", reason: "error" })
    expect(r.outcome._tag === "Failed" && r.outcome.message).toContain("not retried: part of the answer had already been streamed")
  })
})
