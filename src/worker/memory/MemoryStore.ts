/**
 * Project memory in PostgreSQL (migration 045): notes with revisions and trust transitions, full-text
 * search ('simple' tsvector, the same on PostgreSQL and PGlite), daily logs, run scratchpads, per-project
 * settings, the retention sweep and reset. Every timestamp comes from the Effect Clock (tests control it).
 * Reads by agents are scoped by the caller's grant: a project's notes never answer another project.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { decodeRows, Jsonb, Num, Timestamp } from "../../db/rowSchema.ts"
import { type StoreError, storeErrors, storeMethod } from "../../db/StoreError.ts"
import { traced } from "../../telemetry/traced.ts"
import { NoteKind } from "../../tools/services/memoryTools.ts"
import {
  type Actor,
  DEFAULT_RETENTION,
  type LogEntry,
  type MemorySettings,
  type Note,
  NoteNotFound,
  type Retention,
  type Revision,
  ReviewRefused,
  type Transition,
  TRUST_LEVELS,
  type Trust
} from "./memoryModel.ts"

/** Which notes a job's reads see: a reviewer only reviewed notes and those its own run wrote. */
export interface Reader {
  readonly projectId: string
  readonly jobId: string
  readonly reviewer: boolean
}

export interface SweepCounts {
  readonly expired: number
  readonly purged: number
  readonly scratchpads: number
  readonly logs: number
}

export class MemoryStore extends Context.Tag("worker/MemoryStore")<
  MemoryStore,
  {
    /** The project's settings (defaults when never set: memory off). */
    readonly settings: (projectId: string) => Effect.Effect<MemorySettings, StoreError>
    readonly putSettings: (
      projectId: string,
      enabled: boolean,
      retention: Retention,
      by: string
    ) => Effect.Effect<MemorySettings, StoreError>
    /** Live notes (learned, reviewed) matching any word of `query`, best first, as the reader may see them. */
    readonly search: (
      reader: Reader,
      query: string,
      kinds: ReadonlyArray<NoteKind> | undefined,
      limit: number
    ) => Effect.Effect<ReadonlyArray<Note>, StoreError>
    /**
     * Saves at once as `learned`; the same kind and title updates the note (a new revision, the old one
     * kept). `created` tells which.
     */
    readonly save: (
      projectId: string,
      actor: Actor & { readonly _tag: "Agent" },
      input: { readonly kind: NoteKind; readonly title: string; readonly body: string; readonly paths: ReadonlyArray<string> }
    ) => Effect.Effect<{ readonly note: Note; readonly created: boolean }, StoreError>
    /** How many saves this job made (the per-job limit). */
    readonly savesBy: (jobId: string) => Effect.Effect<number, StoreError>
    /** One note the reader may see, any trust. */
    readonly visible: (reader: Reader, noteId: string) => Effect.Effect<Note, NoteNotFound | StoreError>
    /** Moves a note to `trust` (recorded: who, when, from, to) and logs it. */
    readonly transition: (
      projectId: string,
      noteId: string,
      to: Trust,
      actor: Actor,
      reason: string | null
    ) => Effect.Effect<Note, NoteNotFound | StoreError>
    /** Forgotten notes the reader may see, matching `query` when given, newest first. */
    readonly forgotten: (reader: Reader, query: string | undefined, limit: number) => Effect.Effect<ReadonlyArray<Note>, StoreError>
    /** A person's review: `reviewed` or `rejected`, optionally after editing the text (a new revision). */
    readonly review: (
      projectId: string,
      noteId: string,
      decision: "reviewed" | "rejected",
      by: string,
      options: { readonly note?: string | undefined; readonly title?: string | undefined; readonly body?: string | undefined }
    ) => Effect.Effect<Note, NoteNotFound | ReviewRefused | StoreError>
    readonly list: (
      projectId: string,
      filter: { readonly trust?: Trust | undefined; readonly kind?: NoteKind | undefined; readonly q?: string | undefined }
    ) => Effect.Effect<ReadonlyArray<Note>, StoreError>
    readonly get: (
      projectId: string,
      noteId: string
    ) => Effect.Effect<
      { readonly note: Note; readonly revisions: ReadonlyArray<Revision>; readonly transitions: ReadonlyArray<Transition> },
      NoteNotFound | StoreError
    >
    /** Appends a line to the project's daily log when its memory is enabled. */
    readonly log: (projectId: string, entry: Omit<LogEntry, "at">) => Effect.Effect<void, StoreError>
    /** The log of one UTC day (YYYY-MM-DD), oldest first. */
    readonly dailyLog: (projectId: string, day: string) => Effect.Effect<ReadonlyArray<LogEntry>, StoreError>
    readonly scratchpad: (jobId: string) => Effect.Effect<string, StoreError>
    readonly writeScratchpad: (
      projectId: string,
      jobId: string,
      content: string,
      mode: "replace" | "append",
      max: number
    ) => Effect.Effect<string | undefined, StoreError>
    /** Deletes every note, revision, log line and scratchpad of the project, then logs the reset. */
    readonly reset: (projectId: string, by: string) => Effect.Effect<{ readonly notes: number }, StoreError>
    /** Applies every project's retention at the Clock's now. */
    readonly sweep: Effect.Effect<SweepCounts, StoreError>
  }
>() {}

const TrustLevel = Schema.Literal(...TRUST_LEVELS)
const Paths = Jsonb(Schema.Array(Schema.String))
const NullableString = Schema.NullOr(Schema.String)

const NoteRow = Schema.Struct({
  id: Schema.String,
  kind: NoteKind,
  title: Schema.String,
  body: Schema.String,
  paths: Paths,
  trust: TrustLevel,
  createdJob: NullableString,
  createdAgent: Schema.String,
  updatedJob: NullableString,
  updatedAgent: Schema.String,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  trustAt: Timestamp
})
type NoteRow = typeof NoteRow.Type
const noteRows = decodeRows(NoteRow)

const SettingsRow = Schema.Struct({
  enabled: Schema.Boolean,
  learnedDays: Schema.Number,
  forgottenDays: Schema.Number,
  scratchpadDays: Schema.Number,
  logDays: Schema.Number,
  updatedBy: NullableString,
  updatedAt: Schema.NullOr(Timestamp)
})
const RevisionRow = Schema.Struct({
  revision: Schema.Number,
  title: Schema.String,
  body: Schema.String,
  paths: Paths,
  jobId: NullableString,
  agentId: NullableString,
  editedBy: NullableString,
  at: Timestamp
})
const TransitionRow = Schema.Struct({
  fromTrust: Schema.NullOr(TrustLevel),
  toTrust: TrustLevel,
  byKind: Schema.Literal("agent", "person", "retention"),
  byName: Schema.String,
  jobId: NullableString,
  reason: NullableString,
  at: Timestamp
})
const LogRow = Schema.Struct({
  at: Timestamp,
  kind: Schema.String,
  jobId: NullableString,
  agentId: NullableString,
  noteId: NullableString,
  summary: Schema.String
})
const ExpiredRow = Schema.Struct({ id: Schema.String, projectId: Schema.String, kind: Schema.String, title: Schema.String })
const ContentRow = Schema.Struct({ content: Schema.String })
const CountRow = Schema.Struct({ n: Num })
const settingsRows = decodeRows(SettingsRow)
const revisionRows = decodeRows(RevisionRow)
const transitionRows = decodeRows(TransitionRow)
const logRows = decodeRows(LogRow)
const expiredRows = decodeRows(ExpiredRow)
const contentRows = decodeRows(ContentRow)
const countRows = decodeRows(CountRow)

const toNote = (r: NoteRow): Note => ({
  id: r.id,
  kind: r.kind,
  title: r.title,
  body: r.body,
  paths: r.paths,
  trust: r.trust,
  createdBy: { job: r.createdJob, agent: r.createdAgent },
  updatedBy: { job: r.updatedJob, agent: r.updatedAgent },
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  trustAt: r.trustAt
})

/** The row an UPDATE … RETURNING or a locking SELECT gave for a note locked in the same transaction. */
const lockedRow = (rows: ReadonlyArray<NoteRow>) =>
  // Absent only if the lock did not hold: a bug, not a failure a caller can act on.
  rows[0] === undefined ? Effect.dieMessage("a note locked in this transaction is gone") : Effect.succeed(toNote(rows[0]))

const COLUMNS =
  "id, kind, title, body, paths, trust, created_job, created_agent, updated_job, updated_agent, created_at, updated_at, trust_at"

/** Words of a query as an OR tsquery (only letters and digits: nothing the tsquery syntax could read). */
export const orQuery = (query: string): string | undefined => {
  const words = [...new Set((query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 32))]
  return words.length === 0 ? undefined : words.join(" | ")
}

const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
const DAY_MS = 86_400_000

const actorName = (a: Actor) => (a._tag === "Agent" ? a.agentId : a.username)
const actorJob = (a: Actor) => (a._tag === "Agent" ? a.jobId : null)

export const makeMemoryStore: Effect.Effect<MemoryStore["Type"], never, SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient

  /** The reader's visibility as SQL: a reviewer sees reviewed notes and those its own run wrote. */
  const visibleTo = (r: Reader) =>
    r.reviewer ? sql`(trust = 'reviewed' OR updated_job = ${r.jobId} OR created_job = ${r.jobId})` : sql`TRUE`

  const settings = (projectId: string) =>
    Effect.map(
      settingsRows(sql`
        SELECT enabled, learned_days, forgotten_days, scratchpad_days, log_days, updated_by, updated_at FROM memory.settings WHERE project_id = ${projectId}`),
      (rows): MemorySettings => {
        const r = rows[0]
        return r === undefined
          ? { projectId, enabled: false, retention: DEFAULT_RETENTION, updatedBy: null, updatedAt: null }
          : {
              projectId,
              enabled: r.enabled,
              retention: {
                learnedDays: r.learnedDays,
                forgottenDays: r.forgottenDays,
                scratchpadDays: r.scratchpadDays,
                logDays: r.logDays
              },
              updatedBy: r.updatedBy,
              updatedAt: r.updatedAt
            }
      }
    )

  const appendLog = (projectId: string, at: Date, e: Omit<LogEntry, "at">) =>
    sql`INSERT INTO memory.log (project_id, at, kind, job_id, agent_id, note_id, summary)
      VALUES (${projectId}, ${at}, ${e.kind}, ${e.jobId}, ${e.agentId}, ${e.noteId}, ${e.summary.slice(0, 500)})`

  const noteIn = (projectId: string, noteId: string, lock = false) =>
    Effect.flatMap(
      // A malformed id is simply not found (the column is a uuid).
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(noteId)
        ? noteRows(
            sql`SELECT ${sql.literal(COLUMNS)} FROM memory.note WHERE project_id = ${projectId} AND id = ${noteId} ${sql.literal(lock ? "FOR UPDATE" : "")}`
          )
        : Effect.succeed([]),
      (rows) => (rows[0] === undefined ? Effect.fail(new NoteNotFound({ id: noteId })) : Effect.succeed(toNote(rows[0])))
    )

  const recordTransition = (note: Note, to: Trust, actor: Actor | "retention", reason: string | null, at: Date) =>
    sql`INSERT INTO memory.transition (note_id, from_trust, to_trust, by_kind, by_name, job_id, reason, at)
      VALUES (${note.id}, ${note.trust}, ${to}, ${actor === "retention" ? "retention" : actor._tag === "Agent" ? "agent" : "person"},
              ${actor === "retention" ? "retention" : actorName(actor)}, ${actor === "retention" ? null : actorJob(actor)}, ${reason}, ${at})`

  const transition = (projectId: string, noteId: string, to: Trust, actor: Actor, reason: string | null) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const at = yield* now
        const note = yield* noteIn(projectId, noteId, true)
        if (note.trust === to) return note
        yield* recordTransition(note, to, actor, reason, at)
        const rows = yield* noteRows(
          sql`UPDATE memory.note SET trust = ${to}, trust_at = ${at} WHERE id = ${noteId} RETURNING ${sql.literal(COLUMNS)}`
        )
        const verb = to === "forgotten" ? "forgotten" : to === "learned" ? "recovered" : to
        yield* appendLog(projectId, at, {
          kind: `note.${verb}`,
          jobId: actorJob(actor),
          agentId: actor._tag === "Agent" ? actor.agentId : null,
          noteId,
          summary: `${note.kind} "${note.title}" ${verb} by ${actorName(actor)}${reason === null ? "" : `: ${reason}`}`
        })
        return yield* lockedRow(rows)
      })
    )

  // Every method's SqlError and ParseError become the StoreError naming it.
  const service: MemoryStore["Type"] = {
    settings: storeMethod("MemoryStore.settings", settings),
    putSettings: storeMethod("MemoryStore.putSettings", (projectId, enabled, r, by) =>
      Effect.flatMap(now, (at) =>
        Effect.zipRight(
          sql`INSERT INTO memory.settings (project_id, enabled, learned_days, forgotten_days, scratchpad_days, log_days, updated_by, updated_at)
            VALUES (${projectId}, ${enabled}, ${r.learnedDays}, ${r.forgottenDays}, ${r.scratchpadDays}, ${r.logDays}, ${by}, ${at})
            ON CONFLICT (project_id) DO UPDATE SET enabled = EXCLUDED.enabled, learned_days = EXCLUDED.learned_days,
              forgotten_days = EXCLUDED.forgotten_days, scratchpad_days = EXCLUDED.scratchpad_days, log_days = EXCLUDED.log_days,
              updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at`,
          settings(projectId)
        )
      )
    ),
    search: storeMethod("MemoryStore.search", (reader, query, kinds, limit) => {
      const tsq = orQuery(query)
      if (tsq === undefined) return Effect.succeed([])
      const kindFilter = kinds === undefined || kinds.length === 0 ? sql`TRUE` : sql.in("kind", [...kinds])
      return Effect.map(
        noteRows(sql`SELECT ${sql.literal(COLUMNS)} FROM memory.note
          WHERE project_id = ${reader.projectId} AND trust IN ('learned', 'reviewed') AND ${visibleTo(reader)} AND ${kindFilter}
            AND search @@ to_tsquery('simple', ${tsq})
          ORDER BY ts_rank(search, to_tsquery('simple', ${tsq})) DESC, updated_at DESC LIMIT ${limit}`),
        (rows) => rows.map(toNote)
      )
    }),
    save: storeMethod("MemoryStore.save", (projectId, actor, input) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const at = yield* now
          const paths = JSON.stringify(input.paths)
          // Insert or lock the one note of this kind and title (two serve processes may race here).
          const inserted =
            yield* noteRows(sql`INSERT INTO memory.note (project_id, kind, title, body, paths, trust, created_job, created_agent, updated_job, updated_agent, created_at, updated_at, trust_at)
              VALUES (${projectId}, ${input.kind}, ${input.title}, ${input.body}, ${paths}::jsonb, 'learned', ${actor.jobId}, ${actor.agentId}, ${actor.jobId}, ${actor.agentId}, ${at}, ${at}, ${at})
              ON CONFLICT (project_id, kind, title) DO NOTHING RETURNING ${sql.literal(COLUMNS)}`)
          const created = inserted[0] !== undefined
          let note: Note
          if (inserted[0] !== undefined) {
            note = toNote(inserted[0])
            yield* sql`INSERT INTO memory.transition (note_id, from_trust, to_trust, by_kind, by_name, job_id, at)
                VALUES (${note.id}, NULL, 'learned', 'agent', ${actor.agentId}, ${actor.jobId}, ${at})`
          } else {
            const rows = yield* noteRows(
              sql`SELECT ${sql.literal(COLUMNS)} FROM memory.note WHERE project_id = ${projectId} AND kind = ${input.kind} AND title = ${input.title} FOR UPDATE`
            )
            const old = yield* lockedRow(rows)
            if (old.trust !== "learned") yield* recordTransition(old, "learned", actor, "saved again by an agent", at)
            const updated = yield* noteRows(sql`UPDATE memory.note SET body = ${input.body}, paths = ${paths}::jsonb, trust = 'learned',
                  trust_at = CASE WHEN trust = 'learned' THEN trust_at ELSE ${at} END,
                  updated_job = ${actor.jobId}, updated_agent = ${actor.agentId}, updated_at = ${at}
                WHERE id = ${old.id} RETURNING ${sql.literal(COLUMNS)}`)
            note = yield* lockedRow(updated)
          }
          yield* sql`INSERT INTO memory.revision (note_id, revision, title, body, paths, job_id, agent_id, at)
              SELECT ${note.id}, COALESCE(MAX(revision), 0) + 1, ${input.title}, ${input.body}, ${paths}::jsonb, ${actor.jobId}, ${actor.agentId}, ${at}
              FROM memory.revision WHERE note_id = ${note.id}`
          yield* appendLog(projectId, at, {
            kind: "note.saved",
            jobId: actor.jobId,
            agentId: actor.agentId,
            noteId: note.id,
            summary: `${input.kind} "${input.title}" ${created ? "saved" : "updated"} by ${actor.agentId}`
          })
          return { note, created }
        })
      )
    ),
    savesBy: storeMethod("MemoryStore.savesBy", (jobId) =>
      Effect.map(countRows(sql`SELECT count(*)::int AS n FROM memory.revision WHERE job_id = ${jobId}`), (rows) => rows[0]?.n ?? 0)
    ),
    visible: storeMethod("MemoryStore.visible", (reader, noteId) =>
      Effect.flatMap(noteIn(reader.projectId, noteId), (note) =>
        !reader.reviewer || note.trust === "reviewed" || note.updatedBy.job === reader.jobId || note.createdBy.job === reader.jobId
          ? Effect.succeed(note)
          : Effect.fail(new NoteNotFound({ id: noteId }))
      )
    ),
    transition: storeMethod("MemoryStore.transition", transition),
    forgotten: storeMethod("MemoryStore.forgotten", (reader, query, limit) => {
      const tsq = query === undefined ? undefined : orQuery(query)
      const match = tsq === undefined ? sql`TRUE` : sql`search @@ to_tsquery('simple', ${tsq})`
      // A reviewer recovers only what its own run wrote (a forgotten note is not reviewed).
      const mine = reader.reviewer ? sql`(updated_job = ${reader.jobId} OR created_job = ${reader.jobId})` : sql`TRUE`
      return Effect.map(
        noteRows(sql`SELECT ${sql.literal(COLUMNS)} FROM memory.note WHERE project_id = ${reader.projectId} AND trust = 'forgotten' AND ${mine} AND ${match}
          ORDER BY trust_at DESC LIMIT ${limit}`),
        (rows) => rows.map(toNote)
      )
    }),
    review: storeMethod("MemoryStore.review", (projectId, noteId, decision, by, options) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const at = yield* now
          const note = yield* noteIn(projectId, noteId, true)
          if (note.trust === "forgotten")
            return yield* Effect.fail(new ReviewRefused({ message: "a forgotten note cannot be reviewed; recover it first" }))
          const title = options.title ?? note.title
          const body = options.body ?? note.body
          const edited = title !== note.title || body !== note.body
          if (edited) {
            const clash =
              yield* sql`SELECT 1 FROM memory.note WHERE project_id = ${projectId} AND kind = ${note.kind} AND title = ${title} AND id <> ${noteId}`
            if (clash.length > 0)
              return yield* Effect.fail(new ReviewRefused({ message: `another ${note.kind} note is titled "${title}"` }))
            yield* sql`UPDATE memory.note SET title = ${title}, body = ${body}, updated_at = ${at} WHERE id = ${noteId}`
            yield* sql`INSERT INTO memory.revision (note_id, revision, title, body, paths, edited_by, at)
                SELECT ${noteId}, COALESCE(MAX(revision), 0) + 1, ${title}, ${body}, ${JSON.stringify(note.paths)}::jsonb, ${by}, ${at}
                FROM memory.revision WHERE note_id = ${noteId}`
          }
          if (note.trust !== decision || edited) {
            yield* recordTransition(note, decision, { _tag: "Person", username: by }, options.note ?? null, at)
            yield* sql`UPDATE memory.note SET trust = ${decision}, trust_at = ${at} WHERE id = ${noteId}`
            yield* appendLog(projectId, at, {
              kind: `note.${decision}`,
              jobId: null,
              agentId: null,
              noteId,
              summary: `${note.kind} "${title}" ${decision} by ${by}${edited ? " (edited)" : ""}`
            })
          }
          return yield* noteIn(projectId, noteId)
        })
      )
    ),
    list: storeMethod("MemoryStore.list", (projectId, filter) => {
      const tsq = filter.q === undefined ? undefined : orQuery(filter.q)
      return Effect.map(
        noteRows(sql`SELECT ${sql.literal(COLUMNS)} FROM memory.note WHERE project_id = ${projectId}
          AND ${filter.trust === undefined ? sql`TRUE` : sql`trust = ${filter.trust}`}
          AND ${filter.kind === undefined ? sql`TRUE` : sql`kind = ${filter.kind}`}
          AND ${filter.q === undefined ? sql`TRUE` : tsq === undefined ? sql`FALSE` : sql`search @@ to_tsquery('simple', ${tsq})`}
          ORDER BY updated_at DESC, id LIMIT 500`),
        (rows) => rows.map(toNote)
      )
    }),
    get: storeMethod("MemoryStore.get", (projectId, noteId) =>
      Effect.gen(function* () {
        const note = yield* noteIn(projectId, noteId)
        const revisions = yield* revisionRows(sql`SELECT revision, title, body, paths, job_id, agent_id, edited_by, at
          FROM memory.revision WHERE note_id = ${noteId} ORDER BY revision`)
        const transitions = yield* transitionRows(sql`
          SELECT from_trust, to_trust, by_kind, by_name, job_id, reason, at FROM memory.transition WHERE note_id = ${noteId} ORDER BY id`)
        return {
          note,
          revisions,
          transitions: transitions.map((t) => ({
            from: t.fromTrust,
            to: t.toTrust,
            byKind: t.byKind,
            byName: t.byName,
            jobId: t.jobId,
            reason: t.reason,
            at: t.at
          }))
        }
      })
    ),
    log: storeMethod("MemoryStore.log", (projectId, entry) =>
      Effect.gen(function* () {
        if (projectId === "" || !(yield* settings(projectId)).enabled) return
        yield* appendLog(projectId, yield* now, entry)
      })
    ),
    dailyLog: storeMethod("MemoryStore.dailyLog", (projectId, day) => {
      const start = new Date(`${day}T00:00:00.000Z`)
      if (Number.isNaN(start.getTime())) return Effect.succeed([])
      const end = new Date(start.getTime() + DAY_MS)
      return Effect.map(
        logRows(sql`SELECT at, kind, job_id, agent_id, note_id, summary FROM memory.log
          WHERE project_id = ${projectId} AND at >= ${start} AND at < ${end} ORDER BY at, id`),
        (rows) => rows
      )
    }),
    scratchpad: storeMethod("MemoryStore.scratchpad", (jobId) =>
      Effect.map(contentRows(sql`SELECT content FROM memory.scratchpad WHERE job_id = ${jobId}`), (rows) => rows[0]?.content ?? "")
    ),
    writeScratchpad: storeMethod("MemoryStore.writeScratchpad", (projectId, jobId, content, mode, max) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const at = yield* now
          const rows = yield* contentRows(sql`SELECT content FROM memory.scratchpad WHERE job_id = ${jobId} FOR UPDATE`)
          const next = mode === "append" ? (rows[0]?.content ?? "") + content : content
          if (next.length > max) return undefined
          yield* sql`INSERT INTO memory.scratchpad (job_id, project_id, content, updated_at) VALUES (${jobId}, ${projectId}, ${next}, ${at})
              ON CONFLICT (job_id) DO UPDATE SET content = EXCLUDED.content, updated_at = EXCLUDED.updated_at`
          return next
        })
      )
    ),
    reset: storeMethod("MemoryStore.reset", (projectId, by) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const at = yield* now
          const notes = yield* sql`DELETE FROM memory.note WHERE project_id = ${projectId} RETURNING id`
          yield* sql`DELETE FROM memory.log WHERE project_id = ${projectId}`
          yield* sql`DELETE FROM memory.scratchpad WHERE project_id = ${projectId}`
          // The reset itself stays on record, as the first line of the new log.
          yield* appendLog(projectId, at, {
            kind: "memory.reset",
            jobId: null,
            agentId: null,
            noteId: null,
            summary: `memory reset by ${by} (${notes.length} notes deleted)`
          })
          return { notes: notes.length }
        })
      )
    ),
    sweep: storeErrors("MemoryStore.sweep")(
      Effect.gen(function* () {
        const at = yield* now
        // learned → forgotten after learned_days without a review (recorded as a transition by retention).
        const expired = yield* expiredRows(sql`
        WITH due AS (
          SELECT n.id, n.project_id, n.kind, n.title FROM memory.note n JOIN memory.settings s ON s.project_id = n.project_id
          WHERE n.trust = 'learned' AND n.trust_at < ${at}::timestamptz - make_interval(days => s.learned_days)
          FOR UPDATE OF n SKIP LOCKED
        ), moved AS (
          UPDATE memory.note n SET trust = 'forgotten', trust_at = ${at} FROM due WHERE n.id = due.id RETURNING n.id
        ), recorded AS (
          INSERT INTO memory.transition (note_id, from_trust, to_trust, by_kind, by_name, reason, at)
          SELECT id, 'learned', 'forgotten', 'retention', 'retention', 'not reviewed within the retention period', ${at} FROM moved
        )
        SELECT id, project_id, kind, title FROM due`)
        for (const n of expired) {
          yield* appendLog(n.projectId, at, {
            kind: "note.forgotten",
            jobId: null,
            agentId: null,
            noteId: n.id,
            summary: `${n.kind} "${n.title}" forgotten by retention (not reviewed in time)`
          })
        }
        const purged = yield* sql`DELETE FROM memory.note n USING memory.settings s WHERE s.project_id = n.project_id
        AND n.trust IN ('forgotten', 'rejected') AND n.trust_at < ${at}::timestamptz - make_interval(days => s.forgotten_days) RETURNING n.id`
        const scratchpads = yield* sql`DELETE FROM memory.scratchpad p USING memory.settings s WHERE s.project_id = p.project_id
        AND p.updated_at < ${at}::timestamptz - make_interval(days => s.scratchpad_days) RETURNING p.job_id`
        const logs = yield* sql`DELETE FROM memory.log l USING memory.settings s WHERE s.project_id = l.project_id
        AND l.at < ${at}::timestamptz - make_interval(days => s.log_days) RETURNING l.id`
        return { expired: expired.length, purged: purged.length, scratchpads: scratchpads.length, logs: logs.length }
      })
    )
  }
  return service
})

export const MemoryStoreLive: Layer.Layer<MemoryStore, never, SqlClient> = Layer.effect(
  MemoryStore,
  Effect.map(makeMemoryStore, (s) => traced("MemoryStore", s))
)
