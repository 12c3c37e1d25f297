/**
 * The agent store's version side: a custom agent's history, one version's view, restoring an older
 * version as current (numbers never reused), and the ZIP export of the current or a given version.
 */
import { Effect } from "effect"
import { serializeAgentPackage } from "./AgentPackage.ts"
import { builtinVersion, type AgentCatalog } from "./agentCatalog.ts"
import * as repo from "./agentRepo.ts"
import { storeDefects } from "../db/StoreError.ts"
import { selectLatestRuns, verdictOf, type EvalRun } from "./evalRepo.ts"
import { builtinAgents } from "./builtins.ts"
import type { VersionInfo } from "./AgentView.ts"
import { AgentVersionNotFound } from "./errors.ts"
import { writeZip } from "./zip.ts"

/** A stored version as the API shows it; `changeNote` only when the author wrote one. */
const versionInfo = (r: Omit<repo.VersionRow, "package">, currentVersion: number, runs: ReadonlyArray<EvalRun>): VersionInfo => {
  const { changeNote, ...rest } = r
  const run = runs.find((x) => x.version === r.version)
  return {
    ...rest,
    ...(changeNote === "" ? {} : { changeNote }),
    current: r.version === currentVersion,
    ...(run === undefined ? {} : { evals: verdictOf(run) })
  }
}

/** The version members of AgentStore over the read side `c`. */
export const makeAgentVersions = (c: AgentCatalog) => {
  const { provide, viewOf, findCustom, notBuiltin, get: getView } = c
  const versionOf = (name: string, version: number) =>
    Effect.gen(function* () {
      yield* notBuiltin(name)
      const current = yield* findCustom(name)
      const row = yield* provide(repo.selectVersion(name, version))
      if (row === undefined) return yield* Effect.fail(new AgentVersionNotFound({ name, version }))
      return { current, row }
    }).pipe(
      // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
      storeDefects("AgentStore.version")
    )

  /** The package of the current (or a given) version. */
  const exportPackage = (name: string, version?: number) =>
    Effect.gen(function* () {
      if (version === undefined) return (yield* getView(name)).package
      const builtin = builtinAgents().get(name)
      if (builtin !== undefined) {
        return builtinVersion(builtin) === version ? builtin : yield* Effect.fail(new AgentVersionNotFound({ name, version }))
      }
      // A built-in name returned above: BuiltinReadOnly here would be a defect.
      const { row } = yield* Effect.catchTag(versionOf(name, version), "BuiltinReadOnly", Effect.die)
      return row.package
    })

  return {
    exportPackage,
    exportZip: (name: string, version?: number) => Effect.map(exportPackage(name, version), (pkg) => writeZip(serializeAgentPackage(pkg))),
    versions: (name: string) =>
      Effect.gen(function* () {
        yield* notBuiltin(name)
        const current = yield* findCustom(name)
        const rows = yield* provide(repo.selectVersions(name))
        const runs = yield* provide(selectLatestRuns(name))
        return rows.map((r) => versionInfo(r, current.currentVersion, runs))
      }).pipe(
        // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
        storeDefects("AgentStore.versions")
      ),
    version: (name: string, version: number) =>
      Effect.gen(function* () {
        const { current, row } = yield* versionOf(name, version)
        const view = yield* viewOf(row.package, { builtin: false, version: row.version, enabled: current.enabled, updatedAt: row.savedAt })
        const { package: _p, ...info } = row
        // AgentStore.version's shape has no database failure: a store failure is a defect.
        const runs = yield* storeDefects("AgentStore.version")(provide(selectLatestRuns(name)))
        return { info: versionInfo(info, current.currentVersion, runs), view }
      }),
    /** Makes `version` current again and records who did it and which version was current before. */
    restore: (name: string, version: number, by: string) =>
      Effect.gen(function* () {
        yield* c.sql.withTransaction(
          Effect.gen(function* () {
            yield* provide(repo.lockAgent(name))
            const { current, row } = yield* versionOf(name, version)
            if (current.currentVersion === version) return
            yield* provide(repo.setCurrent(name, row.package.audience, version))
            yield* provide(repo.insertRestore(name, current.currentVersion, version, by))
          })
        )
        return yield* getView(name)
      }).pipe(
        // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
        storeDefects("AgentStore.restore")
      ),
    /** Who restored which version, when, and what was current before; newest first. */
    restores: (name: string) =>
      Effect.gen(function* () {
        yield* notBuiltin(name)
        yield* findCustom(name)
        return yield* provide(repo.selectRestores(name))
      }).pipe(
        // AgentStore's shape has no database failure (its callers span kernel, worker and portal): a store failure is a defect.
        storeDefects("AgentStore.restores")
      )
  }
}
