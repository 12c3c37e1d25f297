/**
 * The MCP client and the job's MCP tools against real servers on 127.0.0.1: the reference
 * server-everything (Streamable HTTP) and an in-process SDK server for the edge cases.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Either, Exit } from "effect"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import type { McpServer } from "../../src/contract/JobSpec.ts"
import * as JobServices from "../../src/job/JobServices.ts"
import { connectMcp } from "../../src/tools/mcp/McpClient.ts"
import { checkInputSchema } from "../../src/tools/mcp/mcpResult.ts"
import { mcpGrantProblems, openMcpTools, type McpKernelTool } from "../../src/tools/mcp/mcpTools.ts"
import { startEverythingServer, startTestMcpServer, type RunningMcp, type TestMcp } from "../support/mcpServers.ts"

setDefaultTimeout(30_000)

const CANARY = "mcp-header-CANARY-7f3a9c21"

/** Every event the tools emitted (spans among them); the test JobEvents redacts nothing, so the scrubbing seen is the tool's own. */
const events: Array<JobEvent> = []
const spans = () => events.flatMap((e) => (e.type === "span" ? [{ name: e.name, attributes: e.attributes, ok: e.status === "ok" }] : []))
/** The per-job services of a tool call, with `remainingMs` left in the job. */
const services = (remainingMs = 600_000) =>
  JobServices.layerTest(
    { root: "/nonexistent", readOnly: ["/nonexistent"], outDir: "/nonexistent/out" },
    { remainingMs, deliver: (e) => void events.push(e) }
  )

/** Opens the tools of `grants` on `servers` and runs `use` with them; the connections close afterwards. */
const withTools = <A>(
  grants: ReadonlyArray<string>,
  servers: ReadonlyArray<McpServer>,
  use: (tools: ReadonlyArray<McpKernelTool>) => Promise<A>
) => Effect.runPromise(Effect.scoped(Effect.flatMap(openMcpTools(grants, servers), (tools) => Effect.promise(() => use(tools)))))

const refusal = (grants: ReadonlyArray<string>, servers: ReadonlyArray<McpServer>, discoveryMs?: number) =>
  Effect.runPromise(Effect.scoped(Effect.flip(openMcpTools(grants, servers, discoveryMs === undefined ? {} : { discoveryMs }))))

const run = (tool: McpKernelTool | undefined, args: Record<string, unknown> = {}, remainingMs?: number) => {
  if (tool === undefined) throw new Error("tool not offered")
  return Effect.runPromise(Effect.either(tool.execute(args)).pipe(Effect.provide(services(remainingMs))))
}

describe("against server-everything (Streamable HTTP, node)", () => {
  let everything: RunningMcp
  beforeAll(async () => {
    everything = await startEverythingServer()
  })
  afterAll(() => everything.stop())
  const server = (): McpServer => ({ name: "everything", url: everything.url, allowPrivateNetwork: true })

  test("a read-only tool runs; tools not marked read-only are not offered", async () => {
    await withTools(["mcp__everything__*"], [server()], async (tools) => {
      const names = tools.map((t) => t.name)
      expect(names).toContain("mcp__everything__echo")
      expect(names).toContain("mcp__everything__get-sum")
      expect(names).not.toContain("mcp__everything__toggle-simulated-logging")
      expect(tools.every((t) => t.readOnly)).toBe(true)
      const echo = await run(
        tools.find((t) => t.name === "mcp__everything__echo"),
        { message: "hello mcp" }
      )
      expect(echo).toEqual(Either.right({ text: "Echo: hello mcp" }))
      const image = await run(tools.find((t) => t.name === "mcp__everything__get-tiny-image"))
      expect(Either.isRight(image) && image.right.text).toMatch(/\[image: image\/png, \d+ bytes, not shown\]/)
    })
  })

  test("a tool the server does not mark read-only runs once an admin allowed it by name", async () => {
    await withTools(
      ["mcp__everything__toggle-simulated-logging"],
      [{ ...server(), allowedTools: ["toggle-simulated-logging"] }],
      async (tools) => {
        expect(tools.map((t) => t.name)).toEqual(["mcp__everything__toggle-simulated-logging"])
        expect(tools[0]!.readOnly).toBe(false)
        expect(Either.isRight(await run(tools[0]))).toBe(true)
      }
    )
  })

  test("granting such a tool by name without the admin's allowance refuses the job, saying why", async () => {
    const refused = await refusal(["mcp__everything__toggle-simulated-logging"], [server()])
    expect(refused.problems).toEqual([
      {
        path: "agent.tools.0",
        message:
          'MCP tool "toggle-simulated-logging" of server "everything" is not marked read-only by the server and an admin has not allowed it by name'
      }
    ])
  })

  test("bad arguments come back as a tool error, not a failure of the job", async () => {
    await withTools(["mcp__everything__get-sum"], [server()], async (tools) => {
      const r = await run(tools[0], { a: "x" })
      expect(Either.isLeft(r)).toBe(true)
    })
  })
})

describe("against an in-process SDK server", () => {
  let mcp: TestMcp
  beforeAll(() => {
    mcp = startTestMcpServer()
  })
  afterAll(() => mcp.stop())
  const server = (extra: Partial<McpServer> = {}): McpServer => ({ name: "kb", url: mcp.url, allowPrivateNetwork: true, ...extra })

  test("only read-only or admin-allowed tools are offered; names are namespaced in the model's charset", async () => {
    await withTools(["mcp__kb__*"], [server({ allowedTools: ["delete_item"] })], async (tools) => {
      expect(tools.map((t) => t.name)).toEqual([
        "mcp__kb__lookup",
        "mcp__kb__delete_item",
        "mcp__kb__whoami",
        "mcp__kb__hang",
        "mcp__kb__picture",
        "mcp__kb__big",
        "mcp__kb__fails",
        "mcp__kb__dotted_name"
      ])
    })
    await withTools(["mcp__kb__*"], [server()], async (tools) => {
      expect(tools.map((t) => t.name)).not.toContain("mcp__kb__delete_item")
      // A tool the model was never offered cannot be reached through the others.
      expect(mcp.calls).not.toContain("delete_item")
    })
  })

  test("the header reaches the server; its value never comes back in a result, an error or a span", async () => {
    events.length = 0
    await withTools(["mcp__kb__whoami", "mcp__kb__fails"], [server({ headers: { "X-Api-Key": CANARY } })], async (tools) => {
      const who = await run(tools[0])
      expect(mcp.requests.some((h) => h.get("x-api-key") === CANARY)).toBe(true)
      expect(who).toEqual(Either.right({ text: "key=[redacted]" }))
      const failed = await run(tools[1])
      expect(failed).toEqual(Either.left(expect.objectContaining({ message: "the wiki is down" })))
    })
    expect(JSON.stringify(events)).not.toContain(CANARY)
    expect(spans().map((s) => [s.name, s.attributes["server"], s.attributes["tool"], s.attributes["outcome"], s.ok])).toEqual([
      ["kintsugi.mcp", "kb", "whoami", "ok", true],
      ["kintsugi.mcp", "kb", "fails", "tool-error", false]
    ])
  })

  test("a hanging tool ends at the server's timeoutSec with a tool error", async () => {
    await withTools(["mcp__kb__hang"], [server({ timeoutSec: 1 })], async (tools) => {
      const r = await run(tools[0])
      expect(Either.isLeft(r) && r.left.message).toMatch(/^MCP server "kb": tool "hang" failed: .*timed out/i)
    })
  })

  test("a call never plans past the job's remaining time", async () => {
    await withTools(["mcp__kb__hang"], [server({ timeoutSec: 600 })], async (tools) => {
      const none = await run(tools[0], {}, 0)
      expect(none).toEqual(Either.left(expect.objectContaining({ message: "no time is left in the job for an MCP call" })))
      const r = await run(tools[0], {}, 1000)
      expect(Either.isLeft(r) && r.left.message).toMatch(/^MCP server "kb": tool "hang" failed: .*timed out/i)
    })
  })

  test("results: images summarised, long text cut like every tool result", async () => {
    await withTools(["mcp__kb__picture", "mcp__kb__big"], [server()], async ([picture, big]) => {
      expect(await run(picture)).toEqual(Either.right({ text: "a red dot:\n[image: image/png, 300 bytes, not shown]" }))
      const r = await run(big)
      expect(Either.isRight(r) && r.right.text).toMatch(
        /\[output cut at the 2000-line limit: showing 2000 of 5000 lines; ask the tool for less\]$/
      )
    })
  })

  test("a loopback URL is refused unless the admin allowed private networks for that server", async () => {
    const refused = await refusal(["mcp__kb__*"], [server({ allowPrivateNetwork: false })])
    expect(refused.problems).toEqual([
      {
        path: "mcp.servers.0",
        message: expect.stringMatching(
          /^MCP server "kb": cannot connect: the URL resolves to a non-public address \(127\.0\.0\.1 is a loopback address\)/
        )
      }
    ])
    const before = mcp.requests.length
    await refusal(["mcp__kb__*"], [server({ allowPrivateNetwork: false })])
    expect(mcp.requests.length).toBe(before)
  })

  test("a server that does not answer, a bad schema and an unknown tool are refused with every problem at once", async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => {} } })
    try {
      const refused = await refusal(
        ["mcp__kb__huge_schema", "mcp__kb__nope", "mcp__quiet__*"],
        [server(), { name: "quiet", url: `http://127.0.0.1:${silent.port}/mcp`, allowPrivateNetwork: true }],
        1000
      )
      expect(refused.problems).toEqual([
        { path: "mcp.servers.1", message: expect.stringMatching(/^MCP server "quiet": /) },
        { path: "agent.tools.0", message: 'MCP tool "huge_schema" of server "kb": its input schema is larger than 32 KiB' },
        { path: "agent.tools.1", message: 'MCP server "kb" has no tool "nope"' }
      ])
    } finally {
      silent.stop(true)
    }
  })

  test("a redirect to another origin is not followed", async () => {
    const redirect = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => new Response(null, { status: 307, headers: { location: mcp.url } })
    })
    try {
      const before = mcp.requests.length
      const refused = await refusal(
        ["mcp__r__*"],
        [{ name: "r", url: `http://127.0.0.1:${redirect.port}/mcp`, headers: { "X-Api-Key": CANARY }, allowPrivateNetwork: true }]
      )
      expect(refused.problems[0]?.path).toBe("mcp.servers.0")
      expect(JSON.stringify(refused)).not.toContain(CANARY)
      expect(mcp.requests.length).toBe(before)
    } finally {
      await redirect.stop(true)
    }
  })

  test("connect errors never carry a header value, even when the server echoes it", async () => {
    const echo = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => new Response(`bad key ${req.headers.get("x-api-key")}`, { status: 401 })
    })
    try {
      const exit = await Effect.runPromiseExit(
        Effect.scoped(
          connectMcp({ name: "e", url: `http://127.0.0.1:${echo.port}/mcp`, headers: { "X-Api-Key": CANARY }, allowPrivateNetwork: true })
        )
      )
      expect(Exit.isFailure(exit)).toBe(true)
      expect(JSON.stringify(exit)).not.toContain(CANARY)
      expect(JSON.stringify(exit)).toContain("[redacted]")
    } finally {
      await echo.stop(true)
    }
  })
})

describe("grants and schemas", () => {
  test("a grant naming a server the job does not list is a problem; so is a server listed twice", () => {
    expect(
      mcpGrantProblems(
        ["read", "mcp__x__*", "mcp__kb__lookup"],
        [
          { name: "kb", url: "http://kb.example/mcp" },
          { name: "kb", url: "http://kb2.example/mcp" }
        ]
      )
    ).toEqual([
      { path: "mcp.servers.1.name", message: 'MCP server "kb" is listed twice' },
      { path: "agent.tools.1", message: 'MCP server "x" is not among the job\'s mcp.servers' }
    ])
  })

  test("input schemas: object root, size and depth caps; $schema dropped", () => {
    expect(checkInputSchema({ $schema: "x", type: "object", properties: {} })).toEqual({ schema: { type: "object", properties: {} } })
    expect(checkInputSchema("x")).toEqual({ problem: "its input schema is not a JSON object" })
    expect(checkInputSchema({ type: "object", description: "x".repeat(40_000) })).toEqual({
      problem: "its input schema is larger than 32 KiB"
    })
    let deep: Record<string, unknown> = { type: "string" }
    for (let i = 0; i < 30; i++) deep = { type: "object", properties: { a: deep } }
    expect(checkInputSchema(deep)).toEqual({ problem: "its input schema is nested deeper than 24 levels" })
  })
})
