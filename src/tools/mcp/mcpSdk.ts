/**
 * The parts of the MCP SDK the MCP tools use, in one module of their own that imports nothing of ours:
 * McpClient.ts loads it at a job's first MCP server, and the job child's bundle builds it (with the SDK,
 * zod and ajv behind it) into a bytecode bundle of its own (jobChildBuild.ts LAZY_LEAVES), so a child
 * loads that code only when a job has MCP servers.
 */
export { Client } from "@modelcontextprotocol/sdk/client/index.js"
export { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
