/**
 * The Agent Builder's catalog: built-in agents (read-only, names reserved) plus custom agents with
 * immutable versions. Every save records a new version and makes it current; restore makes an older
 * one current again; a version number is never reused. SQL failures are defects here.
 * The members live by concern in agentCatalog.ts (read), agentWrites.ts (save, import, enable, delete)
 * and agentVersions.ts (history, restore, export).
 */
import { Context, Effect, Layer } from "effect"
import { makeAgentCatalog } from "./agentCatalog.ts"
import type { AgentView, CatalogEntry, CatalogPage, ImportedAgent, Invalid, Preview, VersionInfo, Write } from "./AgentView.ts"
import type { AgentPackage } from "./AgentPackage.ts"
import type { CatalogQuery } from "./catalogQuery.ts"
import { makeAgentVersions } from "./agentVersions.ts"
import { makeAgentWrites } from "./agentWrites.ts"
import type { RestoreRow } from "./agentRepo.ts"
import type { ImportOptions } from "./interop.ts"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import type { AgentExists, AgentNotFound, AgentUnavailable, AgentVersionNotFound, BuiltinReadOnly, ImportRejected } from "./errors.ts"
import { traced } from "../telemetry/traced.ts"

export type { RestoreRow } from "./agentRepo.ts"
export { type AgentView, type CatalogEntry, type CatalogPage, type ImportedAgent, type Preview, type VersionInfo } from "./AgentView.ts"

export class AgentStore extends Context.Tag("agents/AgentStore")<
  AgentStore,
  {
    /** Every agent: built-ins first, then custom agents, each by name. */
    readonly catalog: Effect.Effect<ReadonlyArray<CatalogEntry>>
    /** One filtered page of the catalog, from precomputed entries, cached per catalog generation. */
    readonly page: (query: CatalogQuery) => Effect.Effect<CatalogPage>
    /** What the editor offers: kernel tools, shared skills, reserved (built-in) names. */
    readonly context: Effect.Effect<{
      readonly kernelTools: ReadonlyArray<string>
      readonly sharedSkills: ReadonlyArray<{ readonly name: string; readonly description: string; readonly builtin: boolean }>
      readonly reservedNames: ReadonlyArray<string>
    }>
    readonly get: (name: string) => Effect.Effect<AgentView, AgentNotFound>
    /**
     * What a job runs: the enabled, valid runtime agent's current version as the kernel's definition
     * (`version` = the store's version number; shared skills embedded as they are now). Builds no view.
     */
    readonly definition: (name: string) => Effect.Effect<AgentDefinition, AgentUnavailable>
    /** `definition` of one stored version, current or not: what a job pinned to a version runs (evals). */
    readonly definitionAt: (name: string, version: number) => Effect.Effect<AgentDefinition, AgentUnavailable>
    /** Creates a custom agent at version 1 (or the next number its name has not used). */
    readonly create: (files: unknown, by: string) => Write<AgentView>
    /**
     * Saves a new version of a custom agent with the author's change note; the package's name must stay
     * `name`. A package equal to the current one adds no version (the agent comes back unchanged).
     */
    readonly save: (
      name: string,
      files: unknown,
      by: string,
      changeNote?: string
    ) => Effect.Effect<AgentView, Invalid | AgentNotFound | BuiltinReadOnly>
    readonly setEnabled: (name: string, enabled: boolean) => Effect.Effect<AgentView, AgentNotFound | BuiltinReadOnly>
    /** Deletes a custom agent; its versions stay in the history and their numbers are never reused. */
    readonly remove: (name: string) => Effect.Effect<void, AgentNotFound | BuiltinReadOnly>
    readonly copy: (
      name: string,
      newName: string,
      by: string
    ) => Effect.Effect<AgentView, Invalid | AgentNotFound | AgentExists | BuiltinReadOnly>
    /** Dry run: every problem of a draft, and its job definition when it has none. Saves nothing. */
    readonly preview: (files: unknown) => Effect.Effect<Preview>
    /**
     * Imports package files (or a ZIP), Claude Code subagent files included: creates the agent, or saves
     * a new version of an existing custom one; with the notes, warnings and tool mapping of the
     * adaptation. Claude Code tools without an equivalent are dropped, or refused when `strict`.
     */
    readonly importFiles: (
      files: ReadonlyArray<{ readonly path: string; readonly content: Uint8Array | string }>,
      by: string,
      options?: ImportOptions
    ) => Write<ImportedAgent>
    readonly importZip: (
      zip: Uint8Array,
      by: string,
      options?: ImportOptions
    ) => Effect.Effect<ImportedAgent, Invalid | AgentExists | BuiltinReadOnly | ImportRejected>
    /** The package of the current (or a given) version (the Claude Code export writes it as one file). */
    readonly exportPackage: (name: string, version?: number) => Effect.Effect<AgentPackage, AgentNotFound | AgentVersionNotFound>
    /** The package of the current (or a given) version as a ZIP. */
    readonly exportZip: (name: string, version?: number) => Effect.Effect<Uint8Array, AgentNotFound | AgentVersionNotFound>
    readonly versions: (name: string) => Effect.Effect<ReadonlyArray<VersionInfo>, AgentNotFound | BuiltinReadOnly>
    readonly version: (
      name: string,
      version: number
    ) => Effect.Effect<{ readonly info: VersionInfo; readonly view: AgentView }, AgentNotFound | AgentVersionNotFound | BuiltinReadOnly>
    /** Makes an older version current again (no new number) and records the restore. */
    readonly restore: (
      name: string,
      version: number,
      by: string
    ) => Effect.Effect<AgentView, AgentNotFound | AgentVersionNotFound | BuiltinReadOnly>
    readonly restores: (name: string) => Effect.Effect<ReadonlyArray<RestoreRow>, AgentNotFound | BuiltinReadOnly>
  }
>() {}

const makeAgentStore = Effect.gen(function* () {
  const c = yield* makeAgentCatalog
  const writes = makeAgentWrites(c)
  const versions = makeAgentVersions(c)
  const service: AgentStore["Type"] = {
    catalog: c.catalog,
    page: c.page,
    context: c.context,
    get: c.get,
    definition: c.definition,
    definitionAt: c.definitionAt,
    preview: c.preview,
    create: writes.create,
    save: writes.save,
    setEnabled: writes.setEnabled,
    remove: writes.remove,
    copy: writes.copy,
    importFiles: writes.importFiles,
    importZip: writes.importZip,
    exportZip: versions.exportZip,
    exportPackage: versions.exportPackage,
    versions: versions.versions,
    version: versions.version,
    restore: versions.restore,
    restores: versions.restores
  }
  return service
})

export const AgentStoreLive = Layer.effect(
  AgentStore,
  Effect.map(makeAgentStore, (service) => traced("AgentStore", service))
)
