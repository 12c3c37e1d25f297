/**
 * Shared skills: the release's built-in skills plus the installation's custom ones
 * (`admin.agent_skill`). A skill in use cannot be deleted; an edit applies to every agent that uses
 * it at its next job (definitions embed the skill's current content at resolution time).
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Schema } from "effect"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { agentsUsingSkill } from "./agentRepo.ts"
import { builtinAgents, builtinSkills, type SharedSkill } from "./builtins.ts"
import { BuiltinReadOnly, SkillExists, SkillInUse, SkillInvalid, SkillNameTaken, SkillNotFound } from "./errors.ts"
import { packageFileSkillName } from "./packageSkills.ts"
import type { SkillImport } from "./skillImport.ts"
import { traced } from "../telemetry/traced.ts"

export const SkillInput = Schema.Struct({
  name: Schema.String.pipe(
    Schema.pattern(/^[a-z][a-z0-9-]{0,63}$/, { message: () => "must match [a-z][a-z0-9-]* (at most 64 characters)" })
  ),
  description: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(2000)), { exact: true, default: () => "" }),
  content: Schema.String.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(256 * 1024, { message: () => "is longer than 256 KiB" })
  )
})
export type SkillInput = typeof SkillInput.Type

export interface SkillView extends SharedSkill {
  /** From an imported Agent Skill's front matter; null when it has none. */
  readonly license: string | null
  readonly version: string | null
  /** Other front-matter keys of an imported skill, kept as written (e.g. allowed-tools, mapped). */
  readonly metadata: Readonly<Record<string, unknown>>
  /** Resource files stored with the skill (path and size in bytes). */
  readonly resources: ReadonlyArray<{ readonly path: string; readonly bytes: number }>
  readonly updatedBy: string | null
  readonly updatedAt: Date | null
  /** Agents whose current definition lists this skill. */
  readonly usedBy: ReadonlyArray<string>
}

export class SkillStore extends Context.Tag("agents/SkillStore")<
  SkillStore,
  {
    /** Built-in then custom skills, each with the agents that use it. */
    readonly list: Effect.Effect<ReadonlyArray<SkillView>>
    readonly get: (name: string) => Effect.Effect<SkillView, SkillNotFound>
    /** Name → content of every shared skill, for validation and job definitions. */
    readonly contents: Effect.Effect<ReadonlyMap<string, string>>
    readonly create: (input: unknown, by: string) => Effect.Effect<SkillView, SkillInvalid | SkillExists | SkillNameTaken | BuiltinReadOnly>
    /** Replaces description and content; the name in `input`, if any, must equal `name`. */
    readonly update: (name: string, input: unknown, by: string) => Effect.Effect<SkillView, SkillInvalid | SkillNotFound | BuiltinReadOnly>
    /** Creates or replaces a custom skill from an Agent Skill upload (resources replaced too); `created` says which. */
    readonly importSkill: (skill: SkillImport, by: string) => Effect.Effect<{ readonly skill: SkillView; readonly created: boolean }, SkillNameTaken | BuiltinReadOnly>
    /** The resource files of the given skills (skills without any are absent). */
    readonly resources: (names: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<{ readonly path: string; readonly content: Uint8Array }>>>
    /** Refused with the agents' names while any agent uses the skill. */
    readonly remove: (name: string) => Effect.Effect<void, SkillNotFound | SkillInUse | BuiltinReadOnly>
  }
>() {}

interface SkillRow {
  readonly name: string
  readonly description: string
  readonly content: string
  readonly updatedBy: string
  readonly updatedAt: Date
  readonly license: string | null
  readonly version: string | null
  readonly metadata: unknown
  readonly resources: unknown
}

const resourceList = (v: unknown): Array<{ path: string; bytes: number }> =>
  Array.isArray(v) ? v.flatMap((r) => (r !== null && typeof r === "object" && typeof r.path === "string" ? [{ path: String(r.path), bytes: Number(r.bytes) }] : [])) : []
const metadataOf = (v: unknown): Record<string, unknown> => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {})

export const makeSkillStore = Effect.gen(function* () {
  const sql = yield* SqlClient
  const provide = <A, E>(e: Effect.Effect<A, E, SqlClient>) => Effect.provideService(e, SqlClient, sql)

  const builtinUsers = (name: string): Array<string> =>
    [...builtinAgents().values()].filter((a) => (a.skills ?? []).includes(name)).map((a) => a.name)
  const usedBy = (name: string) => Effect.map(provide(agentsUsingSkill(name)), (custom) => [...builtinUsers(name), ...custom])

  const rows = (name?: string) =>
    sql<SkillRow>`SELECT s.name, s.description, s.content, s.updated_by, s.updated_at, s.license, s.version, s.metadata,
                    coalesce((SELECT jsonb_agg(jsonb_build_object('path', f.path, 'bytes', octet_length(f.content)) ORDER BY f.path)
                              FROM admin.agent_skill_file f WHERE f.skill = s.name), '[]'::jsonb) AS resources
                  FROM admin.agent_skill s
                  ${name === undefined ? sql`` : sql`WHERE s.name = ${name}`} ORDER BY s.name`
  const viewOf = (row: SkillRow) =>
    Effect.map(usedBy(row.name), (users): SkillView => ({
      name: row.name,
      description: row.description,
      content: row.content,
      builtin: false,
      license: row.license,
      version: row.version,
      metadata: metadataOf(row.metadata),
      resources: resourceList(row.resources),
      updatedBy: row.updatedBy,
      updatedAt: row.updatedAt,
      usedBy: users
    }))
  const builtinView = (s: SharedSkill) =>
    Effect.map(usedBy(s.name), (users): SkillView => ({ ...s, license: null, version: null, metadata: {}, resources: [], updatedBy: null, updatedAt: null, usedBy: users }))
  /** Built-in agents that have a local or file skill called `name`. */
  const builtinLocalUsers = (name: string): Array<string> =>
    [...builtinAgents().values()]
      .filter((a) => a.localSkills.some((l) => l.name === name) || a.files.some((f) => packageFileSkillName(f.path) === name))
      .map((a) => a.name)

  const get = (name: string): Effect.Effect<SkillView, SkillNotFound> =>
    Effect.gen(function* () {
      const builtin = builtinSkills().get(name)
      if (builtin !== undefined) return yield* builtinView(builtin)
      const row = (yield* rows(name))[0]
      if (row === undefined) return yield* Effect.fail(new SkillNotFound({ name }))
      return yield* viewOf(row)
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  const decode = (input: unknown): Effect.Effect<SkillInput, SkillInvalid> =>
    Effect.mapError(decodeAll(SkillInput)(input), (problems: Array<Problem>) => new SkillInvalid({ problems }))

  const service: SkillStore["Type"] = {
    list: Effect.gen(function* () {
      const builtin = yield* Effect.forEach([...builtinSkills().values()], builtinView)
      const custom = yield* Effect.forEach(yield* rows(), viewOf)
      return [...builtin, ...custom]
    }).pipe(Effect.catchTag("SqlError", Effect.die)),
    get,
    contents: Effect.map(rows(), (custom) => new Map([...[...builtinSkills().values()].map((s) => [s.name, s.content] as const), ...custom.map((r) => [r.name, r.content] as const)])).pipe(
      Effect.catchTag("SqlError", Effect.die)
    ),
    create: (input, by) =>
      Effect.gen(function* () {
        const skill = yield* decode(input)
        if (builtinSkills().has(skill.name)) return yield* Effect.fail(new BuiltinReadOnly({ kind: "skill", name: skill.name }))
        const taken = builtinLocalUsers(skill.name)
        if (taken.length > 0) return yield* Effect.fail(new SkillNameTaken({ name: skill.name, agents: taken }))
        const inserted = yield* sql`INSERT INTO admin.agent_skill (name, description, content, updated_by)
          VALUES (${skill.name}, ${skill.description}, ${skill.content}, ${by}) ON CONFLICT (name) DO NOTHING RETURNING name`
        if (inserted.length === 0) return yield* Effect.fail(new SkillExists({ name: skill.name }))
        return yield* Effect.orDie(get(skill.name))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    update: (name, input, by) =>
      Effect.gen(function* () {
        if (builtinSkills().has(name)) return yield* Effect.fail(new BuiltinReadOnly({ kind: "skill", name }))
        const raw = input !== null && typeof input === "object" ? { name, ...(input as Record<string, unknown>) } : input
        const skill = yield* decode(raw)
        if (skill.name !== name) return yield* Effect.fail(new SkillInvalid({ problems: [{ path: "name", message: "cannot rename a shared skill" }] }))
        const updated = yield* sql`UPDATE admin.agent_skill SET description = ${skill.description}, content = ${skill.content},
          updated_by = ${by}, updated_at = now() WHERE name = ${name} RETURNING name`
        if (updated.length === 0) return yield* Effect.fail(new SkillNotFound({ name }))
        return yield* Effect.orDie(get(name))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    importSkill: (skill, by) =>
      Effect.gen(function* () {
        if (builtinSkills().has(skill.name)) return yield* Effect.fail(new BuiltinReadOnly({ kind: "skill", name: skill.name }))
        const taken = builtinLocalUsers(skill.name)
        if (taken.length > 0) return yield* Effect.fail(new SkillNameTaken({ name: skill.name, agents: taken }))
        const created = yield* sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql<{ created: boolean }>`
              INSERT INTO admin.agent_skill (name, description, content, updated_by, license, version, metadata)
              VALUES (${skill.name}, ${skill.description}, ${skill.content}, ${by}, ${skill.license}, ${skill.version}, ${JSON.stringify(skill.metadata)}::jsonb)
              ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description, content = EXCLUDED.content,
                updated_by = EXCLUDED.updated_by, updated_at = now(), license = EXCLUDED.license, version = EXCLUDED.version,
                metadata = EXCLUDED.metadata
              RETURNING (xmax = 0) AS created`
            yield* sql`DELETE FROM admin.agent_skill_file WHERE skill = ${skill.name}`
            yield* Effect.forEach(skill.files, (f) => sql`INSERT INTO admin.agent_skill_file (skill, path, content) VALUES (${skill.name}, ${f.path}, ${f.content})`, { discard: true })
            return rows[0]?.created === true
          })
        )
        return { skill: yield* Effect.orDie(get(skill.name)), created }
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    resources: (names) =>
      names.length === 0
        ? Effect.succeed(new Map())
        : Effect.map(
            sql<{ skill: string; path: string; content: Uint8Array }>`
              SELECT skill, path, content FROM admin.agent_skill_file WHERE skill IN ${sql.in(names)} ORDER BY skill, path`,
            (rows) => {
              const out = new Map<string, Array<{ path: string; content: Uint8Array }>>()
              for (const r of rows) out.set(r.skill, [...(out.get(r.skill) ?? []), { path: r.path, content: new Uint8Array(r.content) }])
              return out as ReadonlyMap<string, ReadonlyArray<{ path: string; content: Uint8Array }>>
            }
          ).pipe(Effect.catchTag("SqlError", Effect.die)),
    remove: (name) =>
      Effect.gen(function* () {
        if (builtinSkills().has(name)) return yield* Effect.fail(new BuiltinReadOnly({ kind: "skill", name }))
        // In one transaction: an agent saved concurrently cannot start using it between check and delete.
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const exists = yield* sql`SELECT name FROM admin.agent_skill WHERE name = ${name} FOR UPDATE`
            if (exists.length === 0) return yield* Effect.fail(new SkillNotFound({ name }))
            const users = yield* usedBy(name)
            if (users.length > 0) return yield* Effect.fail(new SkillInUse({ name, agents: users }))
            yield* sql`DELETE FROM admin.agent_skill WHERE name = ${name}`
          })
        )
      }).pipe(Effect.catchTag("SqlError", Effect.die))
  }
  return service
})

export const SkillStoreLive = Layer.effect(SkillStore, Effect.map(makeSkillStore, (service) => traced("SkillStore", service)))
