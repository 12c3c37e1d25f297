/**
 * Server-sent event streams of a job (the API's JSON events, the portal's rendered rows): the response
 * headers and a first comment go out at once (a subscriber to a queued job is answered immediately),
 * a comment heartbeat keeps the connection under Bun's idle timeout while the job is silent, every
 * event carries `id: <seq>` so a client resumes with `Last-Event-ID`, and the stream ends at the
 * job's terminal event or its settlement (stored events first, then live ones, from the JobFeed).
 */
import { Effect, Fiber, Queue, Runtime } from "effect"
import type { JobEvent } from "../contract/JobEvent.ts"
import { JobFeed } from "../worker/JobFeed.ts"
import { JobStore, type JobRow } from "../worker/JobStore.ts"

/** Under Bun's default idle timeout (10 s): a silent job's stream sends a comment this often. */
export const SSE_HEARTBEAT_MS = 5_000

/** The reconnection delay the stream asks of EventSource clients. */
const RETRY_MS = 2_000

/** The seq a client asks to resume after: `Last-Event-ID` (a reconnecting EventSource), else `?after=`; -1 = from the start. */
export const resumeAfter = (request: Request, url: URL): number => {
  const from = request.headers.get("last-event-id") ?? url.searchParams.get("after")
  return from !== null && /^-?\d{1,10}$/.test(from.trim()) ? Number(from.trim()) : -1
}

/** One SSE frame; multi-line data is split into `data:` lines as the format requires. */
export const sseFrame = (event: string, data: string, id?: number): string =>
  `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\n${data
    .split(/\r\n|\r|\n/)
    .map((l) => `data: ${l}`)
    .join("\n")}\n\n`

export interface JobStreamSink<R> {
  /** A stored or live event of the job, in seq order. */
  readonly event: (e: JobEvent) => Effect.Effect<void, never, R>
  /**
   * The end, called once: after the terminal event (`terminal`), or when the job settled without one;
   * `last` is the seq of the last event sent (or the resume point).
   */
  readonly settled: (job: JobRow, last: number, terminal: boolean) => Effect.Effect<void, never, R>
  /**
   * After the terminal event, wait for the job's row to be settled before `settled` (the worker writes
   * the event first, then commits the outputs and settles the row).
   */
  readonly awaitRow?: boolean
}

const isTerminal = (e: JobEvent) => e.type === "job.completed" || e.type === "job.failed"

/**
 * Feeds the job's events after `after` to `sink` until its terminal event, or its settlement without
 * one (setup failed, child crashed): first what is stored, then whatever arrives, as this process's
 * JobFeed hands it out (one read per job for all of its streams; a silent job costs no query).
 */
export const followJob = <R>(jobId: string, after: number, sink: JobStreamSink<R>): Effect.Effect<void, never, JobFeed | R> =>
  Effect.scoped(
    Effect.gen(function* () {
      const items = yield* (yield* JobFeed).follow(jobId, after)
      let last = after
      let terminal = false
      while (true) {
        const item = yield* Queue.take(items)
        if (item._tag === "Events") {
          for (const e of item.events) {
            if (terminal) break
            yield* sink.event(e)
            last = e.seq
            terminal = isTerminal(e)
          }
          continue
        }
        const settled = item.job.status === "completed" || item.job.status === "failed"
        if (terminal && (settled || sink.awaitRow !== true)) return yield* sink.settled(item.job, last, true)
        if (!terminal && settled) return yield* sink.settled(item.job, last, false)
      }
    })
  )

/**
 * Whether a stream resumed at `after` (a reconnect's `Last-Event-ID`, or `?after=` at 0 or later) has
 * nothing left to say: the job is settled and no event follows `after`. An EventSource told so with 204
 * stops reconnecting instead of being sent its last id again.
 */
export const resumedAtEnd = (request: Request, job: JobRow, after: number) =>
  Effect.gen(function* () {
    if (job.status !== "completed" && job.status !== "failed") return false
    if (after < 0 && !request.headers.has("last-event-id")) return false
    return (yield* (yield* JobStore).events(job.id, after)).length === 0
  })

/**
 * An SSE response whose body `produce` writes (frames from `sseFrame`); headers and a `retry:` line go
 * out at once, a `: keep-alive` comment every `heartbeatMs` until the body ends or the client leaves
 * (which interrupts `produce`).
 */
export const sseResponse = <R>(
  runtime: Runtime.Runtime<R>,
  produce: (write: (frame: string) => void) => Effect.Effect<void, never, R>,
  heartbeatMs: number = SSE_HEARTBEAT_MS
): Response => {
  const encoder = new TextEncoder()
  let fiber: Fiber.RuntimeFiber<void> | undefined
  let timer: ReturnType<typeof setInterval> | undefined
  let open = true
  const body = new ReadableStream<Uint8Array>({
    start: (controller) => {
      const write = (frame: string) => {
        if (!open) return
        try {
          controller.enqueue(encoder.encode(frame))
        } catch {
          open = false
        }
      }
      // The first bytes flush the headers: EventSource is open before the job has said a word.
      write(`retry: ${RETRY_MS}\n: stream open\n\n`)
      timer = setInterval(() => write(": keep-alive\n\n"), heartbeatMs)
      fiber = Runtime.runFork(runtime)(
        produce(write).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              clearInterval(timer)
              if (open) {
                open = false
                controller.close()
              }
            })
          )
        )
      )
    },
    cancel: () => {
      open = false
      clearInterval(timer)
      if (fiber !== undefined) Runtime.runFork(runtime)(Fiber.interrupt(fiber))
    }
  })
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
      "x-content-type-options": "nosniff"
    }
  })
}
