/**
 * Server-sent event streams of a job (the API's JSON events, the portal's rendered rows): the response
 * headers and a first comment go out at once (a subscriber to a queued job is answered immediately),
 * a comment heartbeat keeps the connection under Bun's idle timeout while the job is silent, every
 * event carries `id: <seq>` so a client resumes with `Last-Event-ID`, and the stream ends at the
 * job's terminal event or its settlement (stored events first, then live ones).
 */
import { Effect, Fiber, Queue, Runtime } from "effect"
import type { JobEvent } from "../contract/JobEvent.ts"
import { JobBus } from "../worker/JobBus.ts"
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
  `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\n${data.split(/\r\n|\r|\n/).map((l) => `data: ${l}`).join("\n")}\n\n`

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
 * one (setup failed, child crashed): first what is stored, then whatever arrives,
 * woken by the bus or a 500 ms poll (events written by another serve process).
 */
export const followJob = <R>(jobId: string, after: number, sink: JobStreamSink<R>): Effect.Effect<void, never, JobStore | JobBus | R> =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* JobStore
      const signals = yield* (yield* JobBus).subscribe
      const wake = Effect.race(
        Effect.repeat(Queue.take(signals), { until: (s) => s._tag === "Events" && s.jobId === jobId }),
        Effect.sleep("500 millis")
      )
      let last = after
      let terminal = false
      while (true) {
        if (!terminal) {
          for (const e of yield* store.events(jobId, last)) {
            yield* sink.event(e)
            last = e.seq
            if (isTerminal(e)) {
              terminal = true
              break
            }
          }
        }
        const job = yield* Effect.orDie(store.get(jobId))
        const settled = job.status === "completed" || job.status === "failed"
        if (terminal && (settled || sink.awaitRow !== true)) return yield* sink.settled(job, last, true)
        if (!terminal && settled) {
          if ((yield* store.events(jobId, last)).length === 0) return yield* sink.settled(job, last, false)
          continue
        }
        yield* wake
      }
    })
  )

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
      // The first bytes flush the headers: EventSource is open before the job has anything to say.
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
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no", "x-content-type-options": "nosniff" }
  })
}
