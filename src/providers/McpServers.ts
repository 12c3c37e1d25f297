/**
 * MCP servers (Settings → MCP servers): name, URL, headers (sealed, write-only), timeout and the
 * tools an administrator allowed by name. The URL policy runs at save; the job child runs it again
 * before it connects. The worker embeds the servers an agent names, headers decrypted, in the job's
 * stdin envelope only.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Option, Schema } from "effect"
import { decodeAll } from "../contract/Problem.ts"
import { decodeRows, Jsonb, Timestamp } from "../db/rowSchema.ts"
import { type StoreError, storeMethod } from "../db/StoreError.ts"
import { connectMcp } from "../tools/mcp/McpClient.ts"
import { McpServerInvalid, McpServerNotFound, McpUnreachable } from "./errors.ts"
import { openHeaders, SecretBox, sealHeaders } from "./SecretBox.ts"
import { checkOutboundUrl } from "../net/urlPolicy.ts"
import { traced } from "../telemetry/traced.ts"

const ServerName = Schema.Struct({
  name: Schema.String.pipe(
    Schema.pattern(/^[a-z][a-z0-9-]{0,63}$/, { message: () => "must match [a-z][a-z0-9-]* (at most 64 characters)" })
  )
})

/** A PUT's body: the server's settings; its name is the route's (a `name` in the body is accepted and ignored). */
const McpServerBody = Schema.Struct({
  name: Schema.optionalWith(Schema.Unknown, { exact: true }),
  url: Schema.String,
  /** Absent on update keeps the stored headers. */
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9-]{1,64}$/)), value: Schema.String }), {
    exact: true
  }),
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

const Row = Schema.Struct({
  name: Schema.String,
  url: Schema.String,
  headersSealed: Schema.NullOr(Schema.String),
  timeoutSec: Schema.Number,
  allowedTools: Jsonb(Schema.Array(Schema.String)),
  allowPrivateNetwork: Schema.Boolean,
  updatedBy: Schema.String,
  updatedAt: Timestamp
})
type Row = typeof Row.Type
const serverRows = decodeRows(Row)
const nameRows = decodeRows(Schema.Struct({ name: Schema.String }))

/**
 * Names of the registered MCP servers, nothing else: no header is read or decrypted, so it needs no
 * secret key (the Agent Builder's check and `kintsugi agents validate`).
 */
export const selectMcpServerNames = Effect.flatMap(SqlClient, (sql) =>
  Effect.map(nameRows(sql`SELECT name FROM admin.mcp_server`), (rows): ReadonlySet<string> => new Set(rows.map((r) => r.name)))
)

export class McpServers extends Context.Tag("providers/McpServers")<
  McpServers,
  {
    readonly list: Effect.Effect<ReadonlyArray<McpServerView>, StoreError>
    readonly get: (name: string) => Effect.Effect<McpServerView, McpServerNotFound | StoreError>
    /** Creates or replaces the server `name` from the settings in `input`; the URL policy runs first. */
    readonly put: (name: string, input: unknown, by: string) => Effect.Effect<McpServerView, McpServerInvalid | StoreError>
    readonly remove: (name: string) => Effect.Effect<void, McpServerNotFound | StoreError>
    /**
     * Connects with the stored headers (URL policy, pinned connection, no redirects, bounded) and lists
     * the server's tools. `McpUnreachable` says why not, never with a header value.
     */
    readonly listTools: (name: string) => Effect.Effect<ReadonlyArray<McpToolView>, McpServerNotFound | McpUnreachable | StoreError>
    /** Adds `tool` to the allowed tools (or removes it); the other settings and the headers stay. */
    readonly allowTool: (
      name: string,
      tool: string,
      allowed: boolean,
      by: string
    ) => Effect.Effect<McpServerView, McpServerNotFound | McpServerInvalid | StoreError>
    /** The named servers with headers decrypted, for a job envelope. */
    readonly configs: (names: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<McpServerConfig>, McpServerNotFound | StoreError>
  }
>() {}

const decodeName = decodeAll(ServerName)
const decodeBody = decodeAll(McpServerBody)

export const makeMcpServers = Effect.gen(function* () {
  const sql = yield* SqlClient
  const box = yield* SecretBox
  const headersOf = (row: Pick<Row, "headersSealed">): Record<string, string> => openHeaders(box, row.headersSealed)
  const view = ({ headersSealed: _sealed, ...row }: Row): McpServerView => ({
    ...row,
    headerNames: Object.keys(headersOf({ headersSealed: _sealed })).sort()
  })
  const rows = (name?: string) =>
    serverRows(sql`SELECT name, url, headers_sealed, timeout_sec, allowed_tools, allow_private_network, updated_by, updated_at FROM admin.mcp_server
             ${name === undefined ? sql`` : sql`WHERE name = ${name}`} ORDER BY name`)
  const one = (name: string) =>
    Effect.flatMap(rows(name), (r) => (r[0] === undefined ? Effect.fail(new McpServerNotFound({ name })) : Effect.succeed(r[0])))

  const service: McpServers["Type"] = {
    list: storeMethod("McpServers.list", () => Effect.map(rows(), (r) => r.map(view)))(),
    get: storeMethod("McpServers.get", (name: string) => Effect.map(one(name), view)),
    put: storeMethod("McpServers.put", (name: string, input: unknown, by: string) =>
      Effect.gen(function* () {
        const named = decodeName({ name })
        const decoded = decodeBody(input)
        if (Either.isLeft(named) || Either.isLeft(decoded)) {
          return yield* Effect.fail(
            new McpServerInvalid({
              problems: [
                ...Either.getLeft(named).pipe(Option.getOrElse(() => [])),
                ...Either.getLeft(decoded).pipe(Option.getOrElse(() => []))
              ]
            })
          )
        }
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
        // The row was written just before: McpServerNotFound here would be a defect.
        return view(yield* Effect.orDie(one(name)))
      })
    ),
    remove: storeMethod("McpServers.remove", (name: string) =>
      Effect.gen(function* () {
        const deleted = yield* sql`DELETE FROM admin.mcp_server WHERE name = ${name} RETURNING name`
        if (deleted.length === 0) return yield* Effect.fail(new McpServerNotFound({ name }))
      })
    ),
    listTools: storeMethod("McpServers.listTools", (name: string) =>
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
      }).pipe(Effect.scoped)
    ),
    allowTool: storeMethod("McpServers.allowTool", (name: string, tool: string, allowed: boolean, by: string) =>
      Effect.gen(function* () {
        if (tool.length === 0 || tool.length > 256 || /[\u0000-\u001f\u007f]/.test(tool)) {
          return yield* Effect.fail(
            new McpServerInvalid({
              problems: [{ path: "tool", message: "must be a tool name of 1 to 256 characters without control characters" }]
            })
          )
        }
        const row = yield* one(name)
        const rest = row.allowedTools.filter((t) => t !== tool)
        const allowedTools = allowed ? [...rest, tool] : rest
        yield* sql`UPDATE admin.mcp_server SET allowed_tools = ${JSON.stringify(allowedTools)}::jsonb, updated_by = ${by}, updated_at = now()
          WHERE name = ${name}`
        return view(yield* one(name))
      })
    ),
    configs: storeMethod("McpServers.configs", (names: ReadonlyArray<string>) =>
      Effect.forEach([...new Set(names)], (name) =>
        Effect.map(
          one(name),
          (row): McpServerConfig => ({
            name: row.name,
            url: row.url,
            headers: headersOf(row),
            timeoutSec: row.timeoutSec,
            allowedTools: row.allowedTools,
            allowPrivateNetwork: row.allowPrivateNetwork
          })
        )
      )
    )
  }
  return service
})

export const McpServersLive = Layer.effect(
  McpServers,
  Effect.map(makeMcpServers, (service) => traced("McpServers", service))
)
