/**
 * The agent store's write side: create, save (each a new immutable version made current), copy,
 * import (files or ZIP), enable/disable and delete. Saves lock the shared skills they list.
 */
import { Effect, Either } from "effect"
import { decodeAll } from "../contract/Problem.ts"
import { serializeAgentPackage, type AgentPackage } from "./AgentPackage.ts"
import type { AgentCatalog } from "./agentCatalog.ts"
import { PackageFilesInput, type AgentView, type ImportedAgent, type Write } from "./AgentView.ts"
import * as repo from "./agentRepo.ts"
import { storeDefects } from "../db/StoreError.ts"
import { insertRun } from "./evalRepo.ts"
import { AgentExists, AgentInvalid, AgentNotFound, ImportRejected } from "./errors.ts"
import { checkAgentPackage } from "./validateAgent.ts"
import { adaptAgentFiles, type ImportOptions } from "./interop.ts"
import { isRecord } from "./interop.ts"
import { readZip, unwrapSingleFolder } from "./zip.ts"

/** The project eval jobs run in unless one is given (reserved: docs/evals.md). */
export const EVALS_PROJECT = "kintsugi-evals"

/** JSON with sorted object keys: two packages are the same when this text is. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    isRecord(v)
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([, x]) => x !== undefined)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        )
      : v
  )

const samePackage = (a: AgentPackage, b: AgentPackage): boolean => canonical(a) === canonical(b)

/** The write members of AgentStore over the read side `c`. */
export const makeAgentWrites = (c: AgentCatalog) => {
  const { sql, provide, validation, customView, findCustom, notBuiltin, get: getView } = c
  /** Format + installation checks of raw package files, with the shared skills as they are now. */
  const check = (files: ReadonlyArray<{ path: string; content: Uint8Array | string }>) =>
    Effect.flatMap(validation, ({ ctx }) =>
      Either.match(checkAgentPackage(files, ctx), {
        onLeft: (problems) => Effect.fail(new AgentInvalid({ problems })),
        onRight: (pkg) => Effect.succeed(pkg)
      })
    )
  const decodeFiles = (input: unknown) => Effect.mapError(decodeAll(PackageFilesInput)(input), (problems) => new AgentInvalid({ problems }))

  /** Locks the shared skills a package lists, so none is deleted while this save commits. */
  const lockSkills = (pkg: AgentPackage) =>
    (pkg.skills ?? []).length === 0
      ? Effect.void
      : sql`SELECT name FROM admin.agent_skill WHERE name IN ${sql.in(pkg.skills ?? [])} FOR SHARE`

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
      Effect.catchIf(
        (e) => e._tag === "SqlError" && /duplicate key|unique/i.test(String(e.cause)),
        () => Effect.fail(new AgentExists({ name: pkg.name }))
      ),
      // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
      storeDefects("AgentStore.create"),
      // The agent was inserted in this transaction: AgentNotFound here would be a defect.
      Effect.catchTag("AgentNotFound", Effect.die)
    )

  /**
   * Saves `pkg` as the next version of `name` and makes it current, unless it equals the current
   * version's package: a save (or re-import) without a change adds no version and returns the agent as it is.
   */
  const savePackage = (name: string, pkg: AgentPackage, by: string, note: string, changeNote = "") =>
    Effect.gen(function* () {
      yield* notBuiltin(name)
      if (pkg.name !== name) {
        return yield* Effect.fail(
          new AgentInvalid({ problems: [{ path: `${pkg.name}.md#name`, message: `must stay "${name}" (copy the agent to rename it)` }] })
        )
      }
      const row = yield* sql.withTransaction(
        Effect.gen(function* () {
          if (!(yield* provide(repo.lockAgent(name)))) return yield* Effect.fail(new AgentNotFound({ name }))
          const before = yield* findCustom(name)
          if (samePackage(before.package, pkg)) return before
          yield* lockSkills(pkg)
          const version = yield* provide(repo.nextVersion(name))
          yield* provide(repo.insertVersion(name, version, pkg, by, note, changeNote.trim()))
          // `gate: evals` (before or now): stored, not current; the Evals service runs its evals and promotes it when all pass.
          if (before.package.gate === "evals" || pkg.gate === "evals") {
            yield* provide(insertRun({ agent: name, version, project: EVALS_PROJECT, gate: true, status: "waiting", by }))
          } else yield* provide(repo.setCurrent(name, pkg.audience, version))
          return yield* findCustom(name)
        })
      )
      return yield* customView(row)
    }).pipe(
      // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
      storeDefects("AgentStore.save")
    )

  /** Imports package files, Claude Code subagent files included (adapted first): every problem in one round. */
  const importPackage = (
    files: ReadonlyArray<{ readonly path: string; readonly content: Uint8Array | string }>,
    by: string,
    options: ImportOptions = {}
  ): Write<ImportedAgent> =>
    Effect.gen(function* () {
      const adapted = adaptAgentFiles(unwrapSingleFolder(files), options)
      const { ctx } = yield* validation
      const checked = checkAgentPackage(adapted.files, ctx)
      const problems = [...adapted.problems, ...(Either.isLeft(checked) ? checked.left : [])]
      if (problems.length > 0 || Either.isLeft(checked)) return yield* Effect.fail(new AgentInvalid({ problems }))
      const pkg = checked.right
      const before = (yield* provide(repo.selectAgents(pkg.name)))[0]
      const agent =
        before !== undefined
          ? yield* Effect.catchTag(savePackage(pkg.name, pkg, by, "imported"), "AgentNotFound", () => createPackage(pkg, by, "imported"))
          : yield* createPackage(pkg, by, "imported")
      // savePackage adds no version for a package equal to the current one: the version is then the one before.
      return {
        agent,
        changed: before === undefined || agent.version !== before.currentVersion,
        notes: adapted.notes,
        warnings: adapted.warnings,
        toolMapping: adapted.toolMapping
      }
    }).pipe(
      // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
      storeDefects("AgentStore.importFiles")
    )

  return {
    create: (input: unknown, by: string) =>
      Effect.flatMap(
        Effect.flatMap(decodeFiles(input), (i) => check(i.files)),
        (pkg) => createPackage(pkg, by, "created")
      ),
    save: (name: string, input: unknown, by: string, changeNote?: string) =>
      Effect.flatMap(
        Effect.flatMap(decodeFiles(input), (i) => check(i.files)),
        (pkg) => savePackage(name, pkg, by, "saved", changeNote ?? "")
      ),
    setEnabled: (name: string, enabled: boolean) =>
      Effect.gen(function* () {
        yield* notBuiltin(name)
        if (!(yield* provide(repo.setEnabled(name, enabled)))) return yield* Effect.fail(new AgentNotFound({ name }))
        return yield* getView(name)
      }).pipe(
        // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
        storeDefects("AgentStore.setEnabled")
      ),
    remove: (name: string) =>
      Effect.gen(function* () {
        yield* notBuiltin(name)
        if (!(yield* provide(repo.deleteAgent(name)))) return yield* Effect.fail(new AgentNotFound({ name }))
      }).pipe(
        // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
        storeDefects("AgentStore.remove")
      ),
    copy: (name: string, newName: string, by: string) =>
      Effect.gen(function* () {
        const source = yield* getView(name)
        const files = serializeAgentPackage({ ...source.package, name: newName })
        const pkg = yield* check(files)
        return yield* createPackage(pkg, by, `copied from ${name} v${source.version}`)
      }),
    importFiles: importPackage,
    importZip: (zip: Uint8Array, by: string, options: ImportOptions = {}) =>
      Effect.flatMap(
        Effect.mapError(readZip(zip), (rejected) => new ImportRejected({ problems: rejected.problems })),
        (entries) => importPackage(entries, by, options)
      )
  }
}
