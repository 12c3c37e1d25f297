/**
 * The Agent Builder's catalog: built-in agents (read-only, names reserved) plus custom agents with
 * immutable versions. Every save records a new version and makes it current; restore makes an older
 * one current again; a version number is never reused. SQL failures are defects here.
 * The members live by concern in agentCatalog.ts (read), agentWrites.ts (save, import, enable, delete)
 * and agentVersions.ts (history, restore, export).
 */
import { Context, Effect, Layer } from "effect"
import { makeAgentCatalog } from "./agentCatalog.ts"
import type { AgentView, CatalogEntry, Invalid, Preview, VersionInfo, Write } from "./AgentView.ts"
import { makeAgentVersions } from "./agentVersions.ts"
import { makeAgentWrites } from "./agentWrites.ts"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import type { AgentExists, AgentNotFound, AgentUnavailable, AgentVersionNotFound, BuiltinReadOnly, ImportRejected } from "./errors.ts"
import { traced } from "../telemetry/traced.ts"

export { PackageFilesInput, type AgentView, type Binding, type CatalogEntry, type Preview, type VersionInfo } from "./AgentView.ts"

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
    /**
     * What a job runs: the enabled, valid runtime agent's current version as the kernel's definition
     * (`version` = the store's version number; shared skills embedded as they are now). Builds no view.
     */
    readonly definition: (name: string) => Effect.Effect<AgentDefinition, AgentUnavailable>
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
  const c = yield* makeAgentCatalog
  const writes = makeAgentWrites(c)
  const versions = makeAgentVersions(c)
  const service: AgentStore["Type"] = {
    catalog: c.catalog,
    context: c.context,
    get: c.get,
    definition: c.definition,
    preview: c.preview,
    create: writes.create,
    save: writes.save,
    setEnabled: writes.setEnabled,
    remove: writes.remove,
    copy: writes.copy,
    importFiles: writes.importFiles,
    importZip: writes.importZip,
    exportZip: versions.exportZip,
    versions: versions.versions,
    version: versions.version,
    restore: versions.restore
  }
  return service
})

export const AgentStoreLive = Layer.effect(AgentStore, Effect.map(makeAgentStore, (service) => traced("AgentStore", service)))
