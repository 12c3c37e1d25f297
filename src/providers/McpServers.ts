/**
 * MCP servers (Settings → MCP servers): name, URL, headers (sealed, write-only), timeout and the
 * tools an administrator allowed by name. The URL policy runs at save; the job child runs it again
 * before it connects. The worker embeds the servers an agent names, headers decrypted, in the job's
 * stdin envelope only.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { decodeAll } from "../contract/Problem.ts"
import { connectMcp } from "../tools/mcp/McpClient.ts"
import { McpServerInvalid, McpServerNotFound, McpUnreachable } from "./errors.ts"
import { openHeaders, SecretBox, sealHeaders } from "./SecretBox.ts"
import { checkOutboundUrl } from "../net/urlPolicy.ts"
import { traced } from "../telemetry/traced.ts"

export const McpServerInput = Schema.Struct({
  name: Schema.String.pipe(Schema.pattern(/^[a-z][a-z0-9-]{0,63}$/, { message: () => "must match [a-z][a-z0-9-]* (at most 64 characters)" })),
  url: Schema.String,
  /** Absent on update keeps the stored headers. */
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9-]{1,64}$/)), value: Schema.String }), { exact: true }),
  timeoutSec: Schema.optionalWith(Schema.Number.pipe(Schema.int(), Schema.between(1, 600)), { exact: true, default: () => 30 }),
  allowedTools: Schema.optionalWith(Schema.Array(Schema.String), { exact: true, default: () => [] }),
  /** Lets the URL reach private addresses (an on-premises server); off by default. */
  allowPrivateNetwork: Schema.optionalWith(Schema.Boolean, { exact: true, default: () => false })
})

export interface McpServerView {
  readonly name: string
  readonly url: string
  readonly headerNames: ReadonlyArray<string>
  readonly timeoutSec: number
  readonly allowedTools: ReadonlyArray<string>
  readonly allowPrivateNetwork: boolean
  readonly updatedBy: string
  readonly updatedAt: Date
}

/** A tool as the server lists it now, and whether jobs are offered it. */
export interface McpToolView {
  readonly name: string
  readonly description: string
  /** The server marks it read-only (`annotations.readOnlyHint`). */
  readonly readOnly: boolean
  /** An admin allowed it by name (`allowedTools`). */
  readonly allowed: boolean
  /** A job granting the server gets it: read-only or allowed. */
  readonly offered: boolean
}

/** Bound on connecting and listing from the portal or API. */
const LIST_TIMEOUT_MS = 10_000

/** A server as the job child gets it: headers decrypted (stdin only). */
export interface McpServerConfig {
  readonly name: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly timeoutSec: number
  readonly allowedTools: ReadonlyArray<string>
  readonly allowPrivateNetwork: boolean
}

interface Row {
  readonly name: string
  readonly url: string
  readonly headersSealed: string | null
  readonly timeoutSec: number
  readonly allowedTools: ReadonlyArray<string>
  readonly allowPrivateNetwork: boolean
  readonly updatedBy: string
  readonly updatedAt: Date
}

/**
 * Names of the registered MCP servers, nothing else: no header is read or decrypted, so it needs no
 * secret key (the Agent Builder's check and `kintsugi agents validate`).
 */
export const selectMcpServerNames = Effect.flatMap(SqlClient, (sql) =>
  Effect.map(sql<{ readonly name: string }>`SELECT name FROM admin.mcp_server`, (rows): ReadonlySet<string> => new Set(rows.map((r) => r.name)))
)

export class McpServers extends Context.Tag("providers/McpServers")<
  McpServers,
  {
    readonly list: Effect.Effect<ReadonlyArray<McpServerView>>
    readonly get: (name: string) => Effect.Effect<McpServerView, McpServerNotFound>
    /** Creates or replaces a server; the URL policy runs first. */
    readonly put: (name: string, input: unknown, by: string) => Effect.Effect<McpServerView, McpServerInvalid>
    readonly remove: (name: string) => Effect.Effect<void, McpServerNotFound>
    /**
     * Connects with the stored headers (URL policy, pinned connection, no redirects, bounded) and lists
     * the server's tools. `McpUnreachable` says why not, never with a header value.
     */
    readonly listTools: (name: string) => Effect.Effect<ReadonlyArray<McpToolView>, McpServerNotFound | McpUnreachable>
    /** Adds `tool` to the allowed tools (or removes it); the other settings and the headers stay. */
    readonly allowTool: (name: string, tool: string, allowed: boolean, by: string) => Effect.Effect<McpServerView, McpServerNotFound | McpServerInvalid>
    /** The named servers with headers decrypted, for a job envelope. */
    readonly configs: (names: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<McpServerConfig>, McpServerNotFound>
  }
>() {}

export const makeMcpServers = Effect.gen(function* () {
  const sql = yield* SqlClient
  const box = yield* SecretBox
  const headersOf = (row: Pick<Row, "headersSealed">): Record<string, string> => openHeaders(box, row.headersSealed)
  const view = ({ headersSealed: _sealed, ...row }: Row): McpServerView => ({ ...row, headerNames: Object.keys(headersOf({ headersSealed: _sealed })).sort() })
  const rows = (name?: string) =>
    sql<Row>`SELECT name, url, headers_sealed, timeout_sec, allowed_tools, allow_private_network, updated_by, updated_at FROM admin.mcp_server
             ${name === undefined ? sql`` : sql`WHERE name = ${name}`} ORDER BY name`
  const one = (name: string) => Effect.flatMap(rows(name), (r) => (r[0] === undefined ? Effect.fail(new McpServerNotFound({ name })) : Effect.succeed(r[0])))

  const service: McpServers["Type"] = {
    list: Effect.map(rows(), (r) => r.map(view)).pipe(Effect.orDie),
    get: (name) => Effect.map(one(name), view).pipe(Effect.catchTag("SqlError", Effect.die)),
    put: (name, input, by) =>
      Effect.gen(function* () {
        const raw = input !== null && typeof input === "object" ? { ...(input as Record<string, unknown>), name } : input
        const decoded = decodeAll(McpServerInput)(raw)
        if (Either.isLeft(decoded)) return yield* Effect.fail(new McpServerInvalid({ problems: decoded.left }))
        const s = decoded.right
        const urlProblem = yield* Effect.promise(() => checkOutboundUrl(s.url, s.allowPrivateNetwork))
        if (urlProblem !== undefined) return yield* Effect.fail(new McpServerInvalid({ problems: [{ path: "url", message: urlProblem }] }))
        const existing = yield* rows(name)
        const headers = s.headers === undefined ? (existing[0]?.headersSealed ?? null) : sealHeaders(box, s.headers)
        yield* sql`INSERT INTO admin.mcp_server (name, url, headers_sealed, timeout_sec, allowed_tools, allow_private_network, updated_by)
          VALUES (${name}, ${s.url}, ${headers}, ${s.timeoutSec}, ${JSON.stringify(s.allowedTools)}::jsonb, ${s.allowPrivateNetwork}, ${by})
          ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, headers_sealed = EXCLUDED.headers_sealed, timeout_sec = EXCLUDED.timeout_sec,
            allowed_tools = EXCLUDED.allowed_tools, allow_private_network = EXCLUDED.allow_private_network,
            updated_by = EXCLUDED.updated_by, updated_at = now()`
        return view(yield* Effect.orDie(one(name)))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    remove: (name) =>
      Effect.gen(function* () {
        const deleted = yield* sql`DELETE FROM admin.mcp_server WHERE name = ${name} RETURNING name`
        if (deleted.length === 0) return yield* Effect.fail(new McpServerNotFound({ name }))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    listTools: (name) =>
      Effect.gen(function* () {
        const row = yield* one(name)
        const server = { name: row.name, url: row.url, headers: headersOf(row), allowPrivateNetwork: row.allowPrivateNetwork }
        const conn = yield* connectMcp(server, { timeoutMs: LIST_TIMEOUT_MS }).pipe(
          Effect.mapError((e) => new McpUnreachable({ name, problem: e.message, cause: e }))
        )
        return conn.tools.map((t): McpToolView => {
          const allowed = row.allowedTools.includes(t.name)
          return { name: t.name, description: t.description, readOnly: t.readOnly, allowed, offered: t.readOnly || allowed }
        })
      }).pipe(Effect.scoped, Effect.catchTag("SqlError", Effect.die)),
    allowTool: (name, tool, allowed, by) =>
      Effect.gen(function* () {
        if (tool.length === 0 || tool.length > 256 || /[\u0000-\u001f\u007f]/.test(tool)) {
          return yield* Effect.fail(new McpServerInvalid({ problems: [{ path: "tool", message: "must be a tool name of 1 to 256 characters without control characters" }] }))
        }
        const row = yield* one(name)
        const rest = row.allowedTools.filter((t) => t !== tool)
        const allowedTools = allowed ? [...rest, tool] : rest
        yield* sql`UPDATE admin.mcp_server SET allowed_tools = ${JSON.stringify(allowedTools)}::jsonb, updated_by = ${by}, updated_at = now()
          WHERE name = ${name}`
        return view(yield* one(name))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    configs: (names) =>
      Effect.forEach([...new Set(names)], (name) =>
        Effect.map(one(name), (row): McpServerConfig => ({
          name: row.name,
          url: row.url,
          headers: headersOf(row),
          timeoutSec: row.timeoutSec,
          allowedTools: row.allowedTools,
          allowPrivateNetwork: row.allowPrivateNetwork
        }))
      ).pipe(Effect.catchTag("SqlError", Effect.die))
  }
  return service
})

export const McpServersLive = Layer.effect(McpServers, Effect.map(makeMcpServers, (service) => traced("McpServers", service)))
