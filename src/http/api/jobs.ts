/**
 * Jobs: start one for an agent, list and read them, follow their events live over SSE (replayed
 * from the database first, so a late subscriber misses nothing), abort. Starting a job needs
 * agents.manage: it spends money and reads the server's directories it names.
 */
import { Effect, Either, Fiber, Queue, Runtime } from "effect"
import { Elysia } from "elysia"
import type { JobEvent } from "../../contract/JobEvent.ts"
import { JobBus } from "../../worker/JobBus.ts"
import { JobRoots } from "../../worker/JobRoots.ts"
import { IDEMPOTENCY_KEY, JobStore, type JobStatus } from "../../worker/JobStore.ts"
import type { Guard } from "../auth.ts"
import { badRequest, json } from "../respond.ts"
import { jsonBody, param, type AppServices, type Handler } from "../route.ts"

type Route = (guard: Guard, handler: Handler) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>

const STATUSES: ReadonlyArray<JobStatus> = ["queued", "running", "completed", "failed"]

const idempotencyKey = (request: Request) => {
  const key = request.headers.get("idempotency-key")
  if (key === null) return Effect.succeed(undefined)
  return IDEMPOTENCY_KEY.test(key)
    ? Effect.succeed(key)
    : Effect.fail(badRequest([{ path: "Idempotency-Key", message: "must be 1 to 255 visible ASCII characters" }]))
}
const isTerminal = (e: JobEvent) => e.type === "job.completed" || e.type === "job.failed"

/**
 * Writes the job's events after `after` as SSE frames until its terminal event (or the client
 * leaves): first what is stored, then whatever arrives, woken by the bus or a 500 ms poll (events
 * written by another serve process).
 */
const streamEvents = (jobId: string, after: number, write: (frame: string) => void) =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* JobStore
      const signals = yield* (yield* JobBus).subscribe
      let last = after
      while (true) {
        const events = yield* store.events(jobId, last)
        for (const e of events) {
          write(`id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
          last = e.seq
          if (isTerminal(e)) return
        }
        const job = yield* Effect.orDie(store.get(jobId))
        if (job.status === "completed" || job.status === "failed") {
          // Settled without a terminal event (setup failed, child crashed): say how it ended, then stop.
          if ((yield* store.events(jobId, last)).length === 0) {
            write(`event: job.settled\ndata: ${JSON.stringify({ status: job.status, reason: job.reason, message: job.message })}\n\n`)
            return
          }
          continue
        }
        yield* Effect.race(
          Effect.repeat(Queue.take(signals), { until: (s) => s._tag === "Events" && s.jobId === jobId }),
          Effect.sleep("500 millis")
        )
      }
    })
  )

export const jobRoutes = (route: Route) =>
  new Elysia({ name: "jobs-api" })
    .post(
      "/api/jobs",
      route("agents.manage", (i) => Effect.gen(function* () {
        const key = yield* idempotencyKey(i.request)
        // Schema and workspace problems (job roots, forbidden paths, missing directories) in one 400; nothing stored.
        const decoded = yield* (yield* JobRoots).decodeJob(yield* jsonBody(i.request))
        if (Either.isLeft(decoded)) return yield* Effect.fail(badRequest(decoded.left))
        const input = decoded.right
        const store = yield* JobStore
        // The same Idempotency-Key (same user, same request) gives the first job back: 200, not a second job.
        const { job, created } = key === undefined ? { job: yield* store.enqueue(input, i.principal.username), created: true } : yield* store.enqueueOnce(input, i.principal.username, key)
        if (created) yield* (yield* JobBus).publish({ _tag: "Queued" })
        return json({ job }, created ? 201 : 200)
      }))
    )
    .get(
      "/api/jobs",
      route("read", (i) => Effect.gen(function* () {
        const status = i.url.searchParams.get("status")
        if (status !== null && !(STATUSES as ReadonlyArray<string>).includes(status)) {
          return yield* Effect.fail(badRequest([{ path: "status", message: `must be one of ${STATUSES.join(", ")}` }]))
        }
        const limit = Math.min(200, Math.max(1, Number(i.url.searchParams.get("limit") ?? 50) || 50))
        const agent = i.url.searchParams.get("agent")
        const jobs = yield* (yield* JobStore).list({ limit, ...(status === null ? {} : { status: status as JobStatus }), ...(agent === null ? {} : { agent }) })
        return json({ jobs })
      }))
    )
    .get("/api/jobs/:id", route("read", (i) => Effect.map(Effect.flatMap(JobStore, (s) => s.get(param(i, "id"))), (job) => json({ job }))))
    .get(
      "/api/jobs/:id/events",
      route("read", (i) => Effect.gen(function* () {
        const id = param(i, "id")
        yield* (yield* JobStore).get(id)
        const from = i.request.headers.get("last-event-id") ?? i.url.searchParams.get("after")
        const after = from === null ? -1 : Number.isInteger(Number(from)) ? Number(from) : -1
        if (i.url.searchParams.get("format") === "json" || (i.request.headers.get("accept") ?? "").includes("application/json")) {
          return json({ events: yield* (yield* JobStore).events(id, after) })
        }
        const runtime = yield* Effect.runtime<AppServices>()
        const encoder = new TextEncoder()
        let fiber: Fiber.RuntimeFiber<void> | undefined
        const body = new ReadableStream<Uint8Array>({
          start: (controller) => {
            fiber = Runtime.runFork(runtime)(
              streamEvents(id, after, (frame) => controller.enqueue(encoder.encode(frame))).pipe(
                Effect.ensuring(Effect.sync(() => controller.close()))
              )
            )
          },
          cancel: () => {
            if (fiber !== undefined) Runtime.runFork(runtime)(Fiber.interrupt(fiber))
          }
        })
        return new Response(body, {
          headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" }
        })
      }))
    )
    .post(
      "/api/jobs/:id/abort",
      route("agents.manage", (i) => Effect.map(Effect.flatMap(JobStore, (s) => s.requestAbort(param(i, "id"))), (job) => json({ job }, 202)))
    )

