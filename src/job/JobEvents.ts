/**
 * The per-job event service: the sink (stamping, redaction, order), spans with their parent tracked
 * per fiber, and the job's redactor. Times come from Effect's Clock, so TestClock drives them too.
 */
import { Clock, Context, Effect, Exit, FiberRef, Layer } from "effect"
import type { JobEvent, JobEventBody, SPAN_NAMES } from "../contract/JobEvent.ts"
import { EventSink } from "./EventSink.ts"
import { Redactor } from "./Redactor.ts"

export type SpanName = (typeof SPAN_NAMES)[number]
export type SpanAttributes = Record<string, string | number | boolean>

/** One range shown to the model; `lastLine` null = to the end of the file. */
export interface ShownRange {
  readonly path: string
  readonly firstLine: number
  readonly lastLine: number | null
}

export class JobEvents extends Context.Tag("job/JobEvents")<
  JobEvents,
  {
    readonly jobId: string
    /** Stamps (`seq`, `at`), redacts and delivers one event. Never fails; a no-op after the terminal event. */
    readonly emit: (body: JobEventBody) => Effect.Effect<void>
    /** `emit` for callbacks outside Effect (a model stream's loop). */
    readonly emitNow: (body: JobEventBody) => void
    /** Ends a streamed message: text held back for redaction goes out now. */
    readonly flushText: () => void
    /**
     * Runs `effect` in a span whose parent is the enclosing span of this fiber; `attributes` may be
     * filled in while it runs. The span event is emitted whatever the exit (ok only on success),
     * interruption included.
     */
    readonly span: <A, E, R>(name: SpanName, attributes: SpanAttributes, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    /** A fresh span id, for a span emitted by hand (the job span, which must precede the terminal event). */
    readonly newSpanId: () => string
    /** Runs `effect` with `spanId` as the parent of the spans it opens. */
    readonly withParent: <A, E, R>(spanId: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    /** Replaces every secret of the job in `text` (failure messages, diagnostics). */
    readonly redact: (text: string) => string
    /** The line ranges shown to the model so far (its `source.read` events), for the grounding check. */
    readonly shown: () => ReadonlyArray<ShownRange>
    /** The output paths reported so far (its `output` events, relative to outDir). */
    readonly outputs: () => ReadonlyArray<string>
  }
>() {}

/** The span the current fiber is inside, per job service. */
const currentSpan = FiberRef.unsafeMake<string | undefined>(undefined)

/** Milliseconds with sub-millisecond precision from the Clock (a TestClock gives whole milliseconds). */
const nowMs = Effect.map(Clock.currentTimeNanos, (ns) => Number(ns) / 1e6)

/** Where a resumed job's earlier runs left its events: the next seq, the ranges shown and the outputs reported. */
export interface EarlierEvents {
  readonly nextSeq: number
  readonly shown: ReadonlyArray<ShownRange>
  readonly outputs: ReadonlyArray<string>
}

/** The service over a redactor and a delivery function (the job's event queue); a resumed job's goes on from `earlier`. */
export const make = (
  jobId: string,
  redactor: Redactor,
  deliver: (event: JobEvent) => void,
  earlier?: EarlierEvents
): Effect.Effect<JobEvents["Type"]> =>
  Effect.map(Effect.clock, (clock) => {
    const sink = new EventSink(redactor, deliver, () => new Date(clock.unsafeCurrentTimeMillis()), earlier?.nextSeq ?? 0)
    const shown: Array<ShownRange> = [...(earlier?.shown ?? [])]
    const outputs: Array<string> = [...(earlier?.outputs ?? [])]
    const record = (body: JobEventBody) => {
      if (sink.isClosed) return
      if (body.type === "source.read") shown.push({ path: body.path, firstLine: body.firstLine, lastLine: body.lastLine })
      else if (body.type === "output") outputs.push(body.path)
    }
    let next = 0
    const newSpanId = () => `${jobId.slice(0, 8)}-${(next++).toString(16).padStart(4, "0")}`
    const withParent = <A, E, R>(spanId: string, effect: Effect.Effect<A, E, R>) => Effect.locally(effect, currentSpan, spanId)
    const span = <A, E, R>(name: SpanName, attributes: SpanAttributes, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.gen(function* () {
        const parentSpanId = yield* FiberRef.get(currentSpan)
        const spanId = newSpanId()
        const start = clock.unsafeCurrentTimeMillis()
        const t0 = yield* nowMs
        return yield* Effect.onExit(withParent(spanId, effect), (exit) =>
          Effect.flatMap(nowMs, (t1) =>
            Effect.sync(() =>
              sink.emit({
                type: "span",
                name,
                spanId,
                ...(parentSpanId === undefined ? {} : { parentSpanId }),
                start: new Date(start).toISOString(),
                durationMs: Math.round((t1 - t0) * 1000) / 1000,
                status: Exit.isSuccess(exit) ? "ok" : "error",
                attributes
              })
            )
          )
        )
      })
    return {
      jobId,
      emit: (body) =>
        Effect.sync(() => {
          record(body)
          sink.emit(body)
        }),
      emitNow: (body) => {
        record(body)
        sink.emit(body)
      },
      flushText: () => sink.flushText(),
      span,
      newSpanId,
      withParent,
      redact: (text) => redactor.redact(text),
      shown: () => shown,
      outputs: () => outputs
    }
  })

/** A test service: every event lands in `events`; nothing is redacted. */
export const layerTest = (events: Array<JobEvent>, jobId = "00000000-test-job"): Layer.Layer<JobEvents> =>
  Layer.effect(
    JobEvents,
    make(jobId, new Redactor([]), (e) => void events.push(e))
  )
