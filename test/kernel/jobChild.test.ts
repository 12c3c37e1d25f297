/**
 * The job child end to end: real process, real pi-ai HTTP clients, scripted model servers on
 * 127.0.0.1. Asserts the fixed protocol (events, exit codes, refusal line) and what the model saw.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { readdirSync } from "node:fs"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import {
  createEnvelope,
  createJob,
  createJobDirs,
  createProvider,
  MODEL_PRICES,
  runJobChild,
  startJobChild,
  TEST_API_KEY,
  type JobDirs,
  type ScriptedApi
} from "../support/jobChild.ts"
import { startAnthropicServer, startOpenAIServer, type Step } from "../support/scriptedServers.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const SOURCE = "export const answer = 42\nexport function greet(name: string) {\n  return `hi ${name}`\n}\n"

const setup = async (api: ScriptedApi, steps: ReadonlyArray<Step>, files: Record<string, string> = { "a.ts": SOURCE }) => {
  const server = api === "openai-completions" ? await startOpenAIServer(steps) : await startAnthropicServer(steps)
  const dirs = createJobDirs(files)
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  return { server, dirs }
}

const types = (events: ReadonlyArray<JobEvent>) => events.map((e) => e.type)
const terminal = (events: ReadonlyArray<JobEvent>) => events[events.length - 1]

describe.each(["openai-completions", "anthropic-messages"] as const)("a job through %s", (api) => {
  test("read, then grep, then answer: events in order, exit 0, the model saw instructions, skills and results", async () => {
    const { server, dirs } = await setup(api, [
      { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }], usage: { input: 100, output: 10 } },
      { kind: "turn", toolCalls: [{ name: "grep", arguments: { pattern: "greet" } }], usage: { input: 150, output: 12 } },
      { kind: "turn", text: "It exports answer and greet.", usage: { input: 200, output: 8 } }
    ])
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, api)]))
    expect(run.code).toBe(0)
    // Consecutive deltas of one message collapse to one entry: chunking is the provider's choice.
    const flow = types(run.events)
      .filter((t) => t !== "span")
      .filter((t, i, all) => !(t === "message.delta" && all[i - 1] === "message.delta"))
    expect(flow).toEqual([
      "job.started",
      "usage",
      "tool.call",
      "source.read",
      "tool.result",
      "usage",
      "tool.call",
      "source.read",
      "tool.result",
      "message.delta",
      "usage",
      // The grounding check of a completed job (docs/grounding.md), before its terminal event.
      "grounding",
      "job.completed"
    ])
    expect(run.events.map((e) => e.seq)).toEqual(run.events.map((_, i) => i))
    const started = run.events[0]
    expect(started).toMatchObject({
      type: "job.started",
      agentId: "reader",
      agentVersion: 3,
      metadata: { projectId: "p-1", trigger: "test" }
    })
    expect(terminal(run.events)).toMatchObject({ type: "job.completed", summary: "It exports answer and greet." })
    const reads = run.events.filter((e) => e.type === "source.read")
    expect(reads[0]).toMatchObject({ tool: "read", path: "src/a.ts", firstLine: 1 })
    expect(reads[1]).toMatchObject({ tool: "grep", path: "src/a.ts" })
    const results = run.events.filter((e) => e.type === "tool.result")
    expect(results.every((r) => r.type === "tool.result" && r.success)).toBe(true)

    expect(server.requests.length).toBe(3)
    const first = server.requests[0]!.rawBody
    // Instructions verbatim, then the skill, in that order.
    const instructions = JSON.stringify("You are a careful code reader.\nAnswer briefly.").slice(1, -1)
    expect(first).toContain(instructions)
    expect(first.indexOf(instructions)).toBeLessThan(first.indexOf("Cite file:line for every claim."))
    // Tool results reached the model: the file content after read, the grep hit after grep.
    expect(server.requests[1]!.rawBody).toContain("export const answer = 42")
    expect(server.requests[2]!.rawBody).toContain("greet")
    // The system prompt and tool definitions are byte-identical on every turn.
    const prefix = (raw: string) => {
      const body = JSON.parse(raw) as Record<string, unknown>
      const messages = body["messages"] as Array<Record<string, unknown>> | undefined
      return JSON.stringify([body["system"], body["tools"], api === "openai-completions" ? messages?.[0] : null])
    }
    expect(new Set(server.requests.map((r) => prefix(r.rawBody))).size).toBe(1)
  })
})

describe("refusals", () => {
  test("a spec with several problems → exit 2 and one job.refused line listing all of them", async () => {
    const server = await startOpenAIServer([])
    cleanups.push(() => server.stop())
    const job = {
      agent: {
        id: "",
        version: 1,
        instructions: "",
        tools: ["read", "teleport"],
        skills: [
          { name: "Bad Name", content: "x" },
          { name: "dup", content: "x" },
          { name: "dup", content: "y" }
        ],
        denyCommandPatterns: ["(unclosed", "rm -rf"],
        thinking: "extreme"
      },
      task: "",
      model: { provider: "scripted", id: "scripted-model" },
      workspace: { root: "/nonexistent/root", readOnly: ["/nonexistent/src"], outDir: "/nonexistent/out" },
      limits: { idleTimeoutSec: -1, maxTurns: 2.5, maxCostUsd: -3 }
    }
    const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(2)
    expect(run.lines.length).toBe(1)
    const refused = JSON.parse(run.lines[0]!) as { type: string; problems: Array<{ path: string; message: string }> }
    expect(refused.type).toBe("job.refused")
    const paths = refused.problems.map((p) => p.path)
    for (const expected of [
      "job.agent.id",
      "job.agent.instructions",
      "job.agent.tools.1",
      "job.agent.skills.0.name",
      "job.agent.skills.2.name",
      "job.agent.denyCommandPatterns.0",
      "job.agent.thinking",
      "job.task",
      "job.workspace.root",
      "job.workspace.readOnly.0",
      "job.workspace.outDir",
      "job.limits.timeoutSec",
      "job.limits.idleTimeoutSec",
      "job.limits.maxTurns",
      "job.limits.maxCostUsd"
    ]) {
      expect(paths).toContain(expected)
    }
    expect(paths).not.toContain("job.agent.denyCommandPatterns.1")
    // No host path is echoed back.
    expect(run.lines[0]).not.toContain("/nonexistent")
    expect(server.requests.length).toBe(0)
  })

  test.each([
    ["timeoutSec ≤ 0", { limits: { timeoutSec: 0 } }, "job.limits.timeoutSec"],
    ["empty task", { task: "" }, "job.task"],
    ["unknown thinking level", { model: { thinking: "turbo" } }, "job.model.thinking"],
    ["unknown model", { model: { id: "nope" } }, "job.model"]
  ] as const)("%s → refused", async (_name, override, path) => {
    const server = await startOpenAIServer([])
    const dirs = createJobDirs()
    cleanups.push(
      () => server.stop(),
      () => dirs.cleanup()
    )
    const run = await runJobChild(createEnvelope(createJob(dirs, override), [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(2)
    const refused = JSON.parse(run.lines[0]!) as { problems: Array<{ path: string }> }
    expect(refused.problems.map((p) => p.path)).toContain(path)
  })

  test("outDir inside a read-only root → refused", async () => {
    const server = await startOpenAIServer([])
    const dirs = createJobDirs()
    cleanups.push(
      () => server.stop(),
      () => dirs.cleanup()
    )
    const job = { ...createJob(dirs), workspace: { root: dirs.root, readOnly: [dirs.root], outDir: dirs.out } }
    const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(2)
    expect(run.lines[0]).toContain("overlaps")
  })

  test("skill files whose names could escape /skills (or collide) → refused naming each, nothing written, the model never called", async () => {
    const server = await startOpenAIServer([])
    const dirs = createJobDirs()
    cleanups.push(
      () => server.stop(),
      () => dirs.cleanup()
    )
    const file = (path: string) => ({ skill: "cite-lines", path, contentBase64: Buffer.from("planted").toString("base64") })
    const envelope = {
      ...createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]),
      skillFiles: [file("ok.md"), file("../../planted.md"), file(`${dirs.out}/planted.md`), file("a/./b.md"), file("OK.md")]
    }
    const run = await runJobChild(envelope)
    expect(run.code).toBe(2)
    const refused = JSON.parse(run.lines[0]!) as { problems: Array<{ path: string; message: string }> }
    expect(refused.problems.map((p) => p.path)).toEqual([
      "skillFiles.1.path",
      "skillFiles.2.path",
      "skillFiles.3.path",
      "skillFiles.4.path"
    ])
    expect(refused.problems[3]?.message).toBe('duplicate file of skill "cite-lines"')
    expect(readdirSync(dirs.out)).toEqual([])
    expect(server.requests.length).toBe(0)
  })

  test("stdin that is not JSON → exit 2 with a clear problem", async () => {
    const run = await runJobChild("{not json")
    expect(run.code).toBe(2)
    expect(JSON.parse(run.lines[0]!)).toEqual({
      type: "job.refused",
      problems: [{ path: "(stdin)", message: "stdin is not one JSON document" }]
    })
  })
})

describe("failures", () => {
  test("a 500 from the provider (retried until the next wait would pass timeoutSec) → job.failed error naming it, exit 1", async () => {
    const broke: Step = { kind: "http-error", status: 500, body: { error: { message: "upstream broke" } } }
    const { server, dirs } = await setup(
      "openai-completions",
      Array.from({ length: 20 }, () => broke)
    )
    const run = await runJobChild(
      createEnvelope(createJob(dirs, { limits: { timeoutSec: 2 } }), [createProvider(server, "openai-completions")])
    )
    expect(run.code).toBe(1)
    expect(terminal(run.events)).toMatchObject({ type: "job.failed", reason: "error" })
    const last = terminal(run.events)
    expect(last?.type === "job.failed" && last.message).toContain("HTTP 500: upstream broke")
    const retries = run.events.filter((e) => e.type === "span" && e.name === "kintsugi.retry")
    // Default policy: a wait of 0.75-1 s fits, the next (1.5-2 s) would not: 2 requests, 1 retry.
    expect(server.requests.length).toBe(2)
    expect(retries.length).toBe(1)
  })

  test("a 400 'maximum context length' → context-overflow", async () => {
    const { server, dirs } = await setup("openai-completions", [
      {
        kind: "http-error",
        status: 400,
        body: { error: { message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens." } }
      }
    ])
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(1)
    expect(terminal(run.events)).toMatchObject({ type: "job.failed", reason: "context-overflow" })
  })

  test("a stream that stalls past idleTimeoutSec → timeout naming the idle limit", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "stall", afterText: "thinking about it" }])
    const run = await runJobChild(
      createEnvelope(createJob(dirs, { limits: { idleTimeoutSec: 1 } }), [createProvider(server, "openai-completions")])
    )
    expect(run.code).toBe(1)
    const last = terminal(run.events)
    expect(last).toMatchObject({ type: "job.failed", reason: "timeout" })
    expect(last?.type === "job.failed" && last.message).toContain("idleTimeoutSec")
  })

  test("SIGTERM mid-stream → aborted, exit 1", async () => {
    const server = await startOpenAIServer([{ kind: "stall", afterText: "partial answer" }])
    const dirs = createJobDirs({ "a.ts": SOURCE })
    cleanups.push(
      () => server.stop(),
      () => dirs.cleanup()
    )
    const child = startJobChild(
      createEnvelope(createJob(dirs, { limits: { idleTimeoutSec: 0 } }), [createProvider(server, "openai-completions")])
    )
    await child.waitFor("message.delta")
    child.proc.kill("SIGTERM")
    const run = await child.done
    expect(run.code).toBe(1)
    expect(terminal(run.events)).toMatchObject({ type: "job.failed", reason: "aborted" })
  })

  test("an empty answer → error", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: "" }])
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]))
    expect(terminal(run.events)).toMatchObject({ type: "job.failed", reason: "error", message: "the model returned an empty response" })
  })

  test("the output token limit → error", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: "cut sho", finish: "length" }])
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]))
    expect(terminal(run.events)).toMatchObject({ type: "job.failed", reason: "error" })
  })
})

describe("secrets and content", () => {
  test("a canary in a read file appears in no event; the API key appears on no stdout or stderr line", async () => {
    const canary = "CANARY-7f3a9c1e-do-not-leak"
    const { server, dirs } = await setup(
      "openai-completions",
      [
        { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/secret.txt" } }] },
        { kind: "turn", toolCalls: [{ name: "grep", arguments: { pattern: "CANARY" } }] },
        { kind: "turn", text: "done" }
      ],
      { "secret.txt": `line one\n${canary}\n` }
    )
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(0)
    expect(server.requests[1]!.rawBody).toContain(canary) // the model did get it…
    expect(run.stdout).not.toContain(canary) // …but no event carries it
    expect(run.stdout).not.toContain(TEST_API_KEY)
    expect(run.stderr).not.toContain(TEST_API_KEY)
    expect(server.requests[0]!.headers["authorization"]).toBe(`Bearer ${TEST_API_KEY}`)
  })

  test("the API key echoed by the model is redacted from message deltas, even split across chunks", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: `the key is ${TEST_API_KEY}!`, chunkSize: 5 }])
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(0)
    expect(run.stdout).not.toContain(TEST_API_KEY)
    const text = run.events.flatMap((e) => (e.type === "message.delta" ? [e.text] : [])).join("")
    expect(text).toBe("the key is [redacted]!")
  })
})

describe("the environment does not leak into requests", () => {
  test("OPENAI_ORG_ID / OPENAI_PROJECT_ID and env API keys are never sent", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: "ok" }])
    const env = { OPENAI_ORG_ID: "org-LEAK", OPENAI_PROJECT_ID: "proj-LEAK", OPENAI_API_KEY: "sk-ENV-LEAK-123456" }
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]), { env })
    expect(run.code).toBe(0)
    const req = server.requests[0]!
    expect(req.headers["openai-organization"]).toBeUndefined()
    expect(req.headers["openai-project"]).toBeUndefined()
    expect(JSON.stringify(req.headers)).not.toContain("LEAK")
    expect(req.headers["authorization"]).toBe(`Bearer ${TEST_API_KEY}`)
  })
})

describe("usage and cost", () => {
  test("costUsd equals the hand-computed price of the scripted tokens, cache read and write included", async () => {
    const { server, dirs } = await setup("anthropic-messages", [
      { kind: "turn", toolCalls: [{ name: "ls", arguments: {} }], usage: { input: 1000, output: 200, cacheRead: 5000, cacheWrite: 3000 } },
      { kind: "turn", text: "ok", usage: { input: 400, output: 50, cacheRead: 8000, cacheWrite: 0 } }
    ])
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "anthropic-messages")]))
    expect(run.code).toBe(0)
    const usage = run.events.filter((e) => e.type === "usage")
    const last = usage[usage.length - 1]
    const perM = (tokens: number, price: number) => (tokens * price) / 1_000_000
    const expected =
      perM(1400, MODEL_PRICES.input) +
      perM(250, MODEL_PRICES.output) +
      perM(13000, MODEL_PRICES.cacheRead) +
      perM(3000, MODEL_PRICES.cacheWrite)
    expect(last).toMatchObject({ inputTokens: 1400, outputTokens: 250, cacheReadTokens: 13000, cacheWriteTokens: 3000, turns: 2 })
    expect(last?.type === "usage" && last.costUsd).toBeCloseTo(expected, 12)
    expect(last?.type === "usage" && last.contextPeakPercent).toBeCloseTo(((1000 + 5000 + 3000 + 200) / 128_000) * 100, 1)
  })
})

describe("thinking", () => {
  const effortOf = (server: { requests: ReadonlyArray<{ body: unknown }> }) =>
    (server.requests[0]!.body as Record<string, unknown>)["reasoning_effort"]
  const jobSpanOf = (events: ReadonlyArray<{ type: string; name?: string }>) =>
    events.find((e) => e.type === "span" && e.name === "kintsugi.job")

  test("a medium job on a model with off and high thinks at high (the nearest level), and the job span says it went up", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: "done" }])
    const provider = createProvider(server, "openai-completions", { reasoning: true, thinkingLevels: ["off", "high"] })
    const run = await runJobChild(createEnvelope(createJob(dirs, { model: { thinking: "medium" } }), [provider]))
    expect(run.code).toBe(0)
    expect(effortOf(server)).toBe("high")
    expect(jobSpanOf(run.events)).toMatchObject({
      attributes: { "thinking.requested": "medium", "thinking.effective": "high", "thinking.clamped": "up" }
    })
  })

  test("anthropic-messages: the effective level becomes the thinking budget (high's, not medium's)", async () => {
    const { server, dirs } = await setup("anthropic-messages", [{ kind: "turn", text: "done" }])
    const provider = createProvider(server, "anthropic-messages", { reasoning: true, thinkingLevels: ["off", "high"], maxTokens: 64_000 })
    const run = await runJobChild(createEnvelope(createJob(dirs, { model: { thinking: "medium" } }), [provider]))
    expect(run.code).toBe(0)
    expect((server.requests[0]!.body as Record<string, unknown>)["thinking"]).toMatchObject({ type: "enabled", budget_tokens: 16_384 })
    expect(jobSpanOf(run.events)).toMatchObject({
      attributes: { "thinking.requested": "medium", "thinking.effective": "high", "thinking.clamped": "up" }
    })
  })

  test("a model with only high: a job asking low runs at high, and the job span says it was clamped up", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: "done" }])
    const provider = createProvider(server, "openai-completions", { reasoning: true, thinkingLevels: ["high"] })
    const run = await runJobChild(createEnvelope(createJob(dirs, { model: { thinking: "low" } }), [provider]))
    expect(run.code).toBe(0)
    expect(effortOf(server)).toBe("high")
    expect(jobSpanOf(run.events)).toMatchObject({
      attributes: { "thinking.requested": "low", "thinking.effective": "high", "thinking.clamped": "up" }
    })
  })

  test("the agent's level (no job level) is clamped down to the nearest level, and the span says down", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: "done" }])
    const provider = createProvider(server, "openai-completions", { reasoning: true, thinkingLevels: ["low", "high"] })
    const run = await runJobChild(createEnvelope(createJob(dirs, { agent: { thinking: "xhigh" }, model: {} }), [provider]))
    expect(run.code).toBe(0)
    expect(effortOf(server)).toBe("high")
    expect(jobSpanOf(run.events)).toMatchObject({
      attributes: { "thinking.requested": "xhigh", "thinking.effective": "high", "thinking.clamped": "down" }
    })
  })

  test("the job's level overrides the agent's; a supported level is sent as is and marked none", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: "done" }])
    const provider = createProvider(server, "openai-completions", { reasoning: true, thinkingLevels: ["off", "low", "high"] })
    const run = await runJobChild(createEnvelope(createJob(dirs, { agent: { thinking: "high" }, model: { thinking: "low" } }), [provider]))
    expect(run.code).toBe(0)
    expect(effortOf(server)).toBe("low")
    expect(jobSpanOf(run.events)).toMatchObject({
      attributes: { "thinking.requested": "low", "thinking.effective": "low", "thinking.clamped": "none" }
    })
  })

  test("a model that cannot think runs off: no reasoning_effort is sent, and the span says down", async () => {
    const { server, dirs } = await setup("openai-completions", [{ kind: "turn", text: "done" }])
    const provider = createProvider(server, "openai-completions", { reasoning: false })
    const run = await runJobChild(createEnvelope(createJob(dirs, { model: { thinking: "medium" } }), [provider]))
    expect(run.code).toBe(0)
    expect(effortOf(server)).toBeUndefined()
    expect(jobSpanOf(run.events)).toMatchObject({
      attributes: { "thinking.requested": "medium", "thinking.effective": "off", "thinking.clamped": "down" }
    })
  })
})

export type { JobDirs }
