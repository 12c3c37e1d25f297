/**
 * The seven memory tools behind the services channel (design/memory-and-web.md §3): each decodes the
 * same input schema the kernel declared, reads and writes only the project of the caller's token, and
 * answers text for the model. A tool is granted when the job's project has memory enabled.
 */
import { Clock, Effect } from "effect"
import {
  MAX_SCRATCHPAD,
  MemoryDailyLogInput,
  MemoryForgetInput,
  MemoryRecoverInput,
  MemorySaveInput,
  MemorySearchInput,
  ScratchpadReadInput,
  ScratchpadWriteInput
} from "../../tools/services/memoryTools.ts"
import type { StoreError } from "../../db/StoreError.ts"
import type { ServiceAnswer } from "../../tools/services/ServiceChannel.ts"
import type { ServiceHandler } from "../Services.ts"
import type { ServiceGrant } from "../ServiceTokens.ts"
import type { Note } from "./memoryModel.ts"
import { MemoryStore, type Reader } from "./MemoryStore.ts"

/** `memory_save` calls one job may make. */
const MAX_SAVES_PER_JOB = 50

const ok = (text: string): ServiceAnswer => ({ text, isError: false })
const error = (text: string): ServiceAnswer => ({ text, isError: true })

const readerOf = (g: ServiceGrant): Reader => ({ projectId: g.projectId, jobId: g.jobId, reviewer: g.memoryRole === "reviewer" })

const noteText = (n: Note): string =>
  [`[${n.id}] ${n.kind} · ${n.trust} · ${n.title}`, ...(n.paths.length > 0 ? [`paths: ${n.paths.join(", ")}`] : []), n.body].join("\n")

const notesText = (notes: ReadonlyArray<Note>, none: string): string =>
  notes.length === 0 ? none : `${notes.length} note${notes.length === 1 ? "" : "s"}:\n\n${notes.map(noteText).join("\n\n---\n\n")}`

/** The memory handlers over the store (`refusal`: the project must have memory enabled). */
export const makeMemoryHandlers: Effect.Effect<ReadonlyArray<ServiceHandler>, never, MemoryStore> = Effect.gen(function* () {
  const store = yield* MemoryStore
  const refusal: ServiceHandler["refusal"] = ({ projectId }) =>
    projectId === ""
      ? Effect.succeed("the job has no project")
      : Effect.map(store.settings(projectId), (s) =>
          s.enabled ? undefined : `project memory is not enabled for project "${projectId}"`
        ).pipe(Effect.catchAll((e) => Effect.as(Effect.logError("project memory failed", e), e.message)))
  const handler = <I>(
    name: string,
    params: ServiceHandler["params"],
    run: (input: I, grant: ServiceGrant) => Effect.Effect<ServiceAnswer, StoreError>
  ): ServiceHandler => ({
    name,
    params,
    refusal,
    // The store's failure is the tool's error result (the model may try again); its cause goes to the log.
    handle: (input, grant) =>
      Effect.catchAll(run(input as I, grant), (e) => Effect.as(Effect.logError("project memory failed", e), error(e.message)))
  })
  return [
    handler<typeof MemorySearchInput.Type>("memory_search", MemorySearchInput, (input, g) =>
      Effect.map(store.search(readerOf(g), input.query, input.kinds, input.limit ?? 10), (notes) => ok(notesText(notes, "No notes match.")))
    ),
    handler<typeof MemorySaveInput.Type>("memory_save", MemorySaveInput, (input, g) =>
      Effect.gen(function* () {
        if ((yield* store.savesBy(g.jobId)) >= MAX_SAVES_PER_JOB)
          return error(`this job has used its ${MAX_SAVES_PER_JOB} memory_save calls`)
        const { note, created } = yield* store.save(
          g.projectId,
          { _tag: "Agent", jobId: g.jobId, agentId: g.agentId },
          { ...input, paths: input.paths ?? [] }
        )
        return ok(`${created ? "Saved" : "Updated"} note ${note.id} (${note.kind}, trust: learned).`)
      })
    ),
    handler<typeof MemoryForgetInput.Type>("memory_forget", MemoryForgetInput, (input, g) =>
      Effect.flatMap(store.visible(readerOf(g), input.id), (note) =>
        note.trust === "forgotten"
          ? Effect.succeed(ok(`Note ${note.id} is already forgotten.`))
          : Effect.as(
              store.transition(g.projectId, note.id, "forgotten", { _tag: "Agent", jobId: g.jobId, agentId: g.agentId }, input.reason),
              ok(`Forgot note ${note.id}; memory_recover can bring it back.`)
            )
      ).pipe(Effect.catchTag("NoteNotFound", (e) => Effect.succeed(error(e.message))))
    ),
    handler<typeof MemoryRecoverInput.Type>("memory_recover", MemoryRecoverInput, (input, g) =>
      input.id === undefined
        ? Effect.map(store.forgotten(readerOf(g), input.query, 20), (notes) => ok(notesText(notes, "No forgotten notes match.")))
        : Effect.flatMap(store.visible(readerOf(g), input.id), (note) =>
            note.trust !== "forgotten"
              ? Effect.succeed(error(`note ${note.id} is not forgotten (trust: ${note.trust})`))
              : Effect.as(
                  store.transition(g.projectId, note.id, "learned", { _tag: "Agent", jobId: g.jobId, agentId: g.agentId }, "recovered"),
                  ok(`Recovered note ${note.id} (trust: learned).`)
                )
          ).pipe(Effect.catchTag("NoteNotFound", (e) => Effect.succeed(error(e.message))))
    ),
    handler<typeof MemoryDailyLogInput.Type>("memory_daily_log", MemoryDailyLogInput, (input, g) =>
      Effect.gen(function* () {
        const day = input.date ?? new Date(yield* Clock.currentTimeMillis).toISOString().slice(0, 10)
        const entries = yield* store.dailyLog(g.projectId, day)
        return ok(
          entries.length === 0
            ? `Nothing logged on ${day}.`
            : [`Project log of ${day} (UTC):`, ...entries.map((e) => `${e.at.toISOString().slice(11, 19)} ${e.kind}: ${e.summary}`)].join(
                "\n"
              )
        )
      })
    ),
    handler<typeof ScratchpadReadInput.Type>("scratchpad_read", ScratchpadReadInput, (_input, g) =>
      Effect.map(store.scratchpad(g.jobId), (text) => ok(text === "" ? "The scratchpad is empty." : text))
    ),
    handler<typeof ScratchpadWriteInput.Type>("scratchpad_write", ScratchpadWriteInput, (input, g) =>
      Effect.map(store.writeScratchpad(g.projectId, g.jobId, input.content, input.mode, MAX_SCRATCHPAD), (next) =>
        next === undefined
          ? error(
              `the scratchpad would pass ${MAX_SCRATCHPAD.toLocaleString("en-US")} characters; nothing was written (replace it with a shorter text)`
            )
          : ok(`Scratchpad ${input.mode === "append" ? "appended" : "replaced"}: ${next.length} characters.`)
      )
    )
  ]
})
