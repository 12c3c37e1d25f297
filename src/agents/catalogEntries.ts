/**
 * Precomputed catalog entries (migration 047): one per immutable agent version, written with the
 * version, so the catalog is one plain SQL query per generation and never decodes a package.
 * Validity = the entry's package-only problems + the installation checks on its refs.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { Problem } from "../contract/Problem.ts"
import { decodeRows, Jsonb, Num, Timestamp } from "../db/rowSchema.ts"
import type { AgentDraft } from "./agentChecks.ts"
import { AgentPackage } from "./AgentPackage.ts"
import { draftOf, packageProblems } from "./validateAgent.ts"

/** What the installation checks look at (AgentDraft without the package-only fields). */
export const CatalogRefs = Schema.Struct({
  file: Schema.String,
  audience: Schema.Literal("runtime", "member"),
  tools: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  skills: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  localSkills: Schema.Array(Schema.String),
  files: Schema.Array(Schema.String)
})
export type CatalogRefs = typeof CatalogRefs.Type

export interface StoredEntry {
  readonly description: string
  readonly audience: "runtime" | "member"
  /** `name description`, lower-cased: the search matches every word in it. */
  readonly search: string
  readonly refs: CatalogRefs
  readonly problems: ReadonlyArray<Problem>
}

const entryOfPackage = (pkg: AgentPackage): StoredEntry => {
  const d = draftOf(pkg)
  return {
    description: pkg.description,
    audience: pkg.audience,
    search: `${pkg.name} ${pkg.description}`.toLowerCase(),
    refs: {
      file: d.file,
      audience: d.audience,
      ...(pkg.tools !== undefined ? { tools: pkg.tools } : {}),
      ...(pkg.skills !== undefined ? { skills: pkg.skills } : {}),
      localSkills: d.localSkills,
      files: d.files
    },
    problems: packageProblems(pkg)
  }
}

export const draftOfRefs = (refs: CatalogRefs): AgentDraft => ({ ...refs })

/** Writes the entry of `name@version` (idempotent: entries are immutable like their versions). */
export const insertEntry = (name: string, version: number, pkg: AgentPackage) =>
  Effect.flatMap(SqlClient, (sql) => {
    const e = entryOfPackage(pkg)
    return sql`INSERT INTO admin.agent_catalog_entry (name, version, description, audience, search, refs, problems)
      VALUES (${name}, ${version}, ${e.description}, ${e.audience}, ${e.search}, ${JSON.stringify(e.refs)}::jsonb, ${JSON.stringify(e.problems)}::jsonb)
      ON CONFLICT (name, version) DO NOTHING`
  })

const missingRows = decodeRows(Schema.Struct({ name: Schema.String, version: Schema.Number, package: Jsonb(AgentPackage) }))

/**
 * Writes the missing entries of current versions (versions saved before migration 047, or written
 * by SQL); returns how many were written. One anti-join when none is missing.
 */
export const fillMissingEntries = Effect.flatMap(SqlClient, (sql) =>
  Effect.gen(function* () {
    const missing = yield* missingRows(sql`
      SELECT v.name, v.version, v.package FROM admin.agent a
      JOIN admin.agent_version v ON v.name = a.name AND v.version = a.current_version
      LEFT JOIN admin.agent_catalog_entry e ON e.name = a.name AND e.version = a.current_version
      WHERE e.name IS NULL`)
    if (missing.length === 0) return 0
    const rows = missing.map((m) => {
      const e = entryOfPackage(m.package)
      return {
        name: m.name,
        version: m.version,
        description: e.description,
        audience: e.audience,
        search: e.search,
        refs: e.refs,
        problems: e.problems
      }
    })
    yield* sql`INSERT INTO admin.agent_catalog_entry (name, version, description, audience, search, refs, problems)
      SELECT r.name, r.version, r.description, r.audience, r.search, r.refs, r.problems
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        AS r(name text, version integer, description text, audience text, search text, refs jsonb, problems jsonb)
      ON CONFLICT (name, version) DO NOTHING`
    return rows.length
  })
)

const generationRows = decodeRows(Schema.Struct({ n: Num }))

/** The catalog generation: changes with every write to agents, bindings, shared skills or MCP servers. */
export const selectGeneration = Effect.flatMap(SqlClient, (sql) =>
  Effect.map(generationRows(sql`SELECT n FROM admin.catalog_generation`), (rows) => String(rows[0]?.n ?? 0))
)

const EntryRow = Schema.Struct({
  name: Schema.String,
  enabled: Schema.Boolean,
  currentVersion: Schema.Number,
  updatedAt: Timestamp,
  description: Schema.String,
  audience: Schema.Literal("runtime", "member"),
  search: Schema.String,
  refs: CatalogRefs,
  problems: Schema.Array(Problem)
})
// Compiled once: the catalog decodes every custom agent's entry at each new generation.
const entryRows = decodeRows(EntryRow)

/**
 * Every custom agent's current entry, by name in code-unit order (the catalog filters and pages them
 * in memory and compares cursors with `>`).
 */
export const selectAllEntries = Effect.flatMap(SqlClient, (sql) =>
  entryRows(
    sql`SELECT a.name, a.enabled, a.current_version, a.updated_at, e.description, e.audience, e.search, e.refs, e.problems
        FROM admin.agent a JOIN admin.agent_catalog_entry e ON e.name = a.name AND e.version = a.current_version
        ORDER BY a.name COLLATE "C"`
  )
)

const skillNameRows = decodeRows(Schema.Struct({ name: Schema.String }))

/** Names of the custom shared skills (the installation checks need names only). */
export const selectSkillNames = Effect.flatMap(SqlClient, (sql) =>
  Effect.map(skillNameRows(sql`SELECT name FROM admin.agent_skill`), (rows) => rows.map((r) => r.name))
)
