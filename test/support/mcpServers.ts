/**
 * MCP servers for tests on 127.0.0.1: the reference server (@modelcontextprotocol/server-everything,
 * Streamable HTTP, run with node and a scrubbed environment) and an in-process SDK server whose tools
 * cover the edge cases (read-only or not, a hanging tool, header echo, images, bad schemas).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { createServer } from "node:net"
import { join } from "node:path"

const EVERYTHING = join(import.meta.dir, "..", "..", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")

export interface RunningMcp {
  readonly url: string
  readonly stop: () => Promise<void>
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const srv = createServer()
    srv.once("error", reject)
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })

/** The reference server is a node program: `node` when installed, else bun runs it. */
const runtimeFor = (): string => Bun.which("node") ?? process.execPath

/**
 * Starts server-everything in Streamable HTTP mode on a random port. It binds every interface and has
 * a tool that prints its environment, so it gets an empty environment but PATH and PORT.
 */
export const startEverythingServer = async (): Promise<RunningMcp> => {
  const port = await freePort()
  const proc = Bun.spawn([runtimeFor(), EVERYTHING, "streamableHttp"], {
    env: { PATH: "/usr/bin:/bin", PORT: String(port) },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe"
  })
  let seen = ""
  const decoder = new TextDecoder()
  const reader = proc.stderr.getReader()
  while (!seen.includes(`listening on port ${port}`)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`server-everything did not start: ${seen.slice(0, 500)}`)
    seen += decoder.decode(value, { stream: true })
  }
  // Keep draining its log so it never blocks on a full pipe.
  void (async () => {
    while (!(await reader.read()).done) {}
  })()
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stop: async () => {
      proc.kill("SIGKILL")
      await proc.exited
    }
  }
}

export interface TestToolDef {
  readonly name: string
  readonly readOnly?: boolean
  readonly description?: string
  readonly inputSchema?: unknown
  readonly handler?: (
    args: Record<string, unknown>,
    ctx: { headers: Headers; signal: AbortSignal }
  ) => Promise<{ content: Array<Record<string, unknown>>; isError?: boolean }>
}

export interface TestMcp extends RunningMcp {
  /** Headers of every HTTP request the server received, in order. */
  readonly requests: Array<Headers>
  /** Names of the tools called, in order. */
  readonly calls: Array<string>
}

const text = (t: string) => ({ content: [{ type: "text", text: t }] })
const OBJECT = { type: "object", properties: { q: { type: "string", description: "what to look up" } } }

/** The default tool set of the in-process server. */
export const defaultTools = (): ReadonlyArray<TestToolDef> => [
  { name: "lookup", readOnly: true, description: "Looks a word up.", handler: async (a) => text(`found: ${String(a["q"])}`) },
  { name: "delete_item", readOnly: false, description: "Deletes an item.", handler: async () => text("deleted") },
  {
    name: "whoami",
    readOnly: true,
    description: "Says which key the request carried.",
    handler: async (_a, c) => text(`key=${c.headers.get("x-api-key") ?? "none"}`)
  },
  {
    name: "hang",
    readOnly: true,
    description: "Never answers.",
    handler: (_a, c) => new Promise((resolve) => c.signal.addEventListener("abort", () => resolve(text("cancelled")), { once: true }))
  },
  {
    name: "picture",
    readOnly: true,
    handler: async () => ({
      content: [
        { type: "text", text: "a red dot:" },
        { type: "image", mimeType: "image/png", data: Buffer.alloc(300).toString("base64") }
      ]
    })
  },
  { name: "big", readOnly: true, handler: async () => text(Array.from({ length: 5000 }, (_, i) => `line ${i}`).join("\n")) },
  { name: "fails", readOnly: true, handler: async () => ({ ...text("the wiki is down"), isError: true }) },
  { name: "huge_schema", readOnly: true, inputSchema: { type: "object", description: "x".repeat(40_000) } },
  { name: "dotted.name", readOnly: true, handler: async () => text("dotted") }
]

/**
 * An in-process MCP server (the SDK's low-level Server over the web-standard Streamable HTTP
 * transport, stateless) on 127.0.0.1 with `tools`.
 */
export const startTestMcpServer = (tools: ReadonlyArray<TestToolDef> = defaultTools()): TestMcp => {
  const requests: Array<Headers> = []
  const calls: Array<string> = []
  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (req) => {
      requests.push(req.headers)
      const server = new Server({ name: "test-mcp", version: "1.0.0" }, { capabilities: { tools: {} } })
      server.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: tools.map((t) => ({
          name: t.name,
          description: t.description,
          inputSchema: t.inputSchema ?? OBJECT,
          ...(t.readOnly === undefined ? {} : { annotations: { readOnlyHint: t.readOnly } })
        }))
      }))
      server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
        const tool = tools.find((t) => t.name === request.params.name)
        calls.push(request.params.name)
        if (tool?.handler === undefined) return { ...text(`no tool ${request.params.name}`), isError: true }
        return tool.handler(request.params.arguments ?? {}, { headers: req.headers, signal: extra.signal })
      })
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      await server.connect(transport)
      return transport.handleRequest(req)
    }
  })
  return {
    url: `http://127.0.0.1:${http.port}/mcp`,
    requests,
    calls,
    stop: async () => {
      await http.stop(true)
    }
  }
}
