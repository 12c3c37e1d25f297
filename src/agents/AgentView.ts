/** What the agent store hands out: catalog entries, full views, versions, previews, and the package-files input. */
import { Effect, Schema } from "effect"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import type { Problem } from "../contract/Problem.ts"
import type { AgentPackage } from "./AgentPackage.ts"
import type { EvalVerdict } from "./evalRepo.ts"
import type { AgentExists, AgentInvalid, BuiltinReadOnly } from "./errors.ts"

/** Package files as the API and the editor send them. */
export const PackageFilesInput = Schema.Struct({
  files: Schema.Array(Schema.Struct({ path: Schema.String, content: Schema.String })).pipe(
    Schema.minItems(1, { message: () => "must hold at least the <name>.md file" })
  )
})

/** The one binding type: bindings are read only through the Bindings service. */
export type { Binding } from "../providers/Bindings.ts"
import type { Binding } from "../providers/Bindings.ts"

export interface CatalogEntry {
  readonly name: string
  readonly builtin: boolean
  readonly description: string
  readonly audience: "runtime" | "member"
  /**
   * The agent's version: the store's immutable version number (1, 2, …; never reused); for a built-in,
   * the release's (its shipped `version:`). The package's own `version:` key is the author's label,
   * kept in `package.version` and exported as written, and never used as the version.
   */
  readonly version: number
  readonly enabled: boolean
  /** What keeps the agent from running here; [] = valid. */
  readonly problems: ReadonlyArray<Problem>
  readonly binding: Binding | null
  readonly updatedAt: Date | null
}

/** One page of the catalog (AgentStore.page). */
export interface CatalogPage {
  readonly entries: ReadonlyArray<CatalogEntry>
  /** Every agent of the catalog, filters aside. */
  readonly total: number
  /** Agents matching the filters, on every page. */
  readonly matched: number
  /** Pass as `cursor` for the next page; null on the last one. */
  readonly nextCursor: string | null
  /** The catalog generation the page was computed at (changes with any write that could change it). */
  readonly generation: string
}

export interface AgentView extends CatalogEntry {
  readonly package: AgentPackage
  /** The package as files (`<name>.md`, skills, commands, …). */
  readonly files: ReadonlyArray<{ readonly path: string; readonly content: string }>
  readonly bindings: ReadonlyArray<Binding>
  /**
   * A `gate: evals` version saved after the current one and not (yet) current: its evals are waiting,
   * running, or failed (`failures` say why). Absent when there is none (docs/evals.md).
   */
  readonly gate?: EvalVerdict
}

/** An import's outcome: the agent, what was adapted on the way (notes), and how tool names were mapped. */
export interface ImportedAgent {
  readonly agent: AgentView
  /** False when the upload equals the agent's current version: no version was added (`agent.version` is that one). */
  readonly changed: boolean
  readonly notes: ReadonlyArray<string>
  /** What the import left out: one line per Claude Code tool dropped. */
  readonly warnings: ReadonlyArray<string>
  readonly toolMapping: ReadonlyArray<{ readonly from: string; readonly to: string | null }>
}

export interface VersionInfo {
  readonly version: number
  readonly savedBy: string
  readonly savedAt: Date
  readonly note: string
  /** The author's words about the save, when they wrote some. */
  readonly changeNote?: string
  readonly current: boolean
  /** The version's latest eval run, when it has one (docs/evals.md). */
  readonly evals?: EvalVerdict
}

export interface Preview {
  readonly problems: ReadonlyArray<Problem>
  /** The job definition the draft would give, when it has no problem. */
  readonly definition: AgentDefinition | null
}

export type Invalid = AgentInvalid
export type Write<A> = Effect.Effect<A, Invalid | AgentExists | BuiltinReadOnly>
