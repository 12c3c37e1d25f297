/**
 * The seven project-memory tools (design/memory-and-web.md §3): their inputs and what the model is
 * told. The kernel turns each into a tool that calls the services channel; the worker's memory service
 * decodes the same schemas, so both sides agree on every field.
 */
import { Schema } from "effect"
import type { ServiceToolDef } from "./ServiceToolDef.ts"

export const NOTE_KINDS = ["fact", "lesson", "decision", "navigation"] as const
export const NoteKind = Schema.Literal(...NOTE_KINDS).annotations({
  description: "fact, lesson, decision or navigation",
  message: () => ({ message: `must be one of ${NOTE_KINDS.join(", ")}`, override: true })
})
export type NoteKind = typeof NoteKind.Type

export const MAX_NOTE_BODY = 4000
export const MAX_NOTE_TITLE = 200
export const MAX_SCRATCHPAD = 32_000
const MAX_SEARCH_LIMIT = 20

const text = (max: number, what: string) =>
  Schema.String.pipe(
    Schema.minLength(1, { message: () => `${what} must not be empty` }),
    Schema.maxLength(max, { message: () => `${what} must be at most ${max.toLocaleString("en-US")} characters` })
  )

const DAY = Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/, { message: () => "must be a date YYYY-MM-DD" }))

export const MemorySearchInput = Schema.Struct({
  query: text(500, "query").annotations({ description: "Words to search for in the notes' titles and bodies." }),
  kinds: Schema.optionalWith(Schema.Array(NoteKind).annotations({ description: "Only notes of these kinds." }), { exact: true }),
  limit: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.int(),
      Schema.between(1, MAX_SEARCH_LIMIT, { message: () => `must be an integer from 1 to ${MAX_SEARCH_LIMIT}` })
    ).annotations({
      description: `At most this many notes (default 10, at most ${MAX_SEARCH_LIMIT}).`
    }),
    { exact: true }
  )
})
export const MemorySaveInput = Schema.Struct({
  kind: NoteKind,
  title: text(MAX_NOTE_TITLE, "title").annotations({
    description: "A short title; a note of the same kind and title is updated (a new revision)."
  }),
  body: text(MAX_NOTE_BODY, "body").annotations({ description: `The note, at most ${MAX_NOTE_BODY} characters.` }),
  paths: Schema.optionalWith(
    Schema.Array(text(300, "path"))
      .pipe(Schema.maxItems(20, { message: () => "at most 20 paths" }))
      .annotations({ description: "Workspace paths the note is about." }),
    { exact: true }
  )
})
export const MemoryForgetInput = Schema.Struct({
  id: text(64, "id").annotations({ description: "The note's id." }),
  reason: text(500, "reason").annotations({ description: "Why the note is wrong or no longer useful." })
})
export const MemoryRecoverInput = Schema.Struct({
  query: Schema.optionalWith(text(500, "query").annotations({ description: "Words to look for among forgotten notes." }), { exact: true }),
  id: Schema.optionalWith(text(64, "id").annotations({ description: "Bring this forgotten note back (as learned)." }), { exact: true })
})
export const MemoryDailyLogInput = Schema.Struct({
  date: Schema.optionalWith(DAY.annotations({ description: "The day, YYYY-MM-DD (UTC); default today." }), { exact: true })
})
export const ScratchpadReadInput = Schema.Struct({})
export const ScratchpadWriteInput = Schema.Struct({
  content: Schema.String.pipe(
    Schema.maxLength(MAX_SCRATCHPAD, { message: () => `must be at most ${MAX_SCRATCHPAD.toLocaleString("en-US")} characters` })
  ).annotations({ description: "Text to put in the scratchpad." }),
  mode: Schema.Literal("replace", "append").annotations({ description: "replace the scratchpad, or append to it." })
})

export const MEMORY_TOOL_DEFS: ReadonlyArray<ServiceToolDef> = [
  {
    name: "memory_search",
    description:
      "Search this project's memory (notes other jobs saved: facts, lessons, decisions, navigation). Returns id, kind, title, trust and body of the best matches.",
    params: MemorySearchInput,
    readOnly: true
  },
  {
    name: "memory_save",
    description:
      "Save a durable note to project memory at once (trust: learned). A note with the same kind and title is updated, the old text kept as a revision. Never save secrets.",
    params: MemorySaveInput
  },
  { name: "memory_forget", description: "Retire a note that is wrong or obsolete (it can be recovered).", params: MemoryForgetInput },
  {
    name: "memory_recover",
    description: "List forgotten notes (optionally matching a query); with an id, bring that note back as learned.",
    params: MemoryRecoverInput
  },
  {
    name: "memory_daily_log",
    description: "The project's log of one day (UTC): jobs started and finished, notes saved, forgotten and reviewed.",
    params: MemoryDailyLogInput
  },
  {
    name: "scratchpad_read",
    description: "Read this run's scratchpad (notes to self that survive compaction).",
    params: ScratchpadReadInput,
    readOnly: true
  },
  {
    name: "scratchpad_write",
    description: `Write this run's scratchpad (at most ${MAX_SCRATCHPAD.toLocaleString("en-US")} characters): replace it or append to it. It survives compaction; it is gone for the next job.`,
    params: ScratchpadWriteInput
  }
]
