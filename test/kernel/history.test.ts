/**
 * A job's `history` through the real job child: one that belongs to the agent's prompt starts the
 * conversation (the model's first request carries it unchanged, then the task); one of another prompt,
 * or malformed, is refused with one job.refused line naming job.history, before the model is asked.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { loopPrompt } from "../../src/kernel/agentLoop.ts"
import { promptHashes } from "../../src/kernel/promptHashes.ts"
import { ProcessRunner, ProcessRunnerLive } from "../../src/tools/ProcessRunner.ts"
import { createKernelTools } from "../../src/tools/registry.ts"
import { createEnvelope, createJob, createJobDirs, createJobSpec, createProvider, runJobChild } from "../support/jobChild.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const AGENT = { tools: ["read"] }
const EARLIER_TASK = "Which file exports greet? Reference ORCHID-7."
const EARLIER_ANSWER = "src/a.ts exports greet."

/** A parent's conversation as a transcript holds it (pi-ai's messages, JSON). */
const MESSAGES = [
  { role: "user", content: EARLIER_TASK, timestamp: 1 },
  {
    role: "assistant",
    content: [{ type: "text", text: EARLIER_ANSWER }],
    api: "openai-completions",
    provider: "scripted",
    model: "scripted-model",
    usage: {
      input: 10,
      output: 5,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 15,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
    },
    stopReason: "stop",
    timestamp: 2
  }
]

const setup = async (steps: Parameters<typeof startOpenAIServer>[0]) => {
  const server = await startOpenAIServer(steps)
  const dirs = createJobDirs({ "a.ts": "export function greet() {}\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  return { server, dirs }
}

/** The hashes of the prompt this agent's jobs send, built by the kernel's own functions. */
const ownHashes = (dirs: ReturnType<typeof createJobDirs>) =>
  Effect.runPromise(
    Effect.flatMap(ProcessRunner, (runner) =>
      Effect.map(createKernelTools(["read"], runner), (tools) => {
        const { systemPrompt, toolDefs } = loopPrompt({ spec: createJobSpec(dirs, { agent: AGENT }), tools })
        return promptHashes(systemPrompt, toolDefs)
      })
    ).pipe(Effect.provide(ProcessRunnerLive), Effect.scoped)
  )

const refusal = (lines: ReadonlyArray<string>) =>
  JSON.parse(lines[0] ?? "{}") as { type: string; problems: Array<{ path: string; message: string }> }

describe("a job's history", () => {
  test("of this agent's prompt: the first request carries it unchanged, then the task", async () => {
    const { server, dirs } = await setup([{ kind: "turn", text: "Yes, only greet." }])
    const hashes = await ownHashes(dirs)
    const job = { ...createJob(dirs, { agent: AGENT, task: "Does it export anything else?" }), history: { ...hashes, messages: MESSAGES } }
    const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(0)
    expect(server.requests.length).toBe(1)
    const sent = (server.requests[0]?.body as { messages: Array<{ role: string; content: unknown }> }).messages.filter(
      (m) => m.role !== "system" && m.role !== "developer"
    )
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "user"])
    expect(JSON.stringify(sent[0]?.content)).toContain("ORCHID-7")
    expect(JSON.stringify(sent[1]?.content)).toContain(EARLIER_ANSWER)
    expect(JSON.stringify(sent[2]?.content)).toContain("Does it export anything else?")
  })

  test("of another prompt (other instructions or tools): refused naming job.history, the model never asked", async () => {
    const { server, dirs } = await setup([])
    const hashes = await ownHashes(dirs)
    for (const [history, differs] of [
      [{ ...hashes, instructionsHash: "0".repeat(64) }, "instructions and skills"],
      [{ ...hashes, toolsHash: "f".repeat(64) }, "tools"]
    ] as const) {
      const job = { ...createJob(dirs, { agent: AGENT }), history: { ...history, messages: MESSAGES } }
      const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]))
      expect(run.code).toBe(2)
      expect(run.lines.length).toBe(1)
      const refused = refusal(run.lines)
      expect(refused.type).toBe("job.refused")
      expect(refused.problems.map((p) => p.path)).toEqual(["job.history"])
      expect(refused.problems[0]?.message).toContain(`its ${differs} differ`)
    }
    expect(server.requests.length).toBe(0)
  })

  test("malformed: every problem named under job.history", async () => {
    const { server, dirs } = await setup([])
    const job = {
      ...createJob(dirs, { agent: AGENT }),
      history: { instructionsHash: "ABC", toolsHash: "0".repeat(64), messages: [{ role: "system", content: "x" }], extra: true }
    }
    const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(2)
    const paths = refusal(run.lines).problems.map((p) => p.path)
    expect(paths).toContain("job.history.instructionsHash")
    expect(paths).toContain("job.history.messages.0.role")
    expect(paths).toContain("job.history.extra")
    expect(server.requests.length).toBe(0)
  })
})
