/**
 * Span events (ARCHITECTURE §5): one `span` event per settled span, with scalar attributes only
 * (counts and names, never content).
 */
import { Effect, Exit } from "effect"
import type { SPAN_NAMES } from "../contract/JobEvent.ts"
import type { EventSink } from "./EventSink.ts"

export type SpanName = (typeof SPAN_NAMES)[number]
export type SpanAttributes = Record<string, string | number | boolean>

export class Spans {
  private next = 0

  constructor(
    private readonly sink: EventSink,
    private readonly jobId: string
  ) {}

  newId(): string {
    return `${this.jobId.slice(0, 8)}-${(this.next++).toString(16).padStart(4, "0")}`
  }

  /** Runs `effect` inside a span; `attributes` may be filled in while it runs. */
  span<A, E, R>(
    name: SpanName,
    parentSpanId: string | undefined,
    attributes: SpanAttributes,
    effect: (spanId: string) => Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R> {
    const spanId = this.newId()
    const start = new Date()
    const t0 = performance.now()
    return Effect.onExit(effect(spanId), (exit) =>
      Effect.sync(() =>
        this.sink.emit({
          type: "span",
          name,
          spanId,
          ...(parentSpanId === undefined ? {} : { parentSpanId }),
          start: start.toISOString(),
          durationMs: Math.round((performance.now() - t0) * 1000) / 1000,
          status: Exit.isSuccess(exit) ? "ok" : "error",
          attributes
        })
      )
    )
  }
}
