/**
 * The kernel's transcript: a job with `services.transcript` posts each model call's turn to the
 * channel's transcript endpoint (a real loopback server here) twice, redacted: before the call with
 * what it sends, and again with the answer; replayed, the answered turns are
 * exactly the messages of every job request the scripted model server recorded, across compactions
 * (which name what they kept and replaced, with the summaries). Without it nothing is posted.
 * Plus `recordingTranscript` over a scripted Llm: a provider error is not a turn.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import type { Api, AssistantMessage, Message, Model } from "@earendil-works/pi-ai"
import { Effect, Layer, Schema, Stream } from "effect"
import { AgentRuntime } from "../../src/contract/AgentRuntime.ts"
import { KernelLive, type KernelConfig } from "../../src/kernel/Kernel.ts"
import * as JobEvents from "../../src/job/JobEvents.ts"
import * as Limits from "../../src/job/Limits.ts"
import * as Transcript from "../../src/job/Transcript.ts"
import { TranscriptTurn, type TranscriptMessage } from "../../src/job/Transcript.ts"
import { Llm, LlmTest, recordingTranscript } from "../../src/kernel/Llm.ts"
import { createJobDirs, createJobSpec, createProvider, TEST_API_KEY } from "../support/jobChild.ts"
import { type RecordedRequest, startOpenAIServer } from "../support/scriptedServers.ts"
import { createWindowedModel, isSummaryRequest } from "../support/windowedModel.ts"

setDefaultTimeout(60_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const TOKEN = `kst_${"a".repeat(43)}`

/** A loopback transcript endpoint that keeps every turn (decoded) and the token each came with. */
const startTranscriptEndpoint = () => {
  const turns: Array<TranscriptTurn> = []
  const tokens: Array<string> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      if (new URL(request.url).pathname !== "/services/transcript") return new Response("{}", { status: 404 })
      tokens.push(request.headers.get("authorization") ?? "")
      turns.push(Schema.decodeUnknownSync(TranscriptTurn, { onExcessProperty: "error" })(await request.json()))
      return Response.json({ text: "stored", isError: false })
    }
  })
  cleanups.push(() => server.stop(true))
  return { url: `http://127.0.0.1:${server.port}/services`, turns, tokens }
}

/** Twelve files of 30 lines; the first also holds the provider's key (a secret the redactor knows). */
const FILES = Object.fromEntries(
  Array.from({ length: 12 }, (_, f) => [
    `f${f + 1}.ts`,
    (f === 0 ? `// key ${TEST_API_KEY}\n` : "") +
      Array.from({ length: 30 }, (_, i) => `export const v${f + 1}_${i} = "${"x".repeat(20)}"`).join("\n") +
      "\n"
  ])
)

const runJob = async (services: KernelConfig["services"], reads: number, window: number) => {
  const model = createWindowedModel({
    api: "openai-completions",
    window,
    turn: (n) =>
      n <= reads
        ? {
            text: `Notes after step ${n}: ${"the module exports constants; ".repeat(20)}`,
            toolCalls: [{ name: "read", arguments: { path: `src/f${n}.ts` } }]
          }
        : { text: "done: all files read" }
  })
  const server = await startOpenAIServer(model.steps)
  const dirs = createJobDirs(FILES)
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const job = createJobSpec(dirs, { agent: { tools: ["read"] }, limits: { maxTurns: 0 } })
  const run = Effect.gen(function* () {
    const handle = yield* (yield* AgentRuntime).start(job)
    yield* Stream.runDrain(handle.events)
    return yield* handle.result
  })
  const provider = createProvider(server, "openai-completions", { contextWindow: window })
  const outcome = await Effect.runPromise(run.pipe(Effect.scoped, Effect.provide(KernelLive({ providers: [provider], services }))))
  return { outcome, requests: server.requests }
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((b: { type?: string; text?: string }) => (b.type === "text" ? (b.text ?? "") : "")).join("")
      : ""

/** Role and text of a transcript message, as the chat-completions request carries them. */
const fromTranscript = (m: TranscriptMessage) => ({ role: m.role === "toolResult" ? "tool" : m.role, text: textOf(m["content"]) })
const fromRequest = (r: RecordedRequest) =>
  (r.body as { messages: Array<{ role: string; content?: unknown }> }).messages
    .filter((m) => m.role !== "system" && m.role !== "developer")
    .map((m) => ({ role: m.role, text: textOf(m.content ?? "") }))

/** The conversation each turn's request carried, replayed from the turns alone. */
const replay = (turns: ReadonlyArray<TranscriptTurn>): ReadonlyArray<ReadonlyArray<TranscriptMessage>> => {
  let conversation: ReadonlyArray<TranscriptMessage> = []
  return turns.map((t) => {
    conversation = [...conversation.slice(0, t.compaction?.kept ?? conversation.length), ...t.messages]
    const sent = conversation
    conversation = t.answer === undefined ? conversation : [...conversation, t.answer]
    return sent
  })
}

describe("the kernel's transcript", () => {
  test("one turn per job request, replaying into exactly what the server was sent across compactions; secrets redacted", async () => {
    const endpoint = startTranscriptEndpoint()
    const { outcome, requests } = await runJob({ url: endpoint.url, token: TOKEN, transcript: true }, 12, 4000)
    expect(outcome._tag).toBe("Completed")
    const jobRequests = requests.filter((r) => !isSummaryRequest(r))
    // Each turn is posted twice: what the call sends, before it, then the same with the answer.
    expect(endpoint.turns.map((t) => [t.turn, t.answer !== undefined])).toEqual(
      jobRequests.flatMap((_, i) => [
        [i + 1, false],
        [i + 1, true]
      ])
    )
    const answered = endpoint.turns.filter((t) => t.answer !== undefined)
    for (const [i, t] of answered.entries()) {
      const { answer: _answer, ...sent } = t
      expect(endpoint.turns[2 * i]).toEqual(sent)
    }
    expect(new Set(endpoint.tokens)).toEqual(new Set([`Bearer ${TOKEN}`]))
    const sent = replay(answered)
    const redacted = (r: RecordedRequest) => fromRequest(r).map((m) => ({ ...m, text: m.text.split(TEST_API_KEY).join("[redacted]") }))
    for (const [i, r] of jobRequests.entries()) expect(sent[i]?.map(fromTranscript)).toEqual(redacted(r))
    // Compaction: at least one turn says what it kept and replaced, with the summary the model wrote.
    const compacted = endpoint.turns.filter((t) => t.compaction !== undefined)
    expect(compacted.length).toBeGreaterThanOrEqual(1)
    expect(compacted.some((t) => (t.compaction?.replaced ?? 0) > 0 && (t.compaction?.summaries.length ?? 0) > 0)).toBe(true)
    expect(compacted.flatMap((t) => t.compaction?.summaries ?? []).join("")).toContain("SUMMARY-")
    // The provider key a tool result held is redacted, as in events.
    const all = JSON.stringify(endpoint.turns)
    expect(all).not.toContain(TEST_API_KEY)
    expect(all).toContain("[redacted]")
    // The prefix hashes are the same on every turn.
    expect(new Set(endpoint.turns.map((t) => `${t.instructionsHash}/${t.toolsHash}`)).size).toBe(1)
  })

  test("a turn the worker refuses is reported by its status only and the job goes on", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      // Echoes what it got, as a decoder's message might.
      fetch: async (request) => Response.json({ text: `refused: ${await request.text()}`, isError: true }, { status: 400 })
    })
    cleanups.push(() => server.stop(true))
    const lines: Array<string> = []
    const model = createWindowedModel({ api: "openai-completions", window: 128_000, turn: () => ({ text: "done: nothing to read" }) })
    const scripted = await startOpenAIServer(model.steps)
    const dirs = createJobDirs(FILES)
    cleanups.push(
      () => scripted.stop(),
      () => dirs.cleanup()
    )
    const job = createJobSpec(dirs, { agent: { tools: ["read"] }, task: "Say PLUM-MARKER-55." })
    const outcome = await Effect.runPromise(
      Effect.gen(function* () {
        const handle = yield* (yield* AgentRuntime).start(job)
        yield* Stream.runDrain(handle.events)
        return yield* handle.result
      }).pipe(
        Effect.scoped,
        Effect.provide(
          KernelLive({
            providers: [createProvider(scripted, "openai-completions")],
            services: { url: `http://127.0.0.1:${server.port}/services`, token: TOKEN, transcript: true },
            diagnostics: (line) => lines.push(line)
          })
        )
      )
    )
    expect(outcome._tag).toBe("Completed")
    const reported = lines.filter((l) => l.includes("transcript turn"))
    // Both posts of the one turn (before the call and with its answer) were refused, and said so.
    expect(reported.length).toBe(2)
    for (const line of reported) expect(line).toContain("transcript turn 1 was not stored: the worker answered HTTP 400")
    expect(lines.join("\n")).not.toContain("PLUM-MARKER-55")
  })

  test("without services.transcript nothing is posted", async () => {
    const endpoint = startTranscriptEndpoint()
    const { outcome } = await runJob({ url: endpoint.url, token: TOKEN }, 2, 128_000)
    expect(outcome._tag).toBe("Completed")
    expect(endpoint.turns).toEqual([])
  })
})

describe("recordingTranscript over a scripted Llm", () => {
  const model = { id: "m", provider: "p", api: "openai-completions", contextWindow: 1000, maxTokens: 100 } as unknown as Model<Api>
  const answer = (text: string, stopReason: AssistantMessage["stopReason"] = "stop"): AssistantMessage => ({
    role: "assistant",
    content: [{ type: "text", text }],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
    },
    stopReason,
    ...(stopReason === "error" ? { errorMessage: "bad request" } : {}),
    timestamp: 0
  })

  test("a provider error is not a turn; the next answered call is turn 1 with every message so far", async () => {
    const scripted = [answer("", "error"), answer("first"), answer("second")]
    let n = 0
    const turns: Array<TranscriptTurn> = []
    const layer = LlmTest(model, () => Effect.succeed(scripted[n++] ?? answer("unscripted")), {
      baseDelayMs: 0,
      maxDelayMs: 0,
      maxRetries: 0
    }).pipe(
      Layer.provideMerge(Layer.effect(Limits.Limits, Limits.make({ timeoutSec: 100 }, { label: "p/m", contextWindow: 1000 }))),
      Layer.provideMerge(JobEvents.layerTest([])),
      Layer.provideMerge(Transcript.layerTest(turns))
    )
    const task: Message = { role: "user", content: "the task", timestamp: 0 }
    await Effect.runPromise(
      Effect.gen(function* () {
        const llm = yield* recordingTranscript(yield* Llm)
        const messages: Array<Message> = [task]
        expect((yield* llm.complete({ systemPrompt: "s", messages, tools: [] })).message.stopReason).toBe("error")
        const first = yield* llm.complete({ systemPrompt: "s", messages, tools: [] })
        messages.push(first.message, { role: "user", content: "go on", timestamp: 1 })
        yield* llm.complete({ systemPrompt: "s", messages, tools: [] })
      }).pipe(Effect.provide(layer))
    )
    // The failed call's request was posted as turn 1 unanswered; the retry posted it again, then answered.
    expect(
      turns.map((t) => [t.turn, t.messages.map((m) => m["content"]), t.answer === undefined ? null : textOf(t.answer["content"])])
    ).toEqual([
      [1, ["the task"], null],
      [1, ["the task"], null],
      [1, ["the task"], "first"],
      [2, ["go on"], null],
      [2, ["go on"], "second"]
    ])
    expect(turns.every((t) => t.compaction === undefined)).toBe(true)
  })
})
