/**
 * Proves the scripted OpenAI and Anthropic servers speak their wire formats well enough for pi-ai's
 * real HTTP clients: tool calls, text, thinking, usage and cost, HTTP errors, overflow, stalls, recording.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import {
  isContextOverflow,
  type Api,
  type AssistantMessage,
  type AssistantMessageEvent,
  type Context,
  type ModelsSimpleStreamOptions,
  type Tool
} from "@earendil-works/pi-ai"
import { createAnthropicPiModels, createOpenAIPiModels, SCRIPTED_MODEL_COST, type PiModelsFixture } from "./piModels.ts"
import { startAnthropicServer, startOpenAIServer, type ScriptedServer, type Step } from "./scriptedServers.ts"
import { within } from "./waitFor.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

type Flavour = {
  readonly name: string
  readonly start: (steps: ReadonlyArray<Step>) => Promise<ScriptedServer>
  readonly build: (baseUrl: string) => PiModelsFixture<Api>
  /** A realistic context-overflow 400 body for this provider. */
  readonly overflowBody: object
  /** The key as the server sees it. */
  readonly keyHeader: (headers: Readonly<Record<string, string>>) => string | undefined
}

const flavours: ReadonlyArray<Flavour> = [
  {
    name: "openai",
    start: startOpenAIServer,
    build: (baseUrl) => createOpenAIPiModels(baseUrl),
    overflowBody: { error: { message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens." } },
    keyHeader: (h) => h["authorization"]?.replace(/^Bearer /, "")
  },
  {
    name: "anthropic",
    start: startAnthropicServer,
    build: (baseUrl) => createAnthropicPiModels(baseUrl),
    overflowBody: {
      type: "error",
      error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" }
    },
    keyHeader: (h) => h["x-api-key"]
  }
]

const weatherTool: Tool = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string", description: "City name" } }, required: ["city"] }
}

const context: Context = {
  systemPrompt: "You are a scripted-test assistant.",
  messages: [{ role: "user", content: "What is the weather in Paris?", timestamp: Date.now() }],
  tools: [weatherTool]
}

const servers: Array<ScriptedServer> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()))
})

const setup = async (flavour: Flavour, steps: ReadonlyArray<Step>) => {
  const server = await flavour.start(steps)
  servers.push(server)
  return { server, fx: flavour.build(server.baseUrl) }
}

type Run = { readonly events: ReadonlyArray<AssistantMessageEvent>; readonly message: AssistantMessage }

const run = async (
  fx: PiModelsFixture<Api>,
  options: ModelsSimpleStreamOptions = {},
  onEvent: (event: AssistantMessageEvent) => void = () => {}
): Promise<Run> => {
  const stream = fx.models.streamSimple(fx.model, context, { cacheRetention: "none", ...options })
  const events: Array<AssistantMessageEvent> = []
  for await (const event of stream) {
    events.push(event)
    onEvent(event)
  }
  return { events, message: await stream.result() }
}

const bodyOf = (server: ScriptedServer, index: number): Record<string, unknown> => {
  const body = server.requests[index]?.body
  if (typeof body !== "object" || body === null) throw new Error(`request ${index} has no JSON body`)
  return body as Record<string, unknown>
}

for (const flavour of flavours) {
  describe(`scripted ${flavour.name} server through pi-ai`, () => {
    test("a tool-call turn yields a parsed toolCall block and stopReason toolUse", async () => {
      const { server, fx } = await setup(flavour, [
        { kind: "turn", toolCalls: [{ id: "call-1", name: "get_weather", arguments: { city: "Paris" } }], chunkSize: 4 }
      ])
      const { events, message } = await run(fx)
      expect(message.stopReason).toBe("toolUse")
      expect(message.content).toEqual([{ type: "toolCall", id: "call-1", name: "get_weather", arguments: { city: "Paris" } }])
      expect(events.filter((e) => e.type === "toolcall_delta").length).toBeGreaterThan(1)
      expect(events.at(-1)?.type).toBe("done")
      expect(server.remaining()).toBe(0)
    })

    test("raw invalid argument text is streamed verbatim and surfaces as argumentsError", async () => {
      const { fx } = await setup(flavour, [{ kind: "turn", toolCalls: [{ name: "get_weather", arguments: '{"city": "Par' }] }])
      const { events, message } = await run(fx)
      const deltas = events.flatMap((e) => (e.type === "toolcall_delta" ? [e.delta] : []))
      expect(deltas.join("")).toBe('{"city": "Par')
      const call = message.content[0]
      expect(call?.type === "toolCall" ? call.argumentsError : undefined).toBeString()
    })

    test("thinking, text, usage and cost map onto the assistant message", async () => {
      const usage = { input: 100, output: 20, cacheRead: 40, cacheWrite: 10 }
      const { fx } = await setup(flavour, [{ kind: "turn", thinking: "Check the sky.", text: "Sunny in Paris.", usage }])
      const { message } = await run(fx)
      expect(message.stopReason).toBe("stop")
      expect(message.content.map((b) => b.type)).toEqual(["thinking", "text"])
      expect(message.content[0]).toMatchObject({ type: "thinking", thinking: "Check the sky." })
      expect(message.content[1]).toMatchObject({ type: "text", text: "Sunny in Paris." })
      expect(message.usage).toMatchObject({ ...usage, totalTokens: 170 })
      const c = SCRIPTED_MODEL_COST
      const expected = (100 * c.input + 20 * c.output + 40 * c.cacheRead + 10 * c.cacheWrite) / 1_000_000
      expect(message.usage.cost.total).toBeCloseTo(expected, 12)
    })

    test("finish length maps to stopReason length", async () => {
      const { fx } = await setup(flavour, [{ kind: "turn", text: "Cut sh", finish: "length" }])
      expect((await run(fx)).message.stopReason).toBe("length")
    })

    test("an HTTP 500 ends the stream with only an error event", async () => {
      const { fx } = await setup(flavour, [{ kind: "http-error", status: 500, body: { error: { message: "upstream exploded" } } }])
      const { events, message } = await run(fx)
      expect(events.map((e) => e.type)).toEqual(["error"])
      expect(message.stopReason).toBe("error")
      expect(message.errorMessage).toContain("upstream exploded")
    })

    test("delayMs spaces the streamed frames", async () => {
      const { fx } = await setup(flavour, [{ kind: "turn", text: "abcdef", chunkSize: 2, delayMs: 25 }])
      const started = performance.now()
      const { events, message } = await run(fx)
      expect(performance.now() - started).toBeGreaterThanOrEqual(75)
      expect(events.filter((e) => e.type === "text_delta").map((e) => (e.type === "text_delta" ? e.delta : ""))).toEqual(["ab", "cd", "ef"])
      expect(message.content[0]).toMatchObject({ type: "text", text: "abcdef" })
    })

    test("a context-length 400 is recognised by isContextOverflow", async () => {
      const { fx } = await setup(flavour, [{ kind: "http-error", status: 400, body: flavour.overflowBody }])
      const { message } = await run(fx)
      expect(message.stopReason).toBe("error")
      expect(isContextOverflow(message)).toBe(true)
    })

    test("a 429 with retry-after is retried when the caller allows it", async () => {
      const { server, fx } = await setup(flavour, [
        { kind: "http-error", status: 429, body: { error: { message: "slow down" } }, headers: { "retry-after": "0" } },
        { kind: "turn", text: "ok" }
      ])
      const { message } = await run(fx, { maxRetries: 1 })
      expect(message.stopReason).toBe("stop")
      expect(server.requests.length).toBe(2)
    })

    test("aborting during a stall ends the stream as aborted, keeping partial text", async () => {
      const { server, fx } = await setup(flavour, [{ kind: "stall", afterText: "Partial" }])
      const controller = new AbortController()
      const { message } = await run(fx, { signal: controller.signal }, (e) => {
        if (e.type === "text_delta") controller.abort()
      })
      expect(message.stopReason).toBe("aborted")
      expect(message.content[0]).toMatchObject({ type: "text", text: "Partial" })
      // The stall lasts until the client leaves: a stop that waited for it would never end.
      await within(server.stop(), { what: "stop() during a stall", timeoutMs: 10_000 })
    })

    test("stop() closes a silent stall promptly and the client sees an error", async () => {
      const { server, fx } = await setup(flavour, [{ kind: "stall" }])
      const { promise: headersArrived, resolve } = Promise.withResolvers<void>()
      const result = run(fx, {}, (e) => {
        if (e.type === "start") resolve()
      })
      await headersArrived
      await within(server.stop(), { what: "stop() during a silent stall", timeoutMs: 10_000 })
      const { events, message } = await within(result, { what: "the client's end after stop()", timeoutMs: 10_000 })
      expect(events.map((e) => e.type)).toEqual(["start", "error"])
      expect(message.stopReason).toBe("error")
    })

    test("requests carry the key, system prompt and tool definitions", async () => {
      const { server, fx } = await setup(flavour, [{ kind: "turn", text: "hi" }])
      await run(fx)
      const request = server.requests[0]
      expect(request?.method).toBe("POST")
      expect(flavour.keyHeader(request?.headers ?? {})).toBe(fx.apiKey)
      expect(request?.rawBody).toContain("You are a scripted-test assistant.")
      const tools = JSON.stringify(bodyOf(server, 0)["tools"])
      expect(tools).toContain("get_weather")
      expect(tools).toContain("City name")
    })

    test("the key is readable by name but never printed: inspect, JSON, spread and every error answer leave it out", async () => {
      const { server, fx } = await setup(flavour, [
        {
          kind: "fn",
          respond: (req) => {
            throw new Error(`cannot answer ${JSON.stringify(req)} / ${Bun.inspect(req)}`)
          }
        }
      ])
      const failed = await run(fx)
      const exhausted = await run(fx)
      const stray = await fetch(`${server.baseUrl}/nowhere?key=${fx.apiKey}`, {
        headers: { authorization: `Bearer ${fx.apiKey}`, "x-api-key": fx.apiKey }
      })
      expect(flavour.keyHeader(server.requests[0]?.headers ?? {})).toBe(fx.apiKey)
      expect(server.requests[2]?.headers["x-api-key"]).toBe(fx.apiKey)
      const printed = [
        Bun.inspect(server.requests),
        JSON.stringify(server.requests),
        JSON.stringify(server.requests.map((r) => ({ ...r.headers }))),
        failed.message.errorMessage ?? "",
        exhausted.message.errorMessage ?? "",
        await stray.text()
      ]
      expect(printed[3]).toContain("cannot answer")
      expect(printed[4]).toContain("script exhausted")
      for (const text of printed) expect(text).not.toContain(fx.apiKey)
    })

    test("an fn step answers from the recorded request", async () => {
      const { fx } = await setup(flavour, [
        { kind: "fn", respond: (req) => ({ kind: "turn", text: req.rawBody.includes("Paris") ? "saw Paris" : "no Paris" }) }
      ])
      expect((await run(fx)).message.content[0]).toMatchObject({ type: "text", text: "saw Paris" })
    })

    test("an exhausted script answers 500 script exhausted", async () => {
      const { server, fx } = await setup(flavour, [{ kind: "turn", text: "one" }])
      expect((await run(fx)).message.stopReason).toBe("stop")
      const { message } = await run(fx)
      expect(message.stopReason).toBe("error")
      expect(message.errorMessage).toContain("script exhausted")
      expect(server.remaining()).toBe(0)
      server.append({ kind: "turn", text: "two" })
      expect((await run(fx)).message.content[0]).toMatchObject({ type: "text", text: "two" })
    })
  })
}

describe("scripted server edges", () => {
  test("OpenAI usage reports cached and cache-write tokens inside prompt_tokens", async () => {
    const server = await startOpenAIServer([{ kind: "turn", text: "x", usage: { input: 5, output: 2, cacheRead: 3, cacheWrite: 4 } }])
    servers.push(server)
    const response = await fetch(`${server.baseUrl}/chat/completions`, { method: "POST", body: JSON.stringify({ model: "m" }) })
    const text = await response.text()
    expect(text).toContain('"prompt_tokens":12')
    expect(text).toContain('"cached_tokens":3,"cache_write_tokens":4')
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true)
  })

  test("an unexpected path is recorded and answered 404 without consuming a step", async () => {
    const server = await startAnthropicServer([{ kind: "turn", text: "x" }])
    servers.push(server)
    const response = await fetch(`${server.baseUrl}/v1/models`)
    expect(response.status).toBe(404)
    expect(server.requests.map((r) => r.path)).toEqual(["/v1/models"])
    expect(server.remaining()).toBe(1)
  })
})
