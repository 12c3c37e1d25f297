/**
 * SQL of the agent store: custom agents, their immutable versions and the version counter. Every
 * function needs a `SqlClient`; SQL errors stay typed here and become defects in the service.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { AgentPackage } from "./AgentPackage.ts"
import { insertEntry } from "./catalogEntries.ts"

export interface AgentRow {
  readonly name: string
  readonly enabled: boolean
  readonly audience: "runtime" | "member"
  readonly currentVersion: number
  readonly updatedAt: Date
  readonly package: AgentPackage
}

export interface VersionRow {
  readonly version: number
  readonly savedBy: string
  readonly savedAt: Date
  readonly note: string
  /** The author's words about the save ('' = none). */
  readonly changeNote: string
}

export interface RestoreRow {
  readonly fromVersion: number
  readonly toVersion: number
  readonly restoredBy: string
  readonly restoredAt: Date
}

const decodePackage = Schema.decodeUnknownSync(AgentPackage)
const toRow = (r: Omit<AgentRow, "package"> & { readonly package: unknown }): AgentRow => ({ ...r, package: decodePackage(r.package) })

/** Current version of every custom agent (or one), package included. */
export const selectAgents = (name?: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<Omit<AgentRow, "package"> & { package: unknown }>`
        SELECT a.name, a.enabled, a.audience, a.current_version, a.updated_at, v.package
        FROM admin.agent a JOIN admin.agent_version v ON v.name = a.name AND v.version = a.current_version
        ${name === undefined ? sql`` : sql`WHERE a.name = ${name}`}
        ORDER BY a.name`,
      (rows) => rows.map(toRow)
    )
  )

export type AgentHead = Omit<AgentRow, "package">

/** Every custom agent without its package (the catalog fetches packages it has not cached). */
export const selectAgentHeads = Effect.flatMap(SqlClient, (sql) =>
  sql<AgentHead>`SELECT name, enabled, audience, current_version, updated_at FROM admin.agent ORDER BY name`
)

/** The packages of the given (name, version) pairs. */
export const selectPackages = (keys: ReadonlyArray<{ readonly name: string; readonly version: number }>) =>
  Effect.flatMap(SqlClient, (sql) =>
    keys.length === 0
      ? Effect.succeed([])
      : Effect.map(
          sql<{ name: string; version: number; package: unknown }>`
            SELECT v.name, v.version, v.package FROM admin.agent_version v
            JOIN jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) AS k(name text, version integer)
              ON k.name = v.name AND k.version = v.version`,
          (rows) => rows.map((r) => ({ name: r.name, version: r.version, package: decodePackage(r.package) }))
        )
  )

/** Locks the agent row for the rest of the transaction; false when it does not exist. */
export const lockAgent = (name: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(sql`SELECT name FROM admin.agent WHERE name = ${name} FOR UPDATE`, (rows) => rows.length > 0)
  )

/**
 * The next version number of `name`. The counter row outlives the agent, and the upsert takes its row
 * lock, so concurrent saves get distinct numbers and a re-created agent never reuses one.
 */
export const nextVersion = (name: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ lastVersion: number }>`
        INSERT INTO admin.agent_version_counter (name, last_version)
        VALUES (${name}, COALESCE((SELECT max(version) FROM admin.agent_version WHERE name = ${name}), 0) + 1)
        ON CONFLICT (name) DO UPDATE SET last_version = admin.agent_version_counter.last_version + 1
        RETURNING last_version`,
      (rows) => Number(rows[0]!.lastVersion)
    )
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
  Effect.flatMap(SqlClient, (sql) =>
    sql`INSERT INTO admin.agent_restore (name, from_version, to_version, restored_by) VALUES (${name}, ${fromVersion}, ${toVersion}, ${by})`
  )

/** The restores of the current agent (since its latest creation), newest first. */
export const selectRestores = (name: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<RestoreRow>`
      SELECT from_version, to_version, restored_by, restored_at FROM admin.agent_restore
      WHERE name = ${name} AND restored_at >= (SELECT created_at FROM admin.agent WHERE name = ${name})
      ORDER BY restored_at DESC, id DESC`
  )

export const insertAgent = (name: string, audience: string, version: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql`INSERT INTO admin.agent (name, audience, current_version) VALUES (${name}, ${audience}, ${version})`
  )

export const setCurrent = (name: string, audience: string, version: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql`UPDATE admin.agent SET current_version = ${version}, audience = ${audience}, updated_at = now() WHERE name = ${name}`
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
export const selectVersions = (name: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<VersionRow>`
      SELECT version, saved_by, saved_at, note, change_note FROM admin.agent_version
      WHERE name = ${name}
        AND saved_at >= (SELECT created_at FROM admin.agent WHERE name = ${name})
      ORDER BY version DESC`
  )

export const selectVersion = (name: string, version: number) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<VersionRow & { package: unknown }>`
        SELECT version, saved_by, saved_at, note, change_note, package FROM admin.agent_version
        WHERE name = ${name} AND version = ${version}
          AND saved_at >= (SELECT created_at FROM admin.agent WHERE name = ${name})`,
      (rows) => (rows[0] === undefined ? undefined : { ...rows[0], package: decodePackage(rows[0].package) })
    )
  )

/** Custom agents whose current version lists the shared skill. */
export const agentsUsingSkill = (skill: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ name: string }>`
        SELECT a.name FROM admin.agent a
        JOIN admin.agent_version v ON v.name = a.name AND v.version = a.current_version
        WHERE v.package -> 'skills' @> jsonb_build_array(${skill}::text)
        ORDER BY a.name`,
      (rows) => rows.map((r) => r.name)
    )
  )

/** Names of the registered MCP servers (Settings → MCP servers): an agent's MCP grants must name one. */
export { selectMcpServerNames } from "../providers/McpServers.ts"
