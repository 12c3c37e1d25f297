/**
 * The W3C `traceparent` form (`00-<trace id>-<span id>-<flags>`): how a queued job keeps the trace of the
 * request that queued it, and how a caller's trace continues into ours.
 */
import * as Tracer from "effect/Tracer"

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The `traceparent` of `span` (sampled). */
export const formatTraceParent = (span: Tracer.AnySpan): string => `00-${span.traceId}-${span.spanId}-01`

/** A `traceparent` value as a parent span, or undefined when it is not one (all-zero ids are invalid). */
export const parseTraceParent = (value: string | null | undefined): Tracer.ExternalSpan | undefined => {
  const m = value === null || value === undefined ? null : TRACEPARENT.exec(value.trim())
  if (m === null || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined
  return Tracer.externalSpan({ traceId: m[1]!, spanId: m[2]!, sampled: (parseInt(m[3]!, 16) & 1) === 1 })
}
