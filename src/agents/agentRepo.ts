/**
 * SQL of the agent store: custom agents, their immutable versions and the version counter. Every
 * function needs a `SqlClient`; rows are decoded by Schema, and SqlError and ParseError stay typed here.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Schema } from "effect"
import { decodeRows, Jsonb, Timestamp } from "../db/rowSchema.ts"
import { AgentPackage } from "./AgentPackage.ts"
import { insertEntry } from "./catalogEntries.ts"

const AgentHeadRow = Schema.Struct({
  name: Schema.String,
  enabled: Schema.Boolean,
  audience: Schema.Literal("runtime", "member"),
  currentVersion: Schema.Number,
  updatedAt: Timestamp
})

const AgentRowSchema = Schema.Struct({ ...AgentHeadRow.fields, package: Jsonb(AgentPackage) })
export type AgentRow = typeof AgentRowSchema.Type

const VersionRowSchema = Schema.Struct({
  version: Schema.Number,
  savedBy: Schema.String,
  savedAt: Timestamp,
  note: Schema.String,
  /** The author's words about the save ('' = none). */
  changeNote: Schema.String
})
export type VersionRow = typeof VersionRowSchema.Type

const RestoreRowSchema = Schema.Struct({
  fromVersion: Schema.Number,
  toVersion: Schema.Number,
  restoredBy: Schema.String,
  restoredAt: Timestamp
})
export type RestoreRow = typeof RestoreRowSchema.Type

const NameRow = Schema.Struct({ name: Schema.String })
const names = decodeRows(NameRow)
const agentRows = decodeRows(AgentRowSchema)

/** Current version of every custom agent (or one), package included. */
export const selectAgents = (name?: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    agentRows(sql`
        SELECT a.name, a.enabled, a.audience, a.current_version, a.updated_at, v.package
        FROM admin.agent a JOIN admin.agent_version v ON v.name = a.name AND v.version = a.current_version
        ${name === undefined ? sql`` : sql`WHERE a.name = ${name}`}
        ORDER BY a.name`)
  )

/** Locks the agent row for the rest of the transaction; false when it does not exist. */
export const lockAgent = (name: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(sql`SELECT name FROM admin.agent WHERE name = ${name} FOR UPDATE`, (rows) => rows.length > 0)
  )

const nextVersionRow = SqlSchema.single({
  Request: Schema.String,
  Result: Schema.Struct({ lastVersion: Schema.Number }),
  execute: (name: string) =>
    Effect.flatMap(
      SqlClient,
      (sql) => sql`
        INSERT INTO admin.agent_version_counter (name, last_version)
        VALUES (${name}, COALESCE((SELECT max(version) FROM admin.agent_version WHERE name = ${name}), 0) + 1)
        ON CONFLICT (name) DO UPDATE SET last_version = admin.agent_version_counter.last_version + 1
        RETURNING last_version`
    )
})

/**
 * The next version number of `name`. The counter row outlives the agent, and the upsert takes its row
 * lock, so concurrent saves get distinct numbers and a re-created agent never reuses one.
 */
export const nextVersion = (name: string) =>
  nextVersionRow(name).pipe(
    Effect.map((r) => r.lastVersion),
    // An upsert with RETURNING returns its row: none means the database broke its contract.
    Effect.catchTag("NoSuchElementException", Effect.die)
  )

/** Records an immutable version, its change note (migration 048) and its precomputed catalog entry (migration 047). */
export const insertVersion = (name: string, version: number, pkg: AgentPackage, savedBy: string, note: string, changeNote = "") =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.zipRight(
      sql`INSERT INTO admin.agent_version (name, version, package, saved_by, note, change_note)
          VALUES (${name}, ${version}, ${JSON.stringify(pkg)}::jsonb, ${savedBy}, ${note}, ${changeNote})`,
      insertEntry(name, version, pkg)
    )
  )

/** Records a restore: who made `toVersion` current again, and which version was current before. */
export const insertRestore = (name: string, fromVersion: number, toVersion: number, by: string) =>
  Effect.flatMap(
    SqlClient,
    (sql) =>
      sql`INSERT INTO admin.agent_restore (name, from_version, to_version, restored_by) VALUES (${name}, ${fromVersion}, ${toVersion}, ${by})`
  )

/** The restores of the current agent (since its latest creation), newest first. */
export const selectRestores = SqlSchema.findAll({
  Request: Schema.String,
  Result: RestoreRowSchema,
  execute: (name: string) =>
    Effect.flatMap(
      SqlClient,
      (sql) => sql`
      SELECT from_version, to_version, restored_by, restored_at FROM admin.agent_restore
      WHERE name = ${name} AND restored_at >= (SELECT created_at FROM admin.agent WHERE name = ${name})
      ORDER BY restored_at DESC, id DESC`
    )
})

export const insertAgent = (name: string, audience: string, version: number) =>
  Effect.flatMap(
    SqlClient,
    (sql) => sql`INSERT INTO admin.agent (name, audience, current_version) VALUES (${name}, ${audience}, ${version})`
  )

export const setCurrent = (name: string, audience: string, version: number) =>
  Effect.flatMap(
    SqlClient,
    (sql) => sql`UPDATE admin.agent SET current_version = ${version}, audience = ${audience}, updated_at = now() WHERE name = ${name}`
  )

export const setEnabled = (name: string, enabled: boolean) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql`UPDATE admin.agent SET enabled = ${enabled}, updated_at = now() WHERE name = ${name} RETURNING name`,
      (rows) => rows.length > 0
    )
  )

/** Deletes the agent; its versions stay (immutable history) and its counter keeps its number. */
export const deleteAgent = (name: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(sql`DELETE FROM admin.agent WHERE name = ${name} RETURNING name`, (rows) => rows.length > 0)
  )

/** Versions of `name` still reachable from the current agent: those saved since its latest creation. */
export const selectVersions = SqlSchema.findAll({
  Request: Schema.String,
  Result: VersionRowSchema,
  execute: (name: string) =>
    Effect.flatMap(
      SqlClient,
      (sql) => sql`
      SELECT version, saved_by, saved_at, note, change_note FROM admin.agent_version
      WHERE name = ${name}
        AND saved_at >= (SELECT created_at FROM admin.agent WHERE name = ${name})
      ORDER BY version DESC`
    )
})

const versionRow = SqlSchema.findOne({
  Request: Schema.Struct({ name: Schema.String, version: Schema.Number }),
  Result: Schema.Struct({ ...VersionRowSchema.fields, package: Jsonb(AgentPackage) }),
  execute: (r: { readonly name: string; readonly version: number }) =>
    Effect.flatMap(
      SqlClient,
      (sql) => sql`
        SELECT version, saved_by, saved_at, note, change_note, package FROM admin.agent_version
        WHERE name = ${r.name} AND version = ${r.version}
          AND saved_at >= (SELECT created_at FROM admin.agent WHERE name = ${r.name})`
    )
})

/** One version reachable from the current agent, package included; undefined when there is none. */
export const selectVersion = (name: string, version: number) => Effect.map(versionRow({ name, version }), Option.getOrUndefined)

/** Custom agents whose current version lists the shared skill. */
export const agentsUsingSkill = (skill: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      names(sql`
        SELECT a.name FROM admin.agent a
        JOIN admin.agent_version v ON v.name = a.name AND v.version = a.current_version
        WHERE v.package -> 'skills' @> jsonb_build_array(${skill}::text)
        ORDER BY a.name`),
      (rows) => rows.map((r) => r.name)
    )
  )

/** Names of the registered MCP servers (Settings → MCP servers): an agent's MCP grants must name one. */
export { selectMcpServerNames } from "../providers/McpServers.ts"
