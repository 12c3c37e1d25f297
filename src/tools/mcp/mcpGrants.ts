/**
 * The MCP grants of a job's `agent.tools` (`mcp__<server>__<tool|*>`) and their problems against the
 * job's servers: what prepareJob checks of every job. Apart from mcpTools.ts (discovery, the tools
 * themselves), so a job child whose job names no MCP server never loads the MCP client.
 */
import { MCP_GRANT } from "../../contract/AgentDefinition.ts"
import type { McpServer } from "../../contract/JobSpec.ts"
import type { Problem } from "../../contract/Problem.ts"

/** One `mcp__<server>__<tool|*>` entry of `agent.tools`. */
export interface McpGrant {
  readonly index: number
  readonly server: string
  /** A tool name, or "*" for every offered tool of the server. */
  readonly tool: string
}

export const mcpGrantsOf = (tools: ReadonlyArray<string> | undefined): ReadonlyArray<McpGrant> =>
  (tools ?? []).flatMap((name, index) => {
    const m = MCP_GRANT.exec(name)
    return m === null ? [] : [{ index, server: m[1]!, tool: m[2]! }]
  })

/**
 * Problems of the grants against the job's servers, before anything connects: a grant naming a
 * server that is not in `mcp.servers`, and server names listed twice.
 */
export const mcpGrantProblems = (
  tools: ReadonlyArray<string> | undefined,
  servers: ReadonlyArray<McpServer> | undefined
): Array<Problem> => {
  const problems: Array<Problem> = []
  const serverNames = (servers ?? []).map((s) => s.name)
  serverNames.forEach((name, i) => {
    if (serverNames.indexOf(name) !== i) problems.push({ path: `mcp.servers.${i}.name`, message: `MCP server "${name}" is listed twice` })
  })
  for (const g of mcpGrantsOf(tools)) {
    if (!serverNames.includes(g.server)) {
      problems.push({ path: `agent.tools.${g.index}`, message: `MCP server "${g.server}" is not among the job's mcp.servers` })
    }
  }
  return problems
}
