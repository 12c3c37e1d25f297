/**
 * Continuing a finished job (POST /api/jobs/:id/continue, the portal's Continue form, `kintsugi run
 * --continue`): a new job of the same agent version, project, workspace and limits, linked to its
 * parent (`parent_job_id`), whose worker hands it the parent's transcript replayed as its `history`.
 * The transcript is opened in the worker only: it never travels over the API.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Either, Option, Schema } from "effect"
import type { AgentStore } from "../../agents/AgentStore.ts"
import type { SkillStore } from "../../agents/SkillStore.ts"
import { type JobHistory, JobTask } from "../../contract/JobSpec.ts"
import { applyTurn, type TranscriptMessage, type TranscriptTurn } from "../../job/Transcript.ts"
import { Bindings } from "../../providers/Bindings.ts"
import { decodeRows } from "../../db/rowSchema.ts"
import { type StoreError, storeMethod } from "../../db/StoreError.ts"
import { admitJob } from "../admitJob.ts"
import type { JobRoots } from "../JobRoots.ts"
import { JobStore, type JobNotFound, type JobRow } from "../JobStore.ts"
import { TranscriptStore } from "./TranscriptStore.ts"

/** The body of a continue request: the next task. */
export const ContinueBody = Schema.Struct({ task: JobTask })

/** The job exists but cannot be continued now; `why` says what the caller can do about it. */
export class JobNotContinuable extends Schema.TaggedError<JobNotContinuable>()("JobNotContinuable", {
  id: Schema.String,
  why: Schema.String
}) {
  override get message(): string {
    return `job "${this.id}" cannot be continued: ${this.why}`
  }
}

/**
 * The conversation the model would be sent after the last of `turns`, and the prompt it belongs to
 * (the last turn's hashes): the turns applied one after the other (applyTurn). Undefined without turns.
 */
export const replayHistory = (turns: ReadonlyArray<TranscriptTurn>): JobHistory | undefined => {
  const last = turns[turns.length - 1]
  if (last === undefined) return undefined
  const conversation = turns.reduce<ReadonlyArray<TranscriptMessage>>(applyTurn, [])
  if (conversation.length === 0) return undefined
  return { instructionsHash: last.instructionsHash, toolsHash: last.toolsHash, messages: conversation }
}

/** The history a continued job starts from: its parent's transcript replayed (read in the worker). */
export const parentHistory = (parentId: string): Effect.Effect<JobHistory, JobNotContinuable | StoreError, TranscriptStore> =>
  Effect.flatMap(
    Effect.flatMap(TranscriptStore, (s) => s.read(parentId)),
    (turns) => {
      const history = replayHistory(turns.map((t) => t.record))
      return history === undefined
        ? Effect.fail(new JobNotContinuable({ id: parentId, why: "its transcript is gone (deleted at its project's retention)" }))
        : Effect.succeed(history)
    }
  )

const IdRow = decodeRows(Schema.Struct({ id: Schema.String }))

/** The ids of the jobs that continue `jobId`, oldest first. */
export const continuationsOf = storeMethod("Continuations.of", (jobId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(IdRow(sql`SELECT id FROM runtime.job WHERE parent_job_id = ${jobId} ORDER BY created_at, id`), (rows) =>
      rows.map((r) => r.id)
    )
  )
)

const FINISHED: ReadonlyArray<JobRow["status"]> = ["completed", "failed"]

/**
 * Queues the continuation of job `parentId` with `task`, by `by`: refused while the parent has not
 * finished, when it has no transcript, when it could no longer start (its workspace or agent version
 * gone, its agent unbound) or when the agent's binding names another model than it ran on. The job
 * is queued and linked to its parent in one transaction, so no worker claims it unlinked.
 */
export const continueJob = (
  parentId: string,
  task: string,
  by: string
): Effect.Effect<
  JobRow,
  JobNotFound | JobNotContinuable | StoreError,
  JobStore | TranscriptStore | SqlClient | JobRoots | AgentStore | SkillStore | Bindings
> =>
  Effect.gen(function* () {
    const store = yield* JobStore
    const parent = yield* store.get(parentId)
    const refuse = (why: string) => Effect.fail(new JobNotContinuable({ id: parent.id, why }))
    if (!FINISHED.includes(parent.status)) return yield* refuse(`it has not finished (it is ${parent.status})`)
    if (!(yield* Effect.flatMap(TranscriptStore, (s) => s.kept(parent.id))))
      return yield* refuse("it has no transcript (its project keeps none, or they were deleted at its retention)")
    const version = Number(parent.agentVersion)
    if (parent.agentVersion === null || !Number.isInteger(version)) return yield* refuse("it never ran an agent version")
    const admitted = yield* admitJob({
      ...(parent.projectId === "" ? {} : { project: parent.projectId }),
      agent: parent.agentName,
      task,
      workspace: parent.workspace,
      limits: parent.limits,
      metadata: parent.metadata,
      agentVersion: version
    })
    if (Either.isLeft(admitted)) {
      return yield* refuse(`it could no longer start: ${admitted.left.map((p) => `${p.path} ${p.message}`).join("; ")}`)
    }
    // The same model: the agent's binding must still name the one the parent ran on.
    const binding = yield* Effect.option((yield* Bindings).resolve(parent.agentName, parent.projectId))
    const model = Option.map(binding, (b) => `${b.providerId}/${b.modelId}`)
    if (parent.model !== null && Option.isSome(model) && model.value !== parent.model) {
      return yield* refuse(`the agent's binding now names ${model.value}, and it ran on ${parent.model}`)
    }
    const sql = yield* SqlClient
    const child = yield* storeMethod("Continuations.enqueue", () =>
      sql.withTransaction(
        Effect.tap(
          store.enqueue(admitted.right, by),
          (job) => sql`UPDATE runtime.job SET parent_job_id = ${parent.id} WHERE id = ${job.id}`
        )
      )
    )()
    return yield* store.get(child.id)
  })
