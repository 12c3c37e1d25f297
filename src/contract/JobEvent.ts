/**
 * The events of a job (ARCHITECTURE §5, a fixed interface other programs parse). Every event has
 * `type`, `seq` (0,1,2,… per job) and `at` (ISO time). No schema here has a content field that
 * could carry file bytes: `source.read` names lines, never text.
 */
import { Schema } from "effect"

export const FAILURE_REASONS = ["error", "timeout", "max-turns", "budget", "context-overflow", "loop", "aborted"] as const
export const FailureReason = Schema.Literal(...FAILURE_REASONS)
export type FailureReason = typeof FailureReason.Type

const base = { seq: Schema.Number, at: Schema.String }
const event = <T extends string, F extends Schema.Struct.Fields>(type: T, fields: F) =>
  Schema.Struct({ type: Schema.Literal(type), ...base, ...fields })

export const JobStarted = event("job.started", {
  runtimeVersion: Schema.String,
  agentId: Schema.String,
  agentVersion: Schema.Union(Schema.String, Schema.Number),
  metadata: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  /** The tools the job got, in prompt order (absent in events stored before it was added). */
  tools: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
})
export const MessageDelta = event("message.delta", { text: Schema.String })
export const ToolCall = event("tool.call", {
  callId: Schema.String,
  tool: Schema.String,
  input: Schema.Unknown,
  allowed: Schema.Boolean,
  reason: Schema.optionalWith(Schema.String, { exact: true })
})
export const ToolResult = event("tool.result", {
  callId: Schema.String,
  tool: Schema.String,
  success: Schema.Boolean,
  summary: Schema.String,
  durationMs: Schema.Number
})
export const Output = event("output", { path: Schema.String })
export const SourceRead = event("source.read", {
  tool: Schema.String,
  path: Schema.String,
  firstLine: Schema.Number,
  lastLine: Schema.NullOr(Schema.Number)
})
export const UsageEvent = event("usage", {
  model: Schema.String,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cacheReadTokens: Schema.Number,
  cacheWriteTokens: Schema.Number,
  costUsd: Schema.Number,
  turns: Schema.Number,
  compactions: Schema.Number,
  contextPeakPercent: Schema.Number,
  compactionSummaries: Schema.Number
})
export const SPAN_NAMES = [
  "kintsugi.job",
  "kintsugi.turn",
  "kintsugi.tool",
  "kintsugi.codemode",
  "kintsugi.mcp",
  "kintsugi.compaction",
  "kintsugi.retry"
] as const
export const SpanEvent = event("span", {
  name: Schema.Literal(...SPAN_NAMES),
  spanId: Schema.String,
  parentSpanId: Schema.optionalWith(Schema.String, { exact: true }),
  start: Schema.String,
  durationMs: Schema.Number,
  status: Schema.Literal("ok", "error"),
  attributes: Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, Schema.Number, Schema.Boolean) })
})
export const GROUNDING_STATUSES = ["grounded", "ungrounded", "unknown"] as const
export const GroundingStatus = Schema.Literal(...GROUNDING_STATUSES)
export type GroundingStatus = typeof GroundingStatus.Type
/** One checked `path:line` citation of the job's outputs or summary (`file` null = the summary; `at` its line there). */
export const GroundingCitation = Schema.Struct({
  status: GroundingStatus,
  path: Schema.String,
  firstLine: Schema.Number,
  lastLine: Schema.Number,
  file: Schema.NullOr(Schema.String),
  at: Schema.Number
})
export type GroundingCitation = typeof GroundingCitation.Type
/** The grounding check of a finished job (docs/grounding.md), just before its terminal event. */
export const Grounding = event("grounding", {
  grounded: Schema.Number,
  ungrounded: Schema.Number,
  unknown: Schema.Number,
  required: Schema.Boolean,
  citations: Schema.Array(GroundingCitation)
})
export const JobCompleted = event("job.completed", {
  summary: Schema.String,
  /** The final message parsed as JSON, valid against the agent's answer schema (only when the agent declares `answer`). */
  answer: Schema.optionalWith(Schema.Unknown, { exact: true })
})
export const JobFailed = event("job.failed", { reason: FailureReason, message: Schema.String })

export const JobEvent = Schema.Union(
  JobStarted,
  MessageDelta,
  ToolCall,
  ToolResult,
  Output,
  SourceRead,
  UsageEvent,
  SpanEvent,
  Grounding,
  JobCompleted,
  JobFailed
)
export type JobEvent = typeof JobEvent.Type
export type JobEventType = JobEvent["type"]
/** An event before the kernel stamps it with `seq` and `at`. */
export type JobEventBody = JobEvent extends infer E ? (E extends JobEvent ? Omit<E, "seq" | "at"> : never) : never
export type TerminalEvent = typeof JobCompleted.Type | typeof JobFailed.Type

/** The refusal line of the job child (exit 2); not part of the job's event stream. */
export const JobRefusedLine = Schema.Struct({
  type: Schema.Literal("job.refused"),
  problems: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
})
