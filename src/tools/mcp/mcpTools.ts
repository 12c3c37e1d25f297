/**
 * MCP tools of one job: which servers the agent's `mcp__<server>__…` grants name, discovery at job
 * start (bounded, in parallel), and one KernelTool per offered tool. A tool is offered only when its
 * server marks it read-only or the admin allowed it by name; any other tool is never shown to the model.
 */
import { Duration, Effect, type Scope } from "effect"
import { JobRefused } from "../../contract/AgentRuntime.ts"
import type { McpServer } from "../../contract/JobSpec.ts"
import type { Problem } from "../../contract/Problem.ts"
import { JobEvents } from "../../job/JobEvents.ts"
import { Limits } from "../../job/Limits.ts"
import type { Resolver } from "../../net/urlPolicy.ts"
import { ToolError, type KernelTool } from "../Tool.ts"
import { connectMcp, DEFAULT_CALL_TIMEOUT_SEC, DEFAULT_DISCOVERY_MS, scrubber, type McpConnection, type McpToolInfo } from "./McpClient.ts"
import { checkInputSchema, cleanDescription, resultText } from "./mcpResult.ts"
import { mcpGrantProblems, mcpGrantsOf, type McpGrant } from "./mcpGrants.ts"

export { mcpGrantProblems } from "./mcpGrants.ts"

/** An offered MCP tool: the kernel tool plus what codemode needs to decide whether a script may call it. */
export interface McpKernelTool extends KernelTool {
  readonly server: string
  /** The tool's name on its server. */
  readonly mcpName: string
  /**
   * The server marks it read-only (as opposed to allowed by an admin by name): the kernel runs it
   * beside the turn's other read-only calls, and codemode scripts may call it.
   */
  readonly readOnly: boolean
}

/** Longest tool name every provider accepts; names use only [A-Za-z0-9_-]. */
const MAX_TOOL_NAME = 64

/** `mcp__<server>__<tool>` in the model-allowed charset; undefined when it would pass MAX_TOOL_NAME. */
export const mcpToolName = (server: string, tool: string): string | undefined => {
  const name = `mcp__${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, "_")
  return name.length > MAX_TOOL_NAME ? undefined : name
}

/** Why `tool` is not offered, or undefined when it is. */
const withheld = (server: McpServer, tool: McpToolInfo): string | undefined =>
  tool.readOnly || (server.allowedTools ?? []).includes(tool.name)
    ? undefined
    : `MCP tool "${tool.name}" of server "${server.name}" is not marked read-only by the server and an admin has not allowed it by name`

/**
 * One offered tool. Results and errors pass the job's redactor and this server's header scrubber
 * before the model sees them; each call runs in a `kintsugi.mcp` span, a child of the call's
 * `kintsugi.tool` span (JobEvents tracks the parent per fiber).
 */
const makeTool = (
  server: McpServer,
  conn: McpConnection,
  info: McpToolInfo,
  name: string,
  schema: Record<string, unknown>
): McpKernelTool => {
  const scrub = scrubber(server.headers)
  const timeoutMs = (server.timeoutSec ?? DEFAULT_CALL_TIMEOUT_SEC) * 1000
  return {
    name,
    server: server.name,
    mcpName: info.name,
    readOnly: info.readOnly,
    description: cleanDescription(info.description === "" ? `Tool "${info.name}" of the MCP server "${server.name}".` : info.description),
    parameters: schema,
    execute: (args) =>
      Effect.gen(function* () {
        const events = yield* JobEvents
        const limits = yield* Limits
        const clean = (text: string) => scrub(events.redact(text))
        const attributes: Record<string, string | number | boolean> = { server: server.name, tool: info.name }
        const run = Effect.gen(function* () {
          const budget = Math.min(timeoutMs, yield* limits.remainingMs)
          if (budget <= 0) return yield* Effect.fail(new ToolError({ message: "no time is left in the job for an MCP call" }))
          limits.progress()
          const result = yield* conn.call(info.name, args, budget).pipe(
            Effect.tapError(() => Effect.sync(() => (attributes["outcome"] = "failed"))),
            Effect.mapError((e) => new ToolError({ message: clean(`MCP server "${server.name}": ${e.message}`) }))
          )
          limits.progress()
          const text = clean(resultText(result))
          attributes["outcome"] = result.isError ? "tool-error" : "ok"
          if (result.isError) return yield* Effect.fail(new ToolError({ message: text }))
          return { text }
        })
        return yield* events.span("kintsugi.mcp", attributes, run)
      })
  }
}

/**
 * The offered tools of the granted servers, in grant order then listing order, or every problem:
 * a named grant whose tool the server lacks or does not offer, a tool whose schema fails the check or
 * whose name does not fit, two tools with one model-visible name. A `*` grant skips tools that are
 * not offered (withheld, bad schema, name too long) and lists them in `skipped`.
 */
export const makeMcpTools = (
  servers: ReadonlyArray<McpServer>,
  connections: ReadonlyMap<string, McpConnection>,
  grants: ReadonlyArray<McpGrant>
): { readonly tools: ReadonlyArray<McpKernelTool>; readonly problems: ReadonlyArray<Problem>; readonly skipped: ReadonlyArray<string> } => {
  const problems: Array<Problem> = []
  const skipped: Array<string> = []
  const tools: Array<McpKernelTool> = []
  const byName = new Map<string, { tool: McpKernelTool; index: number }>()
  for (const grant of grants) {
    const server = servers.find((s) => s.name === grant.server)
    const conn = connections.get(grant.server)
    if (server === undefined || conn === undefined) continue
    const path = `agent.tools.${grant.index}`
    const listed = grant.tool === "*" ? conn.tools : conn.tools.filter((t) => t.name === grant.tool)
    if (listed.length === 0 && grant.tool !== "*")
      problems.push({ path, message: `MCP server "${server.name}" has no tool "${grant.tool}"` })
    for (const info of listed) {
      const name = mcpToolName(server.name, info.name)
      const checked = checkInputSchema(info.inputSchema)
      const why =
        withheld(server, info) ??
        ("problem" in checked ? `MCP tool "${info.name}" of server "${server.name}": ${checked.problem}` : undefined) ??
        (name === undefined
          ? `MCP tool "${info.name}" of server "${server.name}": its name is longer than ${MAX_TOOL_NAME} characters as mcp__<server>__<tool>`
          : undefined)
      if (why !== undefined || name === undefined || "problem" in checked) {
        if (grant.tool === "*") skipped.push(why ?? info.name)
        else problems.push({ path, message: why ?? info.name })
        continue
      }
      const earlier = byName.get(name)
      if (earlier !== undefined) {
        // The same tool granted twice (by `*` and by name) is one tool; two tools on one name are refused.
        if (earlier.tool.server === server.name && earlier.tool.mcpName === info.name) continue
        problems.push({
          path,
          message: `MCP tools "${earlier.tool.server}/${earlier.tool.mcpName}" and "${server.name}/${info.name}" would both be called "${name}"`
        })
        continue
      }
      const tool = makeTool(server, conn, info, name, checked.schema)
      byName.set(name, { tool, index: grant.index })
      tools.push(tool)
    }
  }
  return { tools, problems, skipped }
}

export interface OpenMcpOptions {
  /** Bound on connecting and listing one server. Default DEFAULT_DISCOVERY_MS. */
  readonly discoveryMs?: number
  /** DNS seam for tests. */
  readonly resolve?: Resolver
  /** Where skipped tools are reported (never secrets). */
  readonly diagnostics?: (line: string) => void
}

/**
 * Connects to every server the grants name (in parallel, each bounded), lists their tools and builds
 * the offered ones. Connections close with `Scope`. Refuses with every problem at once: a server that
 * cannot be reached or listed (path `mcp.servers.<i>`), and the problems of `makeMcpTools`.
 */
export const openMcpTools = (
  tools: ReadonlyArray<string> | undefined,
  servers: ReadonlyArray<McpServer>,
  options: OpenMcpOptions = {}
): Effect.Effect<ReadonlyArray<McpKernelTool>, JobRefused, Scope.Scope> =>
  Effect.gen(function* () {
    // prepareJob checked these already; checked again so this never connects for a job it would refuse.
    const early = mcpGrantProblems(tools, servers)
    if (early.length > 0) return yield* Effect.fail(new JobRefused({ problems: early }))
    const grants = mcpGrantsOf(tools)
    const names = [...new Set(grants.map((g) => g.server))]
    if (names.length === 0) return []
    const discoveryMs = options.discoveryMs ?? DEFAULT_DISCOVERY_MS
    const results = yield* Effect.forEach(
      names,
      (name) => {
        const index = servers.findIndex((s) => s.name === name)
        const server = servers[index]!
        return connectMcp(server, { timeoutMs: discoveryMs, ...(options.resolve === undefined ? {} : { resolve: options.resolve }) }).pipe(
          Effect.timeout(Duration.millis(discoveryMs + 2000)),
          Effect.map((conn) => ({ name, conn, problem: undefined })),
          Effect.catchAll((e) =>
            Effect.succeed({
              name,
              conn: undefined,
              problem: {
                path: `mcp.servers.${index}`,
                message: `MCP server "${name}": ${"message" in e ? e.message : "no answer in time"}`
              }
            })
          )
        )
      },
      { concurrency: "unbounded" }
    )
    const connections = new Map(results.flatMap((r) => (r.conn === undefined ? [] : [[r.name, r.conn] as const])))
    const made = makeMcpTools(servers, connections, grants)
    const problems = [...results.flatMap((r) => (r.problem === undefined ? [] : [r.problem])), ...made.problems]
    if (problems.length > 0) return yield* Effect.fail(new JobRefused({ problems }))
    for (const s of made.skipped) options.diagnostics?.(`not offered: ${s}`)
    return made.tools
  })
