/**
 * Project memory's API (design/memory-and-web.md §3): settings, notes with their revisions and
 * transitions, a person's review, the daily log, reset. Reading needs a session; changes agents.manage.
 */
import { Clock, Effect, Schema } from "effect"
import { Elysia } from "elysia"
import { MAX_NOTE_BODY, MAX_NOTE_TITLE, NOTE_KINDS, type NoteKind } from "../../tools/services/memoryTools.ts"
import { type Note, TRUST_LEVELS, type Trust } from "../../worker/memory/memoryModel.ts"
import { MemoryStore } from "../../worker/memory/MemoryStore.ts"
import { Projects } from "../../worker/Projects.ts"
import type { Guard } from "../auth.ts"
import { badRequest, json, NotFound, type ApiError } from "../respond.ts"
import { decodeBody, param, type Handler } from "../route.ts"

type Route = (
  guard: Guard,
  handler: Handler
) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>

const Days = Schema.Number.pipe(Schema.int(), Schema.between(1, 3650, { message: () => "must be a whole number of days from 1 to 3650" }))

export const MemorySettingsInput = Schema.Struct({
  enabled: Schema.Boolean,
  retention: Schema.optionalWith(
    Schema.Struct({
      learnedDays: Schema.optionalWith(Days, { exact: true }),
      forgottenDays: Schema.optionalWith(Days, { exact: true }),
      scratchpadDays: Schema.optionalWith(Days, { exact: true }),
      logDays: Schema.optionalWith(Days, { exact: true })
    }),
    { exact: true }
  )
})

const noNul = (s: string) => (s.includes("\u0000") ? "must not contain NUL characters" : undefined)

export const ReviewInput = Schema.Struct({
  decision: Schema.Literal("reviewed", "rejected").annotations({
    message: () => ({ message: "must be reviewed or rejected", override: true })
  }),
  note: Schema.optionalWith(
    Schema.String.pipe(Schema.maxLength(1000, { message: () => "must be at most 1,000 characters" }), Schema.filter(noNul)),
    { exact: true }
  ),
  /** Edit before approving: the text a person settles on becomes a new revision. */
  title: Schema.optionalWith(
    Schema.String.pipe(
      Schema.minLength(1, { message: () => "must not be empty" }),
      Schema.maxLength(MAX_NOTE_TITLE, { message: () => `must be at most ${MAX_NOTE_TITLE} characters` }),
      Schema.filter(noNul)
    ),
    { exact: true }
  ),
  body: Schema.optionalWith(
    Schema.String.pipe(
      Schema.minLength(1, { message: () => "must not be empty" }),
      Schema.maxLength(MAX_NOTE_BODY, { message: () => "must be at most 4,000 characters" }),
      Schema.filter(noNul)
    ),
    { exact: true }
  )
})

const ResetInput = Schema.Struct({ confirm: Schema.String })

const notFound = (message: string): ApiError => new NotFound({ message })

/** The project, or 404 naming it. */
export const projectOf = (id: string) =>
  Effect.flatMap(Projects, (p) => p.get(id)).pipe(Effect.catchTag("ProjectNotFound", (e) => Effect.fail(notFound(e.message))))

/** The query filters, every bad value named at once. */
export const noteFilter = (url: URL): Effect.Effect<{ trust?: Trust; kind?: NoteKind; q?: string }, ApiError> => {
  const trust = url.searchParams.get("trust") ?? ""
  const kind = url.searchParams.get("kind") ?? ""
  const q = url.searchParams.get("q") ?? ""
  const problems = [
    ...(trust !== "" && !(TRUST_LEVELS as ReadonlyArray<string>).includes(trust)
      ? [{ path: "trust", message: `must be one of ${TRUST_LEVELS.join(", ")}` }]
      : []),
    ...(kind !== "" && !(NOTE_KINDS as ReadonlyArray<string>).includes(kind)
      ? [{ path: "kind", message: `must be one of ${NOTE_KINDS.join(", ")}` }]
      : []),
    ...(q.length > 500 ? [{ path: "q", message: "must be at most 500 characters" }] : [])
  ]
  if (problems.length > 0) return Effect.fail(badRequest(problems))
  return Effect.succeed({
    ...(trust === "" ? {} : { trust: trust as Trust }),
    ...(kind === "" ? {} : { kind: kind as NoteKind }),
    ...(q === "" ? {} : { q })
  })
}

/** `date=YYYY-MM-DD` (UTC), default today. */
export const logDay = (url: URL): Effect.Effect<string, ApiError> => {
  const date = url.searchParams.get("date")
  if (date === null || date === "") return Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString().slice(0, 10))
  const valid =
    /^\d{4}-\d{2}-\d{2}$/.test(date) &&
    !Number.isNaN(new Date(`${date}T00:00:00Z`).getTime()) &&
    new Date(`${date}T00:00:00Z`).toISOString().startsWith(date)
  return valid ? Effect.succeed(date) : Effect.fail(badRequest([{ path: "date", message: "must be a date YYYY-MM-DD" }]))
}

const noteJson = (n: Note) => n

export const memoryRoutes = (route: Route) =>
  new Elysia()
    .get(
      "/api/projects/:id/memory",
      route("read", (i) =>
        Effect.gen(function* () {
          const project = yield* projectOf(param(i, "id"))
          return json({ settings: yield* (yield* MemoryStore).settings(project.id) })
        })
      )
    )
    .put(
      "/api/projects/:id/memory",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const project = yield* projectOf(param(i, "id"))
          const input = yield* decodeBody(i.request, MemorySettingsInput, 64 * 1024)
          const store = yield* MemoryStore
          const current = yield* store.settings(project.id)
          const settings = yield* store.putSettings(
            project.id,
            input.enabled,
            { ...current.retention, ...input.retention },
            i.principal.username
          )
          return json({ settings })
        })
      )
    )
    .get(
      "/api/projects/:id/memory/notes",
      route("read", (i) =>
        Effect.gen(function* () {
          const project = yield* projectOf(param(i, "id"))
          const filter = yield* noteFilter(i.url)
          return json({ notes: (yield* (yield* MemoryStore).list(project.id, filter)).map(noteJson) })
        })
      )
    )
    .get(
      "/api/projects/:id/memory/notes/:noteId",
      route("read", (i) =>
        Effect.gen(function* () {
          const project = yield* projectOf(param(i, "id"))
          const found = yield* (yield* MemoryStore)
            .get(project.id, param(i, "noteId"))
            .pipe(Effect.catchTag("NoteNotFound", (e) => Effect.fail(notFound(e.message))))
          return json(found)
        })
      )
    )
    .post(
      "/api/projects/:id/memory/notes/:noteId/review",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const project = yield* projectOf(param(i, "id"))
          const input = yield* decodeBody(i.request, ReviewInput, 64 * 1024)
          const note = yield* (yield* MemoryStore)
            .review(project.id, param(i, "noteId"), input.decision, i.principal.username, {
              note: input.note,
              title: input.title,
              body: input.body
            })
            .pipe(
              Effect.catchTags({
                NoteNotFound: (e) => Effect.fail(notFound(e.message)),
                ReviewRefused: (e) => Effect.fail(badRequest([{ path: "decision", message: e.message }]))
              })
            )
          return json({ note })
        })
      )
    )
    .get(
      "/api/projects/:id/memory/log",
      route("read", (i) =>
        Effect.gen(function* () {
          const project = yield* projectOf(param(i, "id"))
          const date = yield* logDay(i.url)
          return json({ date, entries: yield* (yield* MemoryStore).dailyLog(project.id, date) })
        })
      )
    )
    .post(
      "/api/projects/:id/memory/reset",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const project = yield* projectOf(param(i, "id"))
          const input = yield* decodeBody(i.request, ResetInput, 64 * 1024)
          if (input.confirm !== project.id)
            return yield* Effect.fail(badRequest([{ path: "confirm", message: `must be the project id "${project.id}"` }]))
          const done = yield* (yield* MemoryStore).reset(project.id, i.principal.username)
          return json({ reset: true, notesDeleted: done.notes })
        })
      )
    )
