/**
 * MCP tools through the real job child: a scripted model calls an MCP tool on an in-process server
 * and gets its result; the header reaches the server and never an event or stderr; grants of servers
 * the job does not list, and private addresses without the admin's allowance, are refused. In
 * process: closing the job's scope during an MCP call ends the job with its spans settled.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Chunk, Effect, Stream } from "effect"
import { AgentRuntime } from "../../src/contract/AgentRuntime.ts"
import { KernelLive } from "../../src/kernel/Kernel.ts"
import { createEnvelope, createJob, createJobDirs, createJobSpec, createProvider, runJobChild } from "../support/jobChild.ts"
import { defaultTools, startTestMcpServer, type TestMcp } from "../support/mcpServers.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

setDefaultTimeout(60_000)

const CANARY = "mcp-job-header-CANARY-51c0ffee"

let mcp: TestMcp
beforeAll(() => {
  mcp = startTestMcpServer()
})
afterAll(() => mcp.stop())

const refusalOf = (stdout: string) =>
  JSON.parse(stdout.split("\n")[0]!) as { type: string; problems: Array<{ path: string; message: string }> }

describe("MCP tools in a job", () => {
  test("the model calls a read-only MCP tool and gets its result; the header never shows in events or stderr", async () => {
    const model = await startOpenAIServer([
      { kind: "turn", toolCalls: [{ name: "mcp__kb__lookup", arguments: { q: "q-needle-42" } }] },
      { kind: "turn", toolCalls: [{ name: "mcp__kb__whoami", arguments: {} }] },
      { kind: "turn", text: "Looked it up." }
    ])
    const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
    try {
      const job = {
        ...createJob(dirs, { agent: { tools: ["read", "mcp__kb__*"] } }),
        mcp: { servers: [{ name: "kb", url: mcp.url, headers: { "X-Api-Key": CANARY }, timeoutSec: 5, allowPrivateNetwork: true }] }
      }
      const run = await runJobChild(createEnvelope(job, [createProvider(model, "openai-completions")]))
      expect(run.code).toBe(0)
      expect(run.events.at(-1)).toMatchObject({ type: "job.completed", summary: "Looked it up." })
      // The model was offered the read-only tools only, and saw the result.
      const offered = (JSON.parse(model.requests[0]!.rawBody) as { tools: Array<{ function: { name: string } }> }).tools.map(
        (t) => t.function.name
      )
      expect(offered).toContain("mcp__kb__lookup")
      expect(offered).not.toContain("mcp__kb__delete_item")
      expect(model.requests[1]!.rawBody).toContain("found: q-needle-42")
      // The header reached the server; what it echoed was redacted before the model saw it.
      expect(mcp.requests.some((h) => h.get("x-api-key") === CANARY)).toBe(true)
      expect(model.requests[2]!.rawBody).toContain("key=[redacted]")
      for (const r of model.requests) expect(r.rawBody).not.toContain(CANARY)
      expect(run.stdout).not.toContain(CANARY)
      expect(run.stderr).not.toContain(CANARY)
      const results = run.events.filter((e) => e.type === "tool.result")
      expect(results.map((r) => r.type === "tool.result" && [r.tool, r.success])).toEqual([
        ["mcp__kb__lookup", true],
        ["mcp__kb__whoami", true]
      ])
      // One kintsugi.mcp span per call, a child of the call's kintsugi.tool span, with names and no content.
      const spans = run.events.flatMap((e) => (e.type === "span" ? [e] : []))
      const mcpSpans = spans.filter((s) => s.name === "kintsugi.mcp")
      expect(mcpSpans.map((s) => [s.attributes["server"], s.attributes["tool"], s.attributes["outcome"], s.status])).toEqual([
        ["kb", "lookup", "ok", "ok"],
        ["kb", "whoami", "ok", "ok"]
      ])
      const toolSpanIds = new Set(spans.filter((s) => s.name === "kintsugi.tool").map((s) => s.spanId))
      expect(mcpSpans.every((s) => s.parentSpanId !== undefined && toolSpanIds.has(s.parentSpanId))).toBe(true)
      expect(JSON.stringify(spans)).not.toContain("q-needle-42")
    } finally {
      await model.stop()
      dirs.cleanup()
    }
  })

  test("with codemode, read-only MCP tools are called from a script and not declared to the model", async () => {
    const script = 'const r = await tools["mcp__kb__lookup"]({ q: "q-from-script-7" }); print(String(r).slice(0, 200))'
    const model = await startOpenAIServer([
      { kind: "turn", toolCalls: [{ name: "codemode", arguments: { script } }] },
      { kind: "turn", text: "Done." }
    ])
    const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
    try {
      const job = {
        ...createJob(dirs, { agent: { tools: ["read", "codemode", "mcp__kb__*"] } }),
        mcp: { servers: [{ name: "kb", url: mcp.url, headers: { "X-Api-Key": CANARY }, timeoutSec: 5, allowPrivateNetwork: true }] }
      }
      const run = await runJobChild(createEnvelope(job, [createProvider(model, "openai-completions")]))
      expect(run.code).toBe(0)
      const first = JSON.parse(model.requests[0]!.rawBody) as { tools: Array<{ function: { name: string; description: string } }> }
      const offered = first.tools.map((t) => t.function.name)
      expect(offered).toEqual(["read", "codemode"])
      expect(first.tools.find((t) => t.function.name === "codemode")?.function.description).toContain("mcp__kb__lookup")
      expect(model.requests[1]!.rawBody).toContain("found: q-from-script-7")
      // The script's call is an MCP span under the codemode span; the header is in no request or output.
      const spans = run.events.flatMap((e) => (e.type === "span" ? [e] : []))
      const codemodeSpan = spans.find((s) => s.name === "kintsugi.codemode")
      expect(spans.find((s) => s.name === "kintsugi.mcp")?.parentSpanId).toBe(codemodeSpan?.spanId)
      for (const r of model.requests) expect(r.rawBody).not.toContain(CANARY)
      expect(run.stdout + run.stderr).not.toContain(CANARY)
    } finally {
      await model.stop()
      dirs.cleanup()
    }
  })

  test("an agent granting mcp__x__* with no server x in the job is refused with a problem", async () => {
    const dirs = createJobDirs()
    try {
      const job = { ...createJob(dirs, { agent: { tools: ["read", "mcp__x__*"] } }), mcp: { servers: [{ name: "kb", url: mcp.url }] } }
      const run = await runJobChild(
        createEnvelope(job, [
          {
            id: "scripted",
            api: "openai-completions",
            baseUrl: "http://127.0.0.1:9",
            apiKey: "k",
            models: [{ id: "scripted-model", contextWindow: 1000, maxTokens: 100 }]
          }
        ])
      )
      expect(run.code).toBe(2)
      expect(refusalOf(run.stdout)).toEqual({
        type: "job.refused",
        problems: [{ path: "job.agent.tools.1", message: 'MCP server "x" is not among the job\'s mcp.servers' }]
      })
    } finally {
      dirs.cleanup()
    }
  })

  test("a grant of an unlisted server is named in the same refusal as the job's other problems", async () => {
    const dirs = createJobDirs()
    try {
      const provider = {
        id: "scripted",
        api: "openai-completions",
        baseUrl: "http://127.0.0.1:9",
        apiKey: "k",
        models: [{ id: "scripted-model", contextWindow: 1000, maxTokens: 100 }]
      }
      const job = { ...createJob(dirs, { agent: { tools: ["mcp__x__*"] }, model: { id: "no-such-model" } }), mcp: { servers: [] } }
      const run = await runJobChild(createEnvelope(job, [provider]))
      expect(run.code).toBe(2)
      expect(refusalOf(run.stdout).problems).toEqual([
        { path: "job.agent.tools.0", message: 'MCP server "x" is not among the job\'s mcp.servers' },
        { path: "job.model", message: 'no model "no-such-model" in a provider config with id "scripted"' }
      ])
      // A document the decoder refuses: the environment's checks of what decoded still name the grant.
      const broken = await runJobChild(
        createEnvelope({ ...job, model: { provider: "scripted", id: "scripted-model" }, task: "" }, [provider])
      )
      expect(broken.code).toBe(2)
      expect(refusalOf(broken.stdout).problems).toContainEqual({
        path: "job.agent.tools.0",
        message: 'MCP server "x" is not among the job\'s mcp.servers'
      })
    } finally {
      dirs.cleanup()
    }
  })

  test("a server on a loopback address is refused unless the admin allowed private networks", async () => {
    const dirs = createJobDirs()
    try {
      const job = {
        ...createJob(dirs, { agent: { tools: ["mcp__kb__lookup"] } }),
        mcp: { servers: [{ name: "kb", url: mcp.url, headers: { "X-Api-Key": CANARY } }] }
      }
      const before = mcp.requests.length
      const run = await runJobChild(
        createEnvelope(job, [
          {
            id: "scripted",
            api: "openai-completions",
            baseUrl: "http://127.0.0.1:9",
            apiKey: "k",
            models: [{ id: "scripted-model", contextWindow: 1000, maxTokens: 100 }]
          }
        ])
      )
      expect(run.code).toBe(2)
      const refusal = refusalOf(run.stdout)
      expect(refusal.problems).toEqual([
        { path: "job.mcp.servers.0", message: expect.stringContaining("an admin must allow private networks for this server") }
      ])
      expect(mcp.requests.length).toBe(before)
      expect(run.stdout + run.stderr).not.toContain(CANARY)
    } finally {
      dirs.cleanup()
    }
  })
})

describe("MCP tools in process", () => {
  test("closing the job's scope during an MCP call aborts the job: the call ends, every span settled", async () => {
    const called = Promise.withResolvers<void>()
    const hanging = startTestMcpServer(
      defaultTools().map((t) =>
        t.name !== "hang" || t.handler === undefined ? t : { ...t, handler: (args, ctx) => (called.resolve(), t.handler!(args, ctx)) }
      )
    )
    const model = await startOpenAIServer([
      { kind: "turn", toolCalls: [{ name: "mcp__kb__hang", arguments: {} }] },
      { kind: "turn", text: "never" }
    ])
    const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
    try {
      const spec = {
        ...createJobSpec(dirs, { agent: { tools: ["read", "mcp__kb__hang"] }, limits: { idleTimeoutSec: 0 } }),
        mcp: { servers: [{ name: "kb", url: hanging.url, timeoutSec: 600, allowPrivateNetwork: true }] }
      }
      const program = Effect.gen(function* () {
        const runtime = yield* AgentRuntime
        const handle = yield* Effect.scoped(
          Effect.gen(function* () {
            const h = yield* runtime.start(spec)
            yield* Effect.promise(() => called.promise)
            return h
          })
        )
        return { events: Chunk.toArray(yield* Stream.runCollect(handle.events)), outcome: yield* handle.result }
      })
      const r = await Effect.runPromise(
        program.pipe(Effect.provide(KernelLive({ providers: [createProvider(model, "openai-completions")] })))
      )
      expect(r.outcome).toEqual({ _tag: "Failed", reason: "aborted", message: "the job was aborted" })
      expect(r.events.at(-1)).toMatchObject({ type: "job.failed", reason: "aborted" })
      const spans = r.events.flatMap((e) => (e.type === "span" ? [e] : []))
      const mcpSpan = spans.find((s) => s.name === "kintsugi.mcp")
      const toolSpan = spans.find((s) => s.name === "kintsugi.tool")
      expect(mcpSpan).toMatchObject({ status: "error", attributes: { server: "kb", tool: "hang" } })
      expect(mcpSpan?.parentSpanId).toBe(toolSpan?.spanId)
      expect(model.requests.length).toBe(1)
    } finally {
      await model.stop()
      await hanging.stop()
      dirs.cleanup()
    }
  })
})
