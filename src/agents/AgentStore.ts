/**
 * The Agent Builder's catalog: built-in agents (read-only, names reserved) plus custom agents with
 * immutable versions. Every save records a new version and makes it current; restore makes an older
 * one current again; a version number is never reused. SQL failures are defects here.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Schema } from "effect"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import { KERNEL_TOOLS } from "../contract/AgentDefinition.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { serializeAgentPackage, type AgentPackage } from "./AgentPackage.ts"
import * as repo from "./agentRepo.ts"
import { builtinAgents } from "./builtins.ts"
import { AgentExists, AgentInvalid, AgentNotFound, AgentVersionNotFound, BuiltinReadOnly, ImportRejected } from "./errors.ts"
import { SkillStore } from "./SkillStore.ts"
import { checkAgentPackage, toAgentDefinition, validateAgent, type ValidationContext } from "./validateAgent.ts"
import { readZip, unwrapSingleFolder, writeZip } from "./zip.ts"
import { traced } from "../telemetry/traced.ts"

/** Package files as the API and the editor send them. */
export const PackageFilesInput = Schema.Struct({
  files: Schema.Array(Schema.Struct({ path: Schema.String, content: Schema.String })).pipe(
    Schema.minItems(1, { message: () => "must hold at least the <name>.md file" })
  )
})

export interface Binding {
  readonly projectId: string
  readonly providerId: string
  readonly modelId: string
  readonly thinking: string | null
}

export interface CatalogEntry {
  readonly name: string
  readonly builtin: boolean
  readonly description: string
  readonly audience: "runtime" | "member"
  /** The store's current version number; for a built-in, the version it ships with. */
  readonly version: number | string
  readonly enabled: boolean
  /** What keeps the agent from running here; [] = valid. */
  readonly problems: ReadonlyArray<Problem>
  readonly binding: Binding | null
  readonly updatedAt: Date | null
}

export interface AgentView extends CatalogEntry {
  readonly package: AgentPackage
  /** The package as files (`<name>.md`, skills, commands, …). */
  readonly files: ReadonlyArray<{ readonly path: string; readonly content: string }>
  readonly bindings: ReadonlyArray<Binding>
}

export interface VersionInfo {
  readonly version: number
  readonly savedBy: string
  readonly savedAt: Date
  readonly note: string
  readonly current: boolean
}

export interface Preview {
  readonly problems: ReadonlyArray<Problem>
  /** The job definition the draft would give, when it has no problem. */
  readonly definition: AgentDefinition | null
}

type Invalid = AgentInvalid
type Write<A> = Effect.Effect<A, Invalid | AgentExists | BuiltinReadOnly>

export class AgentStore extends Context.Tag("agents/AgentStore")<
  AgentStore,
  {
    readonly catalog: Effect.Effect<ReadonlyArray<CatalogEntry>>
    /** What the editor offers: kernel tools, shared skills, reserved (built-in) names. */
    readonly context: Effect.Effect<{
      readonly kernelTools: ReadonlyArray<string>
      readonly sharedSkills: ReadonlyArray<{ readonly name: string; readonly description: string; readonly builtin: boolean }>
      readonly reservedNames: ReadonlyArray<string>
    }>
    readonly get: (name: string) => Effect.Effect<AgentView, AgentNotFound>
    /** Creates a custom agent at version 1 (or the next number its name has not used). */
    readonly create: (files: unknown, by: string) => Write<AgentView>
    /** Saves a new version of a custom agent; the package's name must stay `name`. */
    readonly save: (name: string, files: unknown, by: string) => Effect.Effect<AgentView, Invalid | AgentNotFound | BuiltinReadOnly>
    readonly setEnabled: (name: string, enabled: boolean) => Effect.Effect<AgentView, AgentNotFound | BuiltinReadOnly>
    /** Deletes a custom agent; its versions stay in the history and their numbers are never reused. */
    readonly remove: (name: string) => Effect.Effect<void, AgentNotFound | BuiltinReadOnly>
    readonly copy: (name: string, newName: string, by: string) => Effect.Effect<AgentView, Invalid | AgentNotFound | AgentExists | BuiltinReadOnly>
    /** Dry run: every problem of a draft, and its job definition when it has none. Saves nothing. */
    readonly preview: (files: unknown) => Effect.Effect<Preview>
    /** Imports package files (or a ZIP): creates the agent, or saves a new version of an existing custom one. */
    readonly importFiles: (files: ReadonlyArray<{ readonly path: string; readonly content: Uint8Array | string }>, by: string) => Write<AgentView>
    readonly importZip: (zip: Uint8Array, by: string) => Effect.Effect<AgentView, Invalid | AgentExists | BuiltinReadOnly | ImportRejected>
    /** The package of the current (or a given) version as a ZIP. */
    readonly exportZip: (name: string, version?: number) => Effect.Effect<Uint8Array, AgentNotFound | AgentVersionNotFound>
    readonly versions: (name: string) => Effect.Effect<ReadonlyArray<VersionInfo>, AgentNotFound | BuiltinReadOnly>
    readonly version: (name: string, version: number) => Effect.Effect<{ readonly info: VersionInfo; readonly view: AgentView }, AgentNotFound | AgentVersionNotFound | BuiltinReadOnly>
    readonly restore: (name: string, version: number) => Effect.Effect<AgentView, AgentNotFound | AgentVersionNotFound | BuiltinReadOnly>
  }
>() {}

export const makeAgentStore = Effect.gen(function* () {
  const sql = yield* SqlClient
  const skills = yield* SkillStore
  const provide = <A, E>(e: Effect.Effect<A, E, SqlClient>) => Effect.provideService(e, SqlClient, sql)

  const validation = Effect.map(
    Effect.all([skills.contents, Effect.orDie(provide(repo.selectMcpServerNames))]),
    ([contents, mcpServers]) => ({ contents, ctx: { sharedSkills: new Set(contents.keys()), mcpServers } as ValidationContext })
  )

  // Versions are immutable, so a decoded package is cached by name@version for good; its validity
  // depends only on the sets of shared skill and MCP server names, so it is cached for the current sets.
  const packages = new Map<string, AgentPackage>()
  let validity: { key: string; problems: Map<string, ReadonlyArray<Problem>> } = { key: "", problems: new Map() }
  const MAX_CACHED = 10_000
  const problemsOf = (id: string, pkg: AgentPackage, ctx: ValidationContext): ReadonlyArray<Problem> => {
    const key = JSON.stringify([[...ctx.sharedSkills].sort(), [...(ctx.mcpServers ?? [])].sort()])
    if (validity.key !== key) validity = { key, problems: new Map() }
    const cached = validity.problems.get(id)
    if (cached !== undefined) return cached
    const problems = validateAgent(pkg, ctx)
    if (validity.problems.size < MAX_CACHED) validity.problems.set(id, problems)
    return problems
  }
  const currentPackages = (heads: ReadonlyArray<repo.AgentHead>) =>
    Effect.gen(function* () {
      const missing = heads.filter((h) => !packages.has(`${h.name}@${h.currentVersion}`))
      for (const row of yield* provide(repo.selectPackages(missing.map((h) => ({ name: h.name, version: h.currentVersion }))))) {
        if (packages.size >= MAX_CACHED) packages.clear()
        packages.set(`${row.name}@${row.version}`, row.package)
      }
      return heads.flatMap((h) => {
        const pkg = packages.get(`${h.name}@${h.currentVersion}`)
        return pkg === undefined ? [] : [{ head: h, pkg }]
      })
    })
  const bindingsOf = (name: string) =>
    Effect.map(provide(repo.selectBindings(name)), (rows): Array<Binding> => rows.map(({ agentName: _a, ...b }) => b))

  const entry = (pkg: AgentPackage, extra: { builtin: boolean; version: number | string; enabled: boolean; updatedAt: Date | null }, problems: ReadonlyArray<Problem>, bindings: ReadonlyArray<Binding>): CatalogEntry => ({
    name: pkg.name,
    builtin: extra.builtin,
    description: pkg.description,
    audience: pkg.audience,
    version: extra.version,
    enabled: extra.enabled,
    problems,
    binding: bindings.find((b) => b.projectId === "") ?? null,
    updatedAt: extra.updatedAt
  })

  const viewOf = (pkg: AgentPackage, extra: { builtin: boolean; version: number | string; enabled: boolean; updatedAt: Date | null }) =>
    Effect.gen(function* () {
      const { ctx } = yield* validation
      const bindings = yield* bindingsOf(pkg.name)
      const view: AgentView = { ...entry(pkg, extra, validateAgent(pkg, ctx), bindings), package: pkg, files: serializeAgentPackage(pkg), bindings }
      return view
    })
  const customView = (row: repo.AgentRow) => viewOf(row.package, { builtin: false, version: row.currentVersion, enabled: row.enabled, updatedAt: row.updatedAt })
  const builtinView = (pkg: AgentPackage) => viewOf(pkg, { builtin: true, version: pkg.version, enabled: true, updatedAt: null })

  const findCustom = (name: string) =>
    Effect.flatMap(provide(repo.selectAgents(name)), (rows) =>
      rows[0] === undefined ? Effect.fail(new AgentNotFound({ name })) : Effect.succeed(rows[0])
    )
  const notBuiltin = (name: string) =>
    builtinAgents().has(name) ? Effect.fail(new BuiltinReadOnly({ kind: "agent", name })) : Effect.void

  /** Format + installation checks of raw package files, with the shared skills as they are now. */
  const check = (files: ReadonlyArray<{ path: string; content: Uint8Array | string }>) =>
    Effect.flatMap(validation, ({ ctx }) =>
      Either.match(checkAgentPackage(files, ctx), {
        onLeft: (problems) => Effect.fail(new AgentInvalid({ problems })),
        onRight: (pkg) => Effect.succeed(pkg)
      })
    )
  const decodeFiles = (input: unknown) =>
    Effect.mapError(decodeAll(PackageFilesInput)(input), (problems) => new AgentInvalid({ problems }))

  /** Locks the shared skills a package lists, so none is deleted while this save commits. */
  const lockSkills = (pkg: AgentPackage) =>
    (pkg.skills ?? []).length === 0 ? Effect.void : sql`SELECT name FROM admin.agent_skill WHERE name IN ${sql.in(pkg.skills ?? [])} FOR SHARE`

  const createPackage = (pkg: AgentPackage, by: string, note: string): Write<AgentView> =>
    Effect.gen(function* () {
      yield* notBuiltin(pkg.name)
      const row = yield* sql.withTransaction(
        Effect.gen(function* () {
          if (yield* provide(repo.lockAgent(pkg.name))) return yield* Effect.fail(new AgentExists({ name: pkg.name }))
          yield* lockSkills(pkg)
          const version = yield* provide(repo.nextVersion(pkg.name))
          yield* provide(repo.insertVersion(pkg.name, version, pkg, by, note))
          yield* provide(repo.insertAgent(pkg.name, pkg.audience, version))
          return yield* findCustom(pkg.name)
        })
      )
      return yield* customView(row)
    }).pipe(
      // Two concurrent creates of one name: the loser hits the primary key.
      Effect.catchIf((e) => e._tag === "SqlError" && /duplicate key|unique/i.test(String(e.cause)), () => Effect.fail(new AgentExists({ name: pkg.name }))),
      Effect.catchTag("SqlError", Effect.die),
      Effect.catchTag("AgentNotFound", Effect.die)
    )

  const savePackage = (name: string, pkg: AgentPackage, by: string, note: string) =>
    Effect.gen(function* () {
      yield* notBuiltin(name)
      if (pkg.name !== name) {
        return yield* Effect.fail(new AgentInvalid({ problems: [{ path: `${pkg.name}.md#name`, message: `must stay "${name}" (copy the agent to rename it)` }] }))
      }
      const row = yield* sql.withTransaction(
        Effect.gen(function* () {
          if (!(yield* provide(repo.lockAgent(name)))) return yield* Effect.fail(new AgentNotFound({ name }))
          yield* lockSkills(pkg)
          const version = yield* provide(repo.nextVersion(name))
          yield* provide(repo.insertVersion(name, version, pkg, by, note))
          yield* provide(repo.setCurrent(name, pkg.audience, version))
          return yield* findCustom(name)
        })
      )
      return yield* customView(row)
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  const getView = (name: string) =>
    Effect.gen(function* () {
      const builtin = builtinAgents().get(name)
      if (builtin !== undefined) return yield* builtinView(builtin)
      return yield* customView(yield* findCustom(name))
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  const versionOf = (name: string, version: number) =>
    Effect.gen(function* () {
      yield* notBuiltin(name)
      const current = yield* findCustom(name)
      const row = yield* provide(repo.selectVersion(name, version))
      if (row === undefined) return yield* Effect.fail(new AgentVersionNotFound({ name, version }))
      return { current, row }
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  const importPackage = (files: ReadonlyArray<{ path: string; content: Uint8Array | string }>, by: string): Write<AgentView> =>
    Effect.gen(function* () {
      const pkg = yield* check(unwrapSingleFolder(files))
      const exists = (yield* provide(repo.selectAgents(pkg.name))).length > 0
      return exists
        ? yield* Effect.catchTag(savePackage(pkg.name, pkg, by, "imported"), "AgentNotFound", () => createPackage(pkg, by, "imported"))
        : yield* createPackage(pkg, by, "imported")
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  const service: AgentStore["Type"] = {
    catalog: Effect.gen(function* () {
      const { ctx } = yield* validation
      const bindings = yield* provide(repo.selectBindings())
      const bindingsFor = (name: string) => bindings.filter((b) => b.agentName === name).map(({ agentName: _a, ...b }) => b)
      const builtins = [...builtinAgents().values()].map((pkg) =>
        entry(pkg, { builtin: true, version: pkg.version, enabled: true, updatedAt: null }, problemsOf(`builtin:${pkg.name}`, pkg, ctx), bindingsFor(pkg.name))
      )
      const custom = (yield* currentPackages(yield* provide(repo.selectAgentHeads))).map(({ head, pkg }) =>
        entry(
          pkg,
          { builtin: false, version: head.currentVersion, enabled: head.enabled, updatedAt: head.updatedAt },
          problemsOf(`${head.name}@${head.currentVersion}`, pkg, ctx),
          bindingsFor(head.name)
        )
      )
      return [...builtins, ...custom]
    }).pipe(Effect.orDie),
    context: Effect.map(skills.list, (list) => ({
      kernelTools: KERNEL_TOOLS,
      sharedSkills: list.map((s) => ({ name: s.name, description: s.description, builtin: s.builtin })),
      reservedNames: [...builtinAgents().keys()]
    })),
    get: getView,
    create: (input, by) => Effect.flatMap(Effect.flatMap(decodeFiles(input), (i) => check(i.files)), (pkg) => createPackage(pkg, by, "created")),
    save: (name, input, by) => Effect.flatMap(Effect.flatMap(decodeFiles(input), (i) => check(i.files)), (pkg) => savePackage(name, pkg, by, "saved")),
    setEnabled: (name, enabled) =>
      Effect.gen(function* () {
        yield* notBuiltin(name)
        if (!(yield* provide(repo.setEnabled(name, enabled)))) return yield* Effect.fail(new AgentNotFound({ name }))
        return yield* getView(name)
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    remove: (name) =>
      Effect.gen(function* () {
        yield* notBuiltin(name)
        if (!(yield* provide(repo.deleteAgent(name)))) return yield* Effect.fail(new AgentNotFound({ name }))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    copy: (name, newName, by) =>
      Effect.gen(function* () {
        const source = yield* getView(name)
        const files = serializeAgentPackage({ ...source.package, name: newName })
        const pkg = yield* check(files)
        return yield* createPackage(pkg, by, `copied from ${name} v${source.version}`)
      }),
    preview: (input) =>
      Effect.gen(function* () {
        const { contents, ctx } = yield* validation
        const decoded = decodeAll(PackageFilesInput)(input)
        if (Either.isLeft(decoded)) return { problems: decoded.left, definition: null }
        const checked = checkAgentPackage(decoded.right.files, ctx)
        if (Either.isLeft(checked)) return { problems: checked.left, definition: null }
        return { problems: [], definition: toAgentDefinition(checked.right, { version: 0, sharedSkills: contents }) }
      }),
    importFiles: importPackage,
    importZip: (zip, by) =>
      Effect.flatMap(
        Effect.mapError(readZip(zip), (rejected) => new ImportRejected({ problems: rejected.problems })),
        (entries) => importPackage(entries, by)
      ),
    exportZip: (name, version) =>
      Effect.gen(function* () {
        if (version === undefined) return writeZip((yield* getView(name)).files)
        const builtin = builtinAgents().get(name)
        if (builtin !== undefined) {
          return builtin.version === version || String(builtin.version) === String(version)
            ? writeZip(serializeAgentPackage(builtin))
            : yield* Effect.fail(new AgentVersionNotFound({ name, version }))
        }
        const { row } = yield* Effect.catchTag(versionOf(name, version), "BuiltinReadOnly", Effect.die)
        return writeZip(serializeAgentPackage(row.package))
      }),
    versions: (name) =>
      Effect.gen(function* () {
        yield* notBuiltin(name)
        const current = yield* findCustom(name)
        const rows = yield* provide(repo.selectVersions(name))
        return rows.map((r) => ({ ...r, current: r.version === current.currentVersion }))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    version: (name, version) =>
      Effect.gen(function* () {
        const { current, row } = yield* versionOf(name, version)
        const view = yield* viewOf(row.package, { builtin: false, version: row.version, enabled: current.enabled, updatedAt: row.savedAt })
        const { package: _p, ...info } = row
        return { info: { ...info, current: row.version === current.currentVersion }, view }
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    restore: (name, version) =>
      Effect.gen(function* () {
        const { row } = yield* versionOf(name, version)
        yield* provide(repo.setCurrent(name, row.package.audience, version))
        return yield* getView(name)
      }).pipe(Effect.catchTag("SqlError", Effect.die))
  }
  return service
})

export const AgentStoreLive = Layer.effect(AgentStore, Effect.map(makeAgentStore, (service) => traced("AgentStore", service)))
