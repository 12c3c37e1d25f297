/**
 * The agent store's read side: the catalog (built-ins plus custom agents' current versions, with
 * cached packages and validity), one agent's view, the editor's context and the dry-run preview.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Either } from "effect"
import { KERNEL_TOOLS } from "../contract/AgentDefinition.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { serializeAgentPackage, type AgentPackage } from "./AgentPackage.ts"
import { PackageFilesInput, type AgentView, type Binding, type CatalogEntry, type Preview } from "./AgentView.ts"
import * as repo from "./agentRepo.ts"
import { builtinAgents } from "./builtins.ts"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import { AgentNotFound, AgentUnavailable, BuiltinReadOnly } from "./errors.ts"
import { SkillStore } from "./SkillStore.ts"
import { Bindings } from "../providers/Bindings.ts"
import { checkAgentPackage, toAgentDefinition, validateAgent, type ValidationContext } from "./validateAgent.ts"

/**
 * A built-in's version number: its shipped `version:` when that is a positive integer (every built-in's
 * is; test/agents/builtins.test.ts checks), else 1. Built-ins are versioned by the release.
 */
export const builtinVersion = (pkg: AgentPackage): number =>
  typeof pkg.version === "number" && Number.isInteger(pkg.version) && pkg.version >= 1 ? pkg.version : 1

/** The read side, and the helpers the write and version sides build on. */
export const makeAgentCatalog = Effect.gen(function* () {
  const sql = yield* SqlClient
  const skills = yield* SkillStore
  const bindingStore = yield* Bindings
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
    bindingStore.list(name)

  const entry = (pkg: AgentPackage, extra: { builtin: boolean; version: number; enabled: boolean; updatedAt: Date | null }, problems: ReadonlyArray<Problem>, bindings: ReadonlyArray<Binding>): CatalogEntry => ({
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

  const viewOf = (pkg: AgentPackage, extra: { builtin: boolean; version: number; enabled: boolean; updatedAt: Date | null }) =>
    Effect.gen(function* () {
      const { ctx } = yield* validation
      const bindings = yield* bindingsOf(pkg.name)
      const view: AgentView = { ...entry(pkg, extra, validateAgent(pkg, ctx), bindings), package: pkg, files: serializeAgentPackage(pkg), bindings }
      return view
    })
  const customView = (row: repo.AgentRow) => viewOf(row.package, { builtin: false, version: row.currentVersion, enabled: row.enabled, updatedAt: row.updatedAt })
  const builtinView = (pkg: AgentPackage) => viewOf(pkg, { builtin: true, version: builtinVersion(pkg), enabled: true, updatedAt: null })

  const findCustom = (name: string) =>
    Effect.flatMap(provide(repo.selectAgents(name)), (rows) =>
      rows[0] === undefined ? Effect.fail(new AgentNotFound({ name })) : Effect.succeed(rows[0])
    )
  const notBuiltin = (name: string) =>
    builtinAgents().has(name) ? Effect.fail(new BuiltinReadOnly({ kind: "agent", name })) : Effect.void

  const getView = (name: string) =>
    Effect.gen(function* () {
      const builtin = builtinAgents().get(name)
      if (builtin !== undefined) return yield* builtinView(builtin)
      return yield* customView(yield* findCustom(name))
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  // What a job needs and nothing else: no bindings, no files, no view; validity from the same cache as the catalog.
  const definition = (name: string): Effect.Effect<AgentDefinition, AgentUnavailable> =>
    Effect.gen(function* () {
      const builtin = builtinAgents().get(name)
      const found = builtin !== undefined
        ? { pkg: builtin, id: `builtin:${name}`, version: builtinVersion(builtin), enabled: true }
        : yield* Effect.map(findCustom(name), (row) => ({ pkg: row.package, id: `${name}@${row.currentVersion}`, version: row.currentVersion, enabled: row.enabled }))
      if (!found.enabled) return yield* new AgentUnavailable({ name, reason: "disabled", problems: [] })
      if (found.pkg.audience !== "runtime") return yield* new AgentUnavailable({ name, reason: "member", problems: [] })
      const { contents, ctx } = yield* validation
      const problems = problemsOf(found.id, found.pkg, ctx)
      if (problems.length > 0) return yield* new AgentUnavailable({ name, reason: "invalid", problems })
      return toAgentDefinition(found.pkg, { version: found.version, sharedSkills: contents })
    }).pipe(
      Effect.catchTag("AgentNotFound", () => new AgentUnavailable({ name, reason: "unknown", problems: [] })),
      Effect.catchTag("SqlError", Effect.die)
    )

  return {
    sql,
    provide,
    definition,
    validation,
    viewOf,
    customView,
    findCustom,
    notBuiltin,
    get: getView,
    catalog: Effect.gen(function* () {
      const { ctx } = yield* validation
      const bindings = yield* bindingStore.list()
      const bindingsFor = (name: string) => bindings.filter((b) => b.agentName === name)
      const builtins = [...builtinAgents().values()].map((pkg) =>
        entry(pkg, { builtin: true, version: builtinVersion(pkg), enabled: true, updatedAt: null }, problemsOf(`builtin:${pkg.name}`, pkg, ctx), bindingsFor(pkg.name))
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
    preview: (input: unknown): Effect.Effect<Preview> =>
      Effect.gen(function* () {
        const { contents, ctx } = yield* validation
        const decoded = decodeAll(PackageFilesInput)(input)
        if (Either.isLeft(decoded)) return { problems: decoded.left, definition: null }
        const checked = checkAgentPackage(decoded.right.files, ctx)
        if (Either.isLeft(checked)) return { problems: checked.left, definition: null }
        return { problems: [], definition: toAgentDefinition(checked.right, { version: 0, sharedSkills: contents }) }
      })
  }
})

export type AgentCatalog = Effect.Effect.Success<typeof makeAgentCatalog>
