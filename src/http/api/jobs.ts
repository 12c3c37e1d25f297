/**
 * Jobs: start one for an agent, list and read them, follow their events live over SSE (replayed
 * from the database first, so a late subscriber misses nothing), abort. Starting a job needs
 * agents.manage: it spends money and reads the server's directories it names.
 */
import { Effect, Either, Option, Schema } from "effect"
import { Elysia } from "elysia"
import { JobBus } from "../../worker/JobBus.ts"
import { admitJob } from "../../worker/admitJob.ts"
import { IDEMPOTENCY_KEY, JobStore, type JobRow, type JobStatus } from "../../worker/JobStore.ts"
import { ContinueBody, continueJob, continuationsOf } from "../../worker/transcripts/continuation.ts"
import { decodeAll } from "../../contract/Problem.ts"
import type { Guard } from "../auth.ts"
import { followJob, resumeAfter, resumedAtEnd, sseFrame, sseResponse, SSE_HEARTBEAT_MS } from "../eventStream.ts"
import { badRequest, json } from "../respond.ts"
import { jsonBody, param, type AppServices, type Handler } from "../route.ts"

type Route = (
  guard: Guard,
  handler: Handler
) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>

const STATUSES: ReadonlyArray<JobStatus> = ["queued", "running", "completed", "failed"]

/** The totals of a job's stored usage the list shows; a usage that does not decode shows none. */
const UsageTotals = Schema.Struct({ turns: Schema.Number, inputTokens: Schema.Number, outputTokens: Schema.Number })
const usageTotals = Schema.decodeUnknownOption(UsageTotals)

/** How much of the task and of the settlement message a list row carries; the whole text is on the job. */
const TASK_CHARS = 120
const MESSAGE_CHARS = 160

/**
 * A job as a row of the list: who, what, where, when, how it ended and what it cost. The workspace,
 * limits, metadata, summary, outputs and usage detail are on `GET /api/jobs/:id` only.
 */
const listEntry = (job: JobRow) => {
  const usage = Option.getOrUndefined(usageTotals(job.usage))
  return {
    id: job.id,
    status: job.status,
    agent: job.agentName,
    agentVersion: job.agentVersion,
    project: job.projectId,
    task: job.task.slice(0, TASK_CHARS),
    createdBy: job.createdBy,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    reason: job.reason,
    message: job.message?.slice(0, MESSAGE_CHARS) ?? null,
    model: job.model,
    costUsd: job.costUsd,
    turns: usage?.turns ?? null,
    inputTokens: usage?.inputTokens ?? null,
    outputTokens: usage?.outputTokens ?? null
  }
}

const decodeContinue = decodeAll(ContinueBody)

const idempotencyKey = (request: Request) => {
  const key = request.headers.get("idempotency-key")
  if (key === null) return Effect.succeed(undefined)
  return IDEMPOTENCY_KEY.test(key)
    ? Effect.succeed(key)
    : Effect.fail(badRequest([{ path: "Idempotency-Key", message: "must be 1 to 255 visible ASCII characters" }]))
}
export const jobRoutes = (route: Route, heartbeatMs: number = SSE_HEARTBEAT_MS) =>
  new Elysia({ name: "jobs-api" })
    .post(
      "/api/jobs",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const key = yield* idempotencyKey(i.request)
          // Schema, workspace (job roots, forbidden paths, missing directories) and agent problems in one 400; nothing stored.
          const decoded = yield* admitJob(yield* jsonBody(i.request))
          if (Either.isLeft(decoded)) return yield* Effect.fail(badRequest(decoded.left))
          const input = decoded.right
          const store = yield* JobStore
          // The same Idempotency-Key (same user, same request) gives the first job back: 200, not a second job.
          const { job, created } =
            key === undefined
              ? { job: yield* store.enqueue(input, i.principal.username), created: true }
              : yield* store.enqueueOnce(input, i.principal.username, key)
          if (created) yield* (yield* JobBus).publish({ _tag: "Queued" })
          return json({ job }, created ? 201 : 200)
        })
      )
    )
    .get(
      "/api/jobs",
      route("read", (i) =>
        Effect.gen(function* () {
          const status = i.url.searchParams.get("status")
          if (status !== null && !(STATUSES as ReadonlyArray<string>).includes(status)) {
            return yield* Effect.fail(badRequest([{ path: "status", message: `must be one of ${STATUSES.join(", ")}` }]))
          }
          const limit = Math.min(200, Math.max(1, Number(i.url.searchParams.get("limit") ?? 50) || 50))
          const [agent, project, before] = ["agent", "project", "before"].map((k) => i.url.searchParams.get(k) ?? undefined)
          const jobs = yield* (yield* JobStore).list({
            limit,
            ...(status === null ? {} : { status: status as JobStatus }),
            ...(agent === undefined ? {} : { agent }),
            ...(project === undefined ? {} : { project }),
            ...(before === undefined ? {} : { before })
          })
          // The next page: `before=<nextCursor>` (the last job's id); null on the last page.
          return json({ jobs: jobs.map(listEntry), nextCursor: jobs.length === limit ? (jobs[jobs.length - 1]?.id ?? null) : null })
        })
      )
    )
    .get(
      "/api/jobs/:id",
      route("read", (i) =>
        Effect.gen(function* () {
          const store = yield* JobStore
          const job = yield* store.get(param(i, "id"))
          // A completed job's typed answer (the agent declares one) is in its stored job.completed event.
          const answer = job.status === "completed" ? yield* store.answer(job.id) : undefined
          // The jobs that continue this one (parentJobId is the other way).
          const continuations = yield* continuationsOf(job.id)
          return json({ job: { ...job, ...(answer === undefined ? {} : { answer }), continuations } })
        })
      )
    )
    .get(
      "/api/jobs/:id/events",
      route("read", (i) =>
        Effect.gen(function* () {
          const id = param(i, "id")
          const job = yield* (yield* JobStore).get(id)
          const after = resumeAfter(i.request, i.url)
          if (i.url.searchParams.get("format") === "json" || (i.request.headers.get("accept") ?? "").includes("application/json")) {
            return json({ events: yield* (yield* JobStore).events(id, after) })
          }
          // Resumed at or after the end: nothing to send, and a 204 stops an EventSource from reconnecting.
          if (yield* resumedAtEnd(i.request, job, after)) return new Response(null, { status: 204 })
          const runtime = yield* Effect.runtime<AppServices>()
          return sseResponse(
            runtime,
            (write) =>
              followJob(id, after, {
                event: (e) => Effect.sync(() => write(sseFrame(e.type, JSON.stringify(e), e.seq))),
                // Settled without a terminal event (setup failed, child crashed): say how it ended.
                settled: (job, last, terminal) =>
                  terminal
                    ? Effect.void
                    : Effect.sync(() =>
                        write(
                          sseFrame("job.settled", JSON.stringify({ status: job.status, reason: job.reason, message: job.message }), last)
                        )
                      )
              }),
            heartbeatMs
          )
        })
      )
    )
    .post(
      "/api/jobs/:id/continue",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const body = decodeContinue(yield* jsonBody(i.request))
          if (Either.isLeft(body)) return yield* Effect.fail(badRequest(body.left))
          // The parent's transcript becomes the new job's history in the worker; it is not read here.
          const job = yield* continueJob(param(i, "id"), body.right.task, i.principal.username)
          yield* (yield* JobBus).publish({ _tag: "Queued" })
          return json({ job }, 201)
        })
      )
    )
    .post(
      "/api/jobs/:id/abort",
      route("agents.manage", (i) =>
        Effect.map(
          Effect.flatMap(JobStore, (s) => s.requestAbort(param(i, "id"), i.principal.username)),
          (job) => json({ job }, 202)
        )
      )
    )
