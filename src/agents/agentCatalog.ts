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
import { storeDefects } from "../db/StoreError.ts"
import { selectPendingGate, verdictOf } from "./evalRepo.ts"
import { builtinAgents, builtinSkills } from "./builtins.ts"
import * as entries from "./catalogEntries.ts"
import { ALL_AGENTS, compareEntries, encodeCursor, queryKey, searchWords, sortKey, type CatalogQuery } from "./catalogQuery.ts"
import { cachedUntilWrite, DbWrites } from "../db/DbWrites.ts"
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

/** A catalog entry and its lower-cased `name description`, which a search matches every word in. */
interface Listed {
  readonly entry: CatalogEntry
  readonly search: string
}

interface Listing {
  readonly generation: string
  readonly listed: ReadonlyArray<Listed>
}

/** The read side, and the helpers the write and version sides build on. */
export const makeAgentCatalog = Effect.gen(function* () {
  const sql = yield* SqlClient
  const skills = yield* SkillStore
  const bindingStore = yield* Bindings
  const writes = yield* DbWrites
  const provide = <A, E>(e: Effect.Effect<A, E, SqlClient>) => Effect.provideService(e, SqlClient, sql)

  const validation = Effect.map(
    // Validation feeds AgentStore's reads, whose shape has no database failure: a store failure is a defect.
    Effect.all([skills.contents, storeDefects("AgentStore.validation")(provide(repo.selectMcpServerNames))]),
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
  const bindingsOf = (name: string) => bindingStore.list(name)

  const entry = (
    pkg: AgentPackage,
    extra: { builtin: boolean; version: number; enabled: boolean; updatedAt: Date | null },
    problems: ReadonlyArray<Problem>,
    bindings: ReadonlyArray<Binding>
  ): CatalogEntry => ({
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
      const view: AgentView = {
        ...entry(pkg, extra, validateAgent(pkg, ctx), bindings),
        package: pkg,
        files: serializeAgentPackage(pkg),
        bindings
      }
      return view
    })
  const customView = (row: repo.AgentRow) =>
    Effect.gen(function* () {
      const view = yield* viewOf(row.package, {
        builtin: false,
        version: row.currentVersion,
        enabled: row.enabled,
        updatedAt: row.updatedAt
      })
      // A view is part of AgentStore's reads, whose shape has no database failure: a store failure is a defect.
      const pending = yield* storeDefects("AgentStore.view")(provide(selectPendingGate(row.name, row.currentVersion)))
      return pending === undefined ? view : { ...view, gate: verdictOf(pending) }
    })
  const builtinView = (pkg: AgentPackage) => viewOf(pkg, { builtin: true, version: builtinVersion(pkg), enabled: true, updatedAt: null })

  const findCustom = (name: string) =>
    Effect.flatMap(provide(repo.selectAgents(name)), (rows) =>
      rows[0] === undefined ? Effect.fail(new AgentNotFound({ name })) : Effect.succeed(rows[0])
    )
  const notBuiltin = (name: string) => (builtinAgents().has(name) ? Effect.fail(new BuiltinReadOnly({ kind: "agent", name })) : Effect.void)

  /** Does an entry pass the state filter? */
  const stateMatches = (state: CatalogQuery["state"], e: { readonly enabled: boolean; readonly problems: ReadonlyArray<Problem> }) =>
    state === "all" ||
    (state === "valid" && e.problems.length === 0) ||
    (state === "problems" && e.problems.length > 0) ||
    (state === "enabled" && e.enabled) ||
    (state === "disabled" && !e.enabled)

  /**
   * The whole catalog at one generation, in catalog order (built-ins, then custom agents, each by
   * name), every entry with its validity, default binding and lower-cased search text: read once per
   * generation from the precomputed entries; every page, filter and search is cut from it in memory.
   */
  const loadListing = (generation: string) =>
    Effect.gen(function* () {
      yield* provide(entries.fillMissingEntries)
      const [customSkills, mcpServers, rows, bindings] = yield* Effect.all([
        provide(entries.selectSkillNames),
        provide(repo.selectMcpServerNames),
        provide(entries.selectAllEntries),
        bindingStore.list()
      ])
      const ctx: ValidationContext = { sharedSkills: new Set([...builtinSkills().keys(), ...customSkills]), mcpServers }
      const defaults = new Map(bindings.filter((b) => b.projectId === "").map((b) => [b.agentName, b] as const))
      const builtins = [...builtinAgents().values()].map(
        (pkg): Listed => ({
          search: `${pkg.name} ${pkg.description}`.toLowerCase(),
          entry: entry(
            pkg,
            { builtin: true, version: builtinVersion(pkg), enabled: true, updatedAt: null },
            problemsOf(`builtin:${pkg.name}`, pkg, ctx),
            [defaults.get(pkg.name)].flatMap((b) => (b === undefined ? [] : [b]))
          )
        })
      )
      const customs = rows.map(
        (row): Listed => ({
          search: row.search,
          entry: {
            name: row.name,
            builtin: false,
            description: row.description,
            audience: row.audience,
            version: row.currentVersion,
            enabled: row.enabled,
            problems: [...row.problems, ...installationProblems(entries.draftOfRefs(row.refs), ctx)],
            binding: defaults.get(row.name) ?? null,
            updatedAt: row.updatedAt
          }
        })
      )
      return { generation, listed: [...builtins, ...customs] }
    })

  /** One page of `listing`: the matching entries in the query's order after the cursor, at most `limit`. */
  const cut = (listing: Listing, query: CatalogQuery): CatalogPage => {
    const words = searchWords(query.q)
    const { cursor, limit } = query
    const matching = listing.listed.filter(
      ({ entry: e, search }) =>
        (query.kind === "all" || (query.kind === "builtin") === e.builtin) &&
        (query.audience === "all" || e.audience === query.audience) &&
        stateMatches(query.state, e) &&
        words.every((w) => search.includes(w))
    )
    const compare = compareEntries(query.order)
    const keyed = (e: CatalogEntry) => ({ key: sortKey(e, query.sort), name: e.name })
    const ordered = [...matching].sort((x, y) => compare(keyed(x.entry), keyed(y.entry)))
    const after = cursor === null ? ordered : ordered.filter(({ entry: e }) => compare(keyed(e), cursor) > 0)
    const shown = limit === null ? after : after.slice(0, limit)
    const last = shown[shown.length - 1]?.entry
    return {
      entries: shown.map((l) => l.entry),
      total: listing.listed.length,
      matched: matching.length,
      nextCursor:
        limit !== null && after.length > limit && last !== undefined
          ? encodeCursor({ sort: query.sort, order: query.order, key: sortKey(last, query.sort), name: last.name })
          : null,
      generation: listing.generation
    }
  }

  // The catalog generation (migration 047's counter, bumped in the writing transaction by any change to
  // agents, bindings, shared skills or MCP servers), answered from memory until a write (DbWrites).
  const generations = cachedUntilWrite<"generation", string>(writes, { topic: "catalog", max: 1, ttlMs: Number.POSITIVE_INFINITY })
  // The catalog's shape has no database failure (every portal page and job admission read it): a store failure is a defect.
  const currentGeneration = generations("generation", storeDefects("AgentStore.catalog")(provide(entries.selectGeneration)))
  // The listing of the newest generation seen, loaded once however many requests ask at once (a
  // failed load is not kept); pages are cached by query for that generation.
  let listing: { readonly generation: string; readonly load: Effect.Effect<Listing> } | undefined
  const listingAt = (generation: string): Effect.Effect<Listing> =>
    Effect.suspend(() => {
      if (listing?.generation === generation) return listing.load
      // As the generation above: a store failure while listing is a defect of the catalog read.
      return Effect.flatMap(Effect.cached(storeDefects("AgentStore.catalog")(loadListing(generation))), (load) => {
        const held = {
          generation,
          load: Effect.tapErrorCause(load, () => Effect.sync(() => void (listing === held ? (listing = undefined) : undefined)))
        }
        listing = held
        return held.load
      })
    })
  const pageCache = new Map<string, CatalogPage>()
  let cachedGeneration = ""
  const MAX_CACHED_PAGES = 512
  const page = (query: CatalogQuery): Effect.Effect<CatalogPage> =>
    Effect.gen(function* () {
      const generation = yield* currentGeneration
      if (generation !== cachedGeneration) {
        pageCache.clear()
        cachedGeneration = generation
      }
      const key = queryKey(query)
      const hit = pageCache.get(key)
      if (hit !== undefined) return hit
      const computed = cut(yield* listingAt(generation), query)
      if (cachedGeneration === generation) {
        if (pageCache.size >= MAX_CACHED_PAGES) pageCache.clear()
        pageCache.set(key, computed)
      }
      return computed
    })

  const getView = (name: string) =>
    Effect.gen(function* () {
      const builtin = builtinAgents().get(name)
      if (builtin !== undefined) return yield* builtinView(builtin)
      return yield* customView(yield* findCustom(name))
    }).pipe(
      // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
      storeDefects("AgentStore.get")
    )

  // What a job needs and nothing else: no bindings, no files, no view; validity from the same cache as the catalog.
  const runnable = (
    name: string,
    found: { readonly pkg: AgentPackage; readonly id: string; readonly version: number; readonly enabled: boolean }
  ) =>
    Effect.gen(function* () {
      if (!found.enabled) return yield* new AgentUnavailable({ name, reason: "disabled", problems: [] })
      if (found.pkg.audience !== "runtime") return yield* new AgentUnavailable({ name, reason: "member", problems: [] })
      const { contents, ctx } = yield* validation
      const problems = problemsOf(found.id, found.pkg, ctx)
      if (problems.length > 0) return yield* new AgentUnavailable({ name, reason: "invalid", problems })
      return toAgentDefinition(found.pkg, { version: found.version, sharedSkills: contents })
    })
  const readDefinition = (name: string): Effect.Effect<AgentDefinition, AgentUnavailable> =>
    Effect.gen(function* () {
      const builtin = builtinAgents().get(name)
      const found =
        builtin !== undefined
          ? { pkg: builtin, id: `builtin:${name}`, version: builtinVersion(builtin), enabled: true }
          : yield* Effect.map(findCustom(name), (row) => ({
              pkg: row.package,
              id: `${name}@${row.currentVersion}`,
              version: row.currentVersion,
              enabled: row.enabled
            }))
      return yield* runnable(name, found)
    }).pipe(
      Effect.catchTag("AgentNotFound", () => new AgentUnavailable({ name, reason: "unknown", problems: [] })),
      // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
      storeDefects("AgentStore.definition")
    )
  // What a job runs, by agent name (every POST /api/jobs and every job start asks), answered from memory
  // until a write to the catalog's tables (agents, versions, bindings, shared skills, MCP servers: DbWrites'
  // "catalog" topic), as the catalog's generation is; an unavailable agent is read again each time.
  const definitions = cachedUntilWrite<string, Either.Either<AgentDefinition, AgentUnavailable>>(writes, {
    topic: "catalog",
    max: 1000,
    ttlMs: Number.POSITIVE_INFINITY
  })
  const definition = (name: string): Effect.Effect<AgentDefinition, AgentUnavailable> =>
    Effect.flatMap(definitions(name, Effect.either(readDefinition(name)), Either.isRight), (found) => found)
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
      // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
      storeDefects("AgentStore.definitionAt")
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
