/**
 * The agent store's version side: a custom agent's history, one version's view, restoring an older
 * version as current (numbers never reused), and the ZIP export of the current or a given version.
 */
import { Effect } from "effect"
import { serializeAgentPackage } from "./AgentPackage.ts"
import { builtinVersion, type AgentCatalog } from "./agentCatalog.ts"
import * as repo from "./agentRepo.ts"
import { builtinAgents } from "./builtins.ts"
import { AgentVersionNotFound } from "./errors.ts"
import { writeZip } from "./zip.ts"

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
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  return {
    exportZip: (name: string, version?: number) =>
      Effect.gen(function* () {
        if (version === undefined) return writeZip((yield* getView(name)).files)
        const builtin = builtinAgents().get(name)
        if (builtin !== undefined) {
          return builtinVersion(builtin) === version
            ? writeZip(serializeAgentPackage(builtin))
            : yield* Effect.fail(new AgentVersionNotFound({ name, version }))
        }
        const { row } = yield* Effect.catchTag(versionOf(name, version), "BuiltinReadOnly", Effect.die)
        return writeZip(serializeAgentPackage(row.package))
      }),
    versions: (name: string) =>
      Effect.gen(function* () {
        yield* notBuiltin(name)
        const current = yield* findCustom(name)
        const rows = yield* provide(repo.selectVersions(name))
        return rows.map((r) => ({ ...r, current: r.version === current.currentVersion }))
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    version: (name: string, version: number) =>
      Effect.gen(function* () {
        const { current, row } = yield* versionOf(name, version)
        const view = yield* viewOf(row.package, { builtin: false, version: row.version, enabled: current.enabled, updatedAt: row.savedAt })
        const { package: _p, ...info } = row
        return { info: { ...info, current: row.version === current.currentVersion }, view }
      }),
    restore: (name: string, version: number) =>
      Effect.gen(function* () {
        const { row } = yield* versionOf(name, version)
        yield* provide(repo.setCurrent(name, row.package.audience, version))
        return yield* getView(name)
      }).pipe(Effect.catchTag("SqlError", Effect.die))
  }
}
