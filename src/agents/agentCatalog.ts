/**
 * The agent store's read side: the catalog (built-ins plus custom agents' current versions, with
 * cached packages and validity), one agent's view, the editor's context and the dry-run preview.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Either } from "effect"
import { KERNEL_TOOLS } from "../contract/AgentDefinition.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { serializeAgentPackage, type AgentPackage } from "./AgentPackage.ts"
import { installationProblems } from "./agentChecks.ts"
import { PackageFilesInput, type AgentView, type Binding, type CatalogEntry, type CatalogPage, type Preview } from "./AgentView.ts"
import * as repo from "./agentRepo.ts"
import { selectPendingGate, verdictOf } from "./evalRepo.ts"
import { builtinAgents, builtinSkills } from "./builtins.ts"
import * as entries from "./catalogEntries.ts"
import { ALL_AGENTS, encodeCursor, queryKey, searchWords, type CatalogQuery } from "./catalogQuery.ts"
import { AgentNotFound, AgentUnavailable, BuiltinReadOnly } from "./errors.ts"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
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

  // A built-in's validity depends only on the sets of shared skill and MCP server names, so it is
  // cached for the current sets.
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
  const customView = (row: repo.AgentRow) =>
    Effect.gen(function* () {
      const view = yield* viewOf(row.package, { builtin: false, version: row.currentVersion, enabled: row.enabled, updatedAt: row.updatedAt })
      const pending = yield* Effect.orDie(provide(selectPendingGate(row.name, row.currentVersion)))
      return pending === undefined ? view : { ...view, gate: verdictOf(pending) }
    })
  const builtinView = (pkg: AgentPackage) => viewOf(pkg, { builtin: true, version: builtinVersion(pkg), enabled: true, updatedAt: null })

  const findCustom = (name: string) =>
    Effect.flatMap(provide(repo.selectAgents(name)), (rows) =>
      rows[0] === undefined ? Effect.fail(new AgentNotFound({ name })) : Effect.succeed(rows[0])
    )
  const notBuiltin = (name: string) =>
    builtinAgents().has(name) ? Effect.fail(new BuiltinReadOnly({ kind: "agent", name })) : Effect.void

  /** Does an entry pass the state filter? */
  const stateMatches = (state: CatalogQuery["state"], e: { readonly enabled: boolean; readonly problems: ReadonlyArray<Problem> }) =>
    state === "all" ||
    (state === "valid" && e.problems.length === 0) ||
    (state === "problems" && e.problems.length > 0) ||
    (state === "enabled" && e.enabled) ||
    (state === "disabled" && !e.enabled)

  /** One page from SQL over the precomputed entries (custom agents) and memory (built-ins, first). */
  const computePage = (query: CatalogQuery, generation: string) =>
    Effect.gen(function* () {
      yield* provide(entries.fillMissingEntries)
      const [customSkills, mcpServers] = yield* Effect.all([provide(entries.selectSkillNames), provide(repo.selectMcpServerNames)])
      const ctx: ValidationContext = { sharedSkills: new Set([...builtinSkills().keys(), ...customSkills]), mcpServers }
      const words = searchWords(query.q)
      const { cursor, limit, state } = query

      const builtinMatches = (query.kind === "custom" ? [] : [...builtinAgents().values()])
        .filter((pkg) => {
          const text = `${pkg.name} ${pkg.description}`.toLowerCase()
          return words.every((w) => text.includes(w)) && (query.audience === "all" || pkg.audience === query.audience)
        })
        .map((pkg) => ({ pkg, enabled: true, problems: problemsOf(`builtin:${pkg.name}`, pkg, ctx) }))
        .filter((b) => stateMatches(state, b))
      const builtinsAfter = cursor === null ? builtinMatches : cursor.builtin ? builtinMatches.filter((b) => b.pkg.name > cursor.name) : []
      const builtinPage = limit === null ? builtinsAfter : builtinsAfter.slice(0, limit)
      const moreBuiltins = limit !== null && builtinsAfter.length > limit
      const remaining = limit === null ? null : limit - builtinPage.length

      const filter: entries.CustomFilter = { words, audience: query.audience, enabled: state === "enabled" ? true : state === "disabled" ? false : null }
      const customAfter = cursor !== null && !cursor.builtin ? cursor.name : null
      const withProblems = (row: entries.EntryRow) => ({ row, problems: [...row.problems, ...installationProblems(entries.draftOfRefs(row.refs), ctx)] })
      let customPage: Array<ReturnType<typeof withProblems>> = []
      let customMatched = 0
      let moreCustom = false
      if (query.kind !== "builtin") {
        if (state === "valid" || state === "problems") {
          // Validity depends on the installation (skills, MCP servers): filtered here, on the light entries.
          const matching = (yield* provide(entries.selectEntries(filter, null, null))).map(withProblems).filter((x) => stateMatches(state, { enabled: x.row.enabled, problems: x.problems }))
          customMatched = matching.length
          const after = customAfter === null ? matching : matching.filter((x) => x.row.name > customAfter)
          customPage = remaining === null ? after : moreBuiltins ? [] : after.slice(0, remaining)
          moreCustom = remaining !== null && !moreBuiltins && after.length > remaining
        } else {
          customMatched = yield* provide(entries.countEntries(filter))
          if (remaining === 0) moreCustom = !moreBuiltins && customMatched > 0
          else if (!moreBuiltins) {
            const rows = yield* provide(entries.selectEntries(filter, customAfter, remaining === null ? null : remaining + 1))
            moreCustom = remaining !== null && rows.length > remaining
            customPage = (remaining === null ? rows : rows.slice(0, remaining)).map(withProblems)
          }
        }
      }
      const total = builtinAgents().size + (yield* provide(entries.countEntries({ words: [], audience: "all", enabled: null })))
      const names = [...builtinPage.map((b) => b.pkg.name), ...customPage.map((c) => c.row.name)]
      const bindings = new Map((yield* bindingStore.defaults(names)).map((b) => [b.agentName, b] as const))
      const pageEntries: Array<CatalogEntry> = [
        ...builtinPage.map((b) =>
          entry(b.pkg, { builtin: true, version: builtinVersion(b.pkg), enabled: true, updatedAt: null }, b.problems, bindings.has(b.pkg.name) ? [bindings.get(b.pkg.name)!] : [])
        ),
        ...customPage.map(({ row, problems }): CatalogEntry => ({
          name: row.name,
          builtin: false,
          description: row.description,
          audience: row.audience,
          version: row.currentVersion,
          enabled: row.enabled,
          problems,
          binding: bindings.get(row.name) ?? null,
          updatedAt: row.updatedAt
        }))
      ]
      const last = pageEntries[pageEntries.length - 1]
      const page: CatalogPage = {
        entries: pageEntries,
        total,
        matched: builtinMatches.length + customMatched,
        nextCursor: (moreBuiltins || moreCustom) && last !== undefined ? encodeCursor({ builtin: last.builtin, name: last.name }) : null,
        generation
      }
      return page
    })

  // Pages are cached by query for the current catalog generation (migration 047's counter, bumped in
  // the writing transaction by any change to agents, bindings, shared skills or MCP servers).
  const pageCache = new Map<string, CatalogPage>()
  let cachedGeneration = ""
  const MAX_CACHED_PAGES = 512
  const page = (query: CatalogQuery): Effect.Effect<CatalogPage> =>
    Effect.gen(function* () {
      const generation = yield* provide(entries.selectGeneration)
      if (generation !== cachedGeneration) {
        pageCache.clear()
        cachedGeneration = generation
      }
      const key = queryKey(query)
      const hit = pageCache.get(key)
      if (hit !== undefined) return hit
      const computed = yield* computePage(query, generation)
      if (cachedGeneration === generation) {
        if (pageCache.size >= MAX_CACHED_PAGES) pageCache.clear()
        pageCache.set(key, computed)
      }
      return computed
    }).pipe(Effect.orDie)

  const getView = (name: string) =>
    Effect.gen(function* () {
      const builtin = builtinAgents().get(name)
      if (builtin !== undefined) return yield* builtinView(builtin)
      return yield* customView(yield* findCustom(name))
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  // What a job needs and nothing else: no bindings, no files, no view; validity from the same cache as the catalog.
  const runnable = (name: string, found: { readonly pkg: AgentPackage; readonly id: string; readonly version: number; readonly enabled: boolean }) =>
    Effect.gen(function* () {
      if (!found.enabled) return yield* new AgentUnavailable({ name, reason: "disabled", problems: [] })
      if (found.pkg.audience !== "runtime") return yield* new AgentUnavailable({ name, reason: "member", problems: [] })
      const { contents, ctx } = yield* validation
      const problems = problemsOf(found.id, found.pkg, ctx)
      if (problems.length > 0) return yield* new AgentUnavailable({ name, reason: "invalid", problems })
      return toAgentDefinition(found.pkg, { version: found.version, sharedSkills: contents })
    })
  const definition = (name: string): Effect.Effect<AgentDefinition, AgentUnavailable> =>
    Effect.gen(function* () {
      const builtin = builtinAgents().get(name)
      const found = builtin !== undefined
        ? { pkg: builtin, id: `builtin:${name}`, version: builtinVersion(builtin), enabled: true }
        : yield* Effect.map(findCustom(name), (row) => ({ pkg: row.package, id: `${name}@${row.currentVersion}`, version: row.currentVersion, enabled: row.enabled }))
      return yield* runnable(name, found)
    }).pipe(
      Effect.catchTag("AgentNotFound", () => new AgentUnavailable({ name, reason: "unknown", problems: [] })),
      Effect.catchTag("SqlError", Effect.die)
    )
  /** `definition` of one stored version, current or not (a pinned job: evals). */
  const definitionAt = (name: string, version: number): Effect.Effect<AgentDefinition, AgentUnavailable> =>
    Effect.gen(function* () {
      const builtin = builtinAgents().get(name)
      const noVersion = new AgentUnavailable({ name, reason: "version", version, problems: [] })
      if (builtin !== undefined) {
        if (builtinVersion(builtin) !== version) return yield* noVersion
        return yield* runnable(name, { pkg: builtin, id: `builtin:${name}`, version, enabled: true })
      }
      const row = yield* findCustom(name)
      const stored = yield* provide(repo.selectVersion(name, version))
      if (stored === undefined) return yield* noVersion
      return yield* runnable(name, { pkg: stored.package, id: `${name}@${version}`, version, enabled: row.enabled })
    }).pipe(
      Effect.catchTag("AgentNotFound", () => new AgentUnavailable({ name, reason: "unknown", problems: [] })),
      Effect.catchTag("SqlError", Effect.die)
    )

  return {
    sql,
    provide,
    definition,
    definitionAt,
    validation,
    viewOf,
    customView,
    findCustom,
    notBuiltin,
    get: getView,
    catalog: Effect.map(page(ALL_AGENTS), (p) => p.entries),
    page,
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
