/**
 * Shared skills: the release's built-in skills plus the installation's custom ones
 * (`admin.agent_skill`). A skill in use cannot be deleted; an edit applies to every agent that uses
 * it at its next job (definitions embed the skill's current content at resolution time).
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Schema } from "effect"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { decodeRows, Jsonb, Num, Timestamp } from "../db/rowSchema.ts"
import { storeDefects } from "../db/StoreError.ts"
import { agentsUsingSkill } from "./agentRepo.ts"
import { builtinAgents, builtinSkills, type SharedSkill } from "./builtins.ts"
import { BuiltinReadOnly, SkillExists, SkillInUse, SkillInvalid, SkillNameTaken, SkillNotFound, SkillVersionNotFound } from "./errors.ts"
import { packageFileSkillName } from "./packageSkills.ts"
import type { SkillImport } from "./skillImport.ts"
import { traced } from "../telemetry/traced.ts"
import type { VersionInfo } from "./AgentView.ts"

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

/** An update's body: the skill's text; a name, when given, must be the route's (a skill is not renamed). */
const SkillUpdate = Schema.Struct({ ...SkillInput.fields, name: Schema.optionalWith(Schema.String, { exact: true }) })

export interface SkillView extends SharedSkill {
  /** From an imported Agent Skill's front matter (`license`, `version`); null when it has none. */
  readonly license: string | null
  readonly skillVersion: string | null
  /** Other front-matter keys of an imported skill, kept as written (e.g. allowed-tools, mapped). */
  readonly metadata: Readonly<Record<string, unknown>>
  /** Resource files stored with the skill (path and size in bytes). */
  readonly resources: ReadonlyArray<{ readonly path: string; readonly bytes: number }>
  /** The current stored version (null for a built-in, which ships with the release). */
  readonly version: number | null
  readonly updatedBy: string | null
  readonly updatedAt: Date | null
  /** Agents whose current definition lists this skill. */
  readonly usedBy: ReadonlyArray<string>
}

/** One stored version of a custom shared skill (numbered, noted and current like an agent's). */
export interface SkillVersionInfo extends VersionInfo {
  readonly name: string
}

export interface SkillVersion {
  readonly info: SkillVersionInfo
  readonly description: string
  readonly content: string
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
    /**
     * Replaces description and content as a new version with the author's change note; the name in
     * `input`, if any, must equal `name`. Text equal to the current version's adds no version.
     */
    readonly update: (
      name: string,
      input: unknown,
      by: string,
      changeNote?: string
    ) => Effect.Effect<SkillView, SkillInvalid | SkillNotFound | BuiltinReadOnly>
    /** The versions of a custom skill since its latest creation, newest first. */
    readonly versions: (name: string) => Effect.Effect<ReadonlyArray<SkillVersionInfo>, SkillNotFound | BuiltinReadOnly>
    readonly version: (name: string, version: number) => Effect.Effect<SkillVersion, SkillNotFound | SkillVersionNotFound | BuiltinReadOnly>
    /** Saves an older version's text as a new version ("restored from vN"), so the restore is in the history. */
    readonly restore: (
      name: string,
      version: number,
      by: string
    ) => Effect.Effect<SkillView, SkillNotFound | SkillVersionNotFound | BuiltinReadOnly>
    /** The versions of the given custom skills saved at or after `since`, newest first (an agent's history shows them). */
    readonly changesSince: (names: ReadonlyArray<string>, since: Date) => Effect.Effect<ReadonlyArray<SkillVersionInfo>>
    /** Creates or replaces a custom skill from an Agent Skill upload (resources replaced too); `created` says which. */
    readonly importSkill: (
      skill: SkillImport,
      by: string
    ) => Effect.Effect<{ readonly skill: SkillView; readonly created: boolean }, SkillNameTaken | BuiltinReadOnly>
    /** The resource files of the given skills (skills without any are absent). */
    readonly resources: (
      names: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<{ readonly path: string; readonly content: Uint8Array }>>>
    /** Refused with the agents' names while any agent uses the skill. */
    readonly remove: (name: string) => Effect.Effect<void, SkillNotFound | SkillInUse | BuiltinReadOnly>
  }
>() {}

const SkillRow = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  content: Schema.String,
  currentVersion: Schema.Number,
  updatedBy: Schema.String,
  updatedAt: Timestamp,
  license: Schema.NullOr(Schema.String),
  version: Schema.NullOr(Schema.String),
  metadata: Jsonb(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  resources: Jsonb(Schema.Array(Schema.Struct({ path: Schema.String, bytes: Num })))
})
type SkillRow = typeof SkillRow.Type

const SkillVersionRow = Schema.Struct({
  name: Schema.String,
  version: Schema.Number,
  savedBy: Schema.String,
  savedAt: Timestamp,
  note: Schema.String,
  changeNote: Schema.String,
  current: Schema.Boolean
})
type SkillVersionRow = typeof SkillVersionRow.Type

const skillRows = decodeRows(SkillRow)
const versionRowsOf = decodeRows(SkillVersionRow)
const versionTextRows = decodeRows(Schema.Struct({ ...SkillVersionRow.fields, description: Schema.String, content: Schema.String }))
const textRows = decodeRows(Schema.Struct({ description: Schema.String, content: Schema.String }))
const versionNumbers = decodeRows(Schema.Struct({ version: Schema.Number }))
const createdRows = decodeRows(Schema.Struct({ created: Schema.Boolean }))
const fileRows = decodeRows(Schema.Struct({ skill: Schema.String, path: Schema.String, content: Schema.Uint8ArrayFromSelf }))

const versionInfo = (r: SkillVersionRow): SkillVersionInfo => {
  const { changeNote, ...rest } = r
  return { ...rest, ...(changeNote === "" ? {} : { changeNote }) }
}

const NOTE_MAX = 2000

export const makeSkillStore = Effect.gen(function* () {
  const sql = yield* SqlClient
  const provide = <A, E>(e: Effect.Effect<A, E, SqlClient>) => Effect.provideService(e, SqlClient, sql)

  const builtinUsers = (name: string): Array<string> =>
    [...builtinAgents().values()].filter((a) => (a.skills ?? []).includes(name)).map((a) => a.name)
  const usedBy = (name: string) => Effect.map(provide(agentsUsingSkill(name)), (custom) => [...builtinUsers(name), ...custom])

  const rows = (name?: string) =>
    skillRows(sql`SELECT s.name, s.description, s.content, s.current_version, s.updated_by, s.updated_at, s.license, s.version, s.metadata,
                    coalesce((SELECT jsonb_agg(jsonb_build_object('path', f.path, 'bytes', octet_length(f.content)) ORDER BY f.path)
                              FROM admin.agent_skill_file f WHERE f.skill = s.name), '[]'::jsonb) AS resources
                  FROM admin.agent_skill s
                  ${name === undefined ? sql`` : sql`WHERE s.name = ${name}`} ORDER BY s.name`)
  const viewOf = (row: SkillRow) =>
    Effect.map(
      usedBy(row.name),
      (users): SkillView => ({
        name: row.name,
        description: row.description,
        content: row.content,
        builtin: false,
        license: row.license,
        skillVersion: row.version,
        metadata: row.metadata,
        resources: row.resources,
        version: row.currentVersion,
        updatedBy: row.updatedBy,
        updatedAt: row.updatedAt,
        usedBy: users
      })
    )
  const builtinView = (s: SharedSkill) =>
    Effect.map(
      usedBy(s.name),
      (users): SkillView => ({
        ...s,
        license: null,
        skillVersion: null,
        metadata: {},
        resources: [],
        version: null,
        updatedBy: null,
        updatedAt: null,
        usedBy: users
      })
    )
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
    }).pipe(
      // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
      storeDefects("SkillStore.get")
    )

  const decodeUpdate = decodeAll(SkillUpdate)
  const decode = (input: unknown): Effect.Effect<SkillInput, SkillInvalid> =>
    Effect.mapError(decodeAll(SkillInput)(input), (problems: Array<Problem>) => new SkillInvalid({ problems }))

  /** Adds the next version of `name` (the caller holds the skill row's lock) and returns its number. */
  const insertVersion = (name: string, description: string, content: string, by: string, note: string, changeNote: string) =>
    Effect.flatMap(
      versionNumbers(sql`
        INSERT INTO admin.agent_skill_version (name, version, description, content, saved_by, note, change_note)
        VALUES (${name}, COALESCE((SELECT max(version) FROM admin.agent_skill_version WHERE name = ${name}), 0) + 1,
                ${description}, ${content}, ${by}, ${note}, ${changeNote.trim().slice(0, NOTE_MAX)})
        RETURNING version`),
      // An INSERT … RETURNING that succeeded returns its row: none means the database broke its contract.
      (r) => (r[0] === undefined ? Effect.dieMessage("an inserted skill version returned no row") : Effect.succeed(r[0].version))
    )
  const versionRows = (name: string, version?: number) =>
    versionTextRows(sql`
      SELECT v.name, v.version, v.saved_by, v.saved_at, v.note, v.change_note, v.description, v.content,
             (v.version = s.current_version) AS current
      FROM admin.agent_skill_version v JOIN admin.agent_skill s ON s.name = v.name
      WHERE v.name = ${name} AND v.saved_at >= s.created_at
        ${version === undefined ? sql`` : sql`AND v.version = ${version}`}
      ORDER BY v.version DESC`)
  const custom = (name: string) =>
    Effect.gen(function* () {
      if (builtinSkills().has(name)) return yield* Effect.fail(new BuiltinReadOnly({ kind: "skill", name }))
      const row = (yield* rows(name))[0]
      if (row === undefined) return yield* Effect.fail(new SkillNotFound({ name }))
      return row
    })
  const versionOf = (name: string, version: number) =>
    Effect.gen(function* () {
      yield* custom(name)
      const row = (yield* versionRows(name, version))[0]
      if (row === undefined) return yield* Effect.fail(new SkillVersionNotFound({ name, version }))
      return row
    })
  /** Under the skill row's lock: new text as the next version and current, unless it equals the current text. */
  const write = (name: string, description: string, content: string, by: string, note: string, changeNote: string) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const locked = yield* textRows(sql`SELECT description, content FROM admin.agent_skill WHERE name = ${name} FOR UPDATE`)
        const before = locked[0]
        if (before === undefined) return yield* Effect.fail(new SkillNotFound({ name }))
        if (before.description === description && before.content === content) return
        const version = yield* insertVersion(name, description, content, by, note, changeNote)
        yield* sql`UPDATE admin.agent_skill SET description = ${description}, content = ${content}, current_version = ${version},
          updated_by = ${by}, updated_at = now() WHERE name = ${name}`
      })
    )

  const service: SkillStore["Type"] = {
    list: Effect.gen(function* () {
      const builtin = yield* Effect.forEach([...builtinSkills().values()], builtinView)
      const custom = yield* Effect.forEach(yield* rows(), viewOf)
      return [...builtin, ...custom]
    }).pipe(
      // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
      storeDefects("SkillStore.list")
    ),
    get,
    contents: Effect.map(
      rows(),
      (custom) =>
        new Map([
          ...[...builtinSkills().values()].map((s) => [s.name, s.content] as const),
          ...custom.map((r) => [r.name, r.content] as const)
        ])
    ).pipe(
      // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
      storeDefects("SkillStore.contents")
    ),
    create: (input, by) =>
      Effect.gen(function* () {
        const skill = yield* decode(input)
        if (builtinSkills().has(skill.name)) return yield* Effect.fail(new BuiltinReadOnly({ kind: "skill", name: skill.name }))
        const taken = builtinLocalUsers(skill.name)
        if (taken.length > 0) return yield* Effect.fail(new SkillNameTaken({ name: skill.name, agents: taken }))
        yield* sql.withTransaction(
          Effect.gen(function* () {
            const inserted = yield* sql`INSERT INTO admin.agent_skill (name, description, content, updated_by)
              VALUES (${skill.name}, ${skill.description}, ${skill.content}, ${by}) ON CONFLICT (name) DO NOTHING RETURNING name`
            if (inserted.length === 0) return yield* Effect.fail(new SkillExists({ name: skill.name }))
            const version = yield* insertVersion(skill.name, skill.description, skill.content, by, "created", "")
            yield* sql`UPDATE admin.agent_skill SET current_version = ${version} WHERE name = ${skill.name}`
          })
        )
        // The skill was written just before: SkillNotFound here would be a defect.
        return yield* Effect.orDie(get(skill.name))
      }).pipe(
        // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
        storeDefects("SkillStore.create")
      ),
    update: (name, input, by, changeNote) =>
      Effect.gen(function* () {
        if (builtinSkills().has(name)) return yield* Effect.fail(new BuiltinReadOnly({ kind: "skill", name }))
        const skill = yield* Effect.mapError(decodeUpdate(input), (problems) => new SkillInvalid({ problems }))
        if (skill.name !== undefined && skill.name !== name)
          return yield* Effect.fail(new SkillInvalid({ problems: [{ path: "name", message: "cannot rename a shared skill" }] }))
        if ((changeNote ?? "").length > NOTE_MAX)
          return yield* Effect.fail(new SkillInvalid({ problems: [{ path: "note", message: "is longer than 2,000 characters" }] }))
        yield* write(name, skill.description, skill.content, by, "saved", changeNote ?? "")
        // The skill was written just before: SkillNotFound here would be a defect.
        return yield* Effect.orDie(get(name))
      }).pipe(
        // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
        storeDefects("SkillStore.update")
      ),
    importSkill: (skill, by) =>
      Effect.gen(function* () {
        if (builtinSkills().has(skill.name)) return yield* Effect.fail(new BuiltinReadOnly({ kind: "skill", name: skill.name }))
        const taken = builtinLocalUsers(skill.name)
        if (taken.length > 0) return yield* Effect.fail(new SkillNameTaken({ name: skill.name, agents: taken }))
        const created = yield* sql.withTransaction(
          Effect.gen(function* () {
            // A new skill starts its history at v1; an existing one gets a new version only when its text changed.
            const rows = yield* createdRows(sql`
              INSERT INTO admin.agent_skill (name, description, content, updated_by, license, version, metadata)
              VALUES (${skill.name}, ${skill.description}, ${skill.content}, ${by}, ${skill.license}, ${skill.version}, ${JSON.stringify(skill.metadata)}::jsonb)
              ON CONFLICT (name) DO UPDATE SET license = EXCLUDED.license, version = EXCLUDED.version, metadata = EXCLUDED.metadata
              RETURNING (xmax = 0) AS created`)
            const isNew = rows[0]?.created === true
            if (isNew) {
              const version = yield* insertVersion(skill.name, skill.description, skill.content, by, "created", "imported")
              yield* sql`UPDATE admin.agent_skill SET current_version = ${version} WHERE name = ${skill.name}`
            } else {
              // The row was just upserted under this transaction, so it cannot be missing.
              yield* Effect.catchTag(
                write(skill.name, skill.description, skill.content, by, "saved", "imported"),
                "SkillNotFound",
                Effect.die
              )
            }
            yield* sql`DELETE FROM admin.agent_skill_file WHERE skill = ${skill.name}`
            yield* Effect.forEach(
              skill.files,
              (f) => sql`INSERT INTO admin.agent_skill_file (skill, path, content) VALUES (${skill.name}, ${f.path}, ${f.content})`,
              { discard: true }
            )
            return isNew
          })
        )
        // The skill was written just before: SkillNotFound here would be a defect.
        return { skill: yield* Effect.orDie(get(skill.name)), created }
      }).pipe(
        // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
        storeDefects("SkillStore.importSkill")
      ),
    resources: (names) =>
      names.length === 0
        ? Effect.succeed(new Map())
        : Effect.map(
            fileRows(sql`
              SELECT skill, path, content FROM admin.agent_skill_file WHERE skill IN ${sql.in(names)} ORDER BY skill, path`),
            (rows) => {
              const out = new Map<string, Array<{ path: string; content: Uint8Array }>>()
              for (const r of rows) out.set(r.skill, [...(out.get(r.skill) ?? []), { path: r.path, content: new Uint8Array(r.content) }])
              return out as ReadonlyMap<string, ReadonlyArray<{ path: string; content: Uint8Array }>>
            }
          ).pipe(
            // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
            storeDefects("SkillStore.resources")
          ),
    versions: (name) =>
      Effect.gen(function* () {
        yield* custom(name)
        return (yield* versionRows(name)).map(versionInfo)
      }).pipe(
        // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
        storeDefects("SkillStore.versions")
      ),
    version: (name, version) =>
      Effect.map(
        versionOf(name, version),
        (r): SkillVersion => ({ info: versionInfo(r), description: r.description, content: r.content })
      ).pipe(
        // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
        storeDefects("SkillStore.version")
      ),
    restore: (name, version, by) =>
      Effect.gen(function* () {
        const old = yield* versionOf(name, version)
        yield* write(name, old.description, old.content, by, `restored from v${version}`, "")
        // The skill was written just before: SkillNotFound here would be a defect.
        return yield* Effect.orDie(get(name))
      }).pipe(
        // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
        storeDefects("SkillStore.restore")
      ),
    changesSince: (names, since) =>
      names.length === 0
        ? Effect.succeed([])
        : Effect.map(
            versionRowsOf(sql`
              SELECT v.name, v.version, v.saved_by, v.saved_at, v.note, v.change_note, (v.version = s.current_version) AS current
              FROM admin.agent_skill_version v JOIN admin.agent_skill s ON s.name = v.name
              WHERE v.name IN ${sql.in(names)} AND v.saved_at >= s.created_at AND v.saved_at >= ${since}
              ORDER BY v.saved_at DESC, v.name, v.version DESC`),
            (r) => r.map(versionInfo)
          ).pipe(
            // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
            storeDefects("SkillStore.changesSince")
          ),
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
      }).pipe(
        // SkillStore's shape has no database failure (the catalog and job definitions read it): a store failure is a defect.
        storeDefects("SkillStore.remove")
      )
  }
  return service
})

export const SkillStoreLive = Layer.effect(
  SkillStore,
  Effect.map(makeSkillStore, (service) => traced("SkillStore", service))
)
