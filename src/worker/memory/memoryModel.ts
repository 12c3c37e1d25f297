/** Project memory's records and errors (design/memory-and-web.md §3), shared by the store, the service and the API. */
import { Schema } from "effect"
import type { NoteKind } from "../../tools/services/memoryTools.ts"

export const TRUST_LEVELS = ["learned", "reviewed", "rejected", "forgotten"] as const
export type Trust = (typeof TRUST_LEVELS)[number]

export interface Retention {
  readonly learnedDays: number
  readonly forgottenDays: number
  readonly scratchpadDays: number
  readonly logDays: number
}
export const DEFAULT_RETENTION: Retention = { learnedDays: 90, forgottenDays: 30, scratchpadDays: 7, logDays: 180 }

export interface MemorySettings {
  readonly projectId: string
  readonly enabled: boolean
  readonly retention: Retention
  readonly updatedBy: string | null
  readonly updatedAt: Date | null
}

export interface Note {
  readonly id: string
  readonly kind: NoteKind
  readonly title: string
  readonly body: string
  readonly paths: ReadonlyArray<string>
  readonly trust: Trust
  readonly createdBy: { readonly job: string | null; readonly agent: string }
  readonly updatedBy: { readonly job: string | null; readonly agent: string }
  readonly createdAt: Date
  readonly updatedAt: Date
  readonly trustAt: Date
}

export interface Revision {
  readonly revision: number
  readonly title: string
  readonly body: string
  readonly paths: ReadonlyArray<string>
  readonly jobId: string | null
  readonly agentId: string | null
  readonly editedBy: string | null
  readonly at: Date
}

export interface Transition {
  readonly from: Trust | null
  readonly to: Trust
  readonly byKind: "agent" | "person" | "retention"
  readonly byName: string
  readonly jobId: string | null
  readonly reason: string | null
  readonly at: Date
}

export interface LogEntry {
  readonly at: Date
  readonly kind: string
  readonly jobId: string | null
  readonly agentId: string | null
  readonly noteId: string | null
  readonly summary: string
}

/** Who changes a note: an agent's job (through the services channel), or a person (API, portal). */
export type Actor =
  | { readonly _tag: "Agent"; readonly jobId: string; readonly agentId: string }
  | { readonly _tag: "Person"; readonly username: string }

export class NoteNotFound extends Schema.TaggedError<NoteNotFound>()("NoteNotFound", { id: Schema.String }) {
  override get message(): string {
    return `no note "${this.id}" in this project's memory`
  }
}

/** A review that cannot apply (a forgotten note, an edit that breaks the limits). */
export class ReviewRefused extends Schema.TaggedError<ReviewRefused>()("ReviewRefused", { message: Schema.String }) {}
