/** The job contract: what one agent job is given (spec "Job spec"). */
import { Schema } from "effect"
import { AgentDefinition, ThinkingLevel } from "./AgentDefinition.ts"

const NonEmpty = Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }))

const Count = Schema.Number.pipe(
  Schema.filter((n) => (Number.isInteger(n) && n >= 0 ? undefined : `must be a non-negative integer, got ${n}`))
)

const Positive = Schema.Number.pipe(
  Schema.filter((n) => (Number.isInteger(n) && n > 0 ? undefined : `must be a positive integer, got ${n}`))
)

/** What a job's processes may take, each a lowering of the runtime's own setting (absent = that setting). */
export const ResourceLimits = Schema.Struct({
  memoryMb: Schema.optionalWith(Positive, { exact: true }),
  processes: Schema.optionalWith(Positive, { exact: true }),
  cpuSec: Schema.optionalWith(Positive, { exact: true }),
  tmpMb: Schema.optionalWith(Positive, { exact: true }),
  outDirMb: Schema.optionalWith(Positive, { exact: true })
})
export type ResourceLimits = typeof ResourceLimits.Type

export const Limits = Schema.Struct({
  timeoutSec: Schema.Number.pipe(
    Schema.filter((n) => (Number.isFinite(n) && n > 0 ? undefined : `must be a positive number of seconds, got ${n}`))
  ),
  /** Stalled model/tool watchdog; 0 = off. */
  idleTimeoutSec: Schema.optionalWith(
    Schema.Number.pipe(
      Schema.filter((n) => (Number.isFinite(n) && n >= 0 ? undefined : `must be 0 (off) or a positive number of seconds, got ${n}`))
    ),
    { exact: true }
  ),
  maxTurns: Schema.optionalWith(Count, { exact: true }),
  maxCostUsd: Schema.optionalWith(
    Schema.Number.pipe(Schema.filter((n) => (Number.isFinite(n) && n >= 0 ? undefined : `must not be negative, got ${n}`))),
    { exact: true }
  ),
  /** What the job's processes may take; each value can only lower the runtime's own setting, never raise it. */
  resources: Schema.optionalWith(ResourceLimits, { exact: true })
})
export type Limits = typeof Limits.Type

export const Workspace = Schema.Struct({
  root: NonEmpty,
  readOnly: Schema.Array(NonEmpty).pipe(Schema.minItems(1, { message: () => "must name at least one directory" })),
  outDir: NonEmpty
})
export type Workspace = typeof Workspace.Type

/** One MCP server of the job (ARCHITECTURE §5); names are unique within the job. */
export const McpServer = Schema.Struct({
  name: NonEmpty,
  url: NonEmpty,
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true }),
  /** Longest wait for one tool call, in seconds. */
  timeoutSec: Schema.optionalWith(
    Schema.Number.pipe(Schema.filter((n) => (Number.isFinite(n) && n > 0 ? undefined : `must be a positive number of seconds, got ${n}`))),
    { exact: true }
  ),
  /** Tools an administrator allowed by name although the server does not mark them read-only. */
  allowedTools: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  /** The registry's admin choice: the URL may reach private, loopback and link-local addresses. Default false. */
  allowPrivateNetwork: Schema.optionalWith(Schema.Boolean, { exact: true })
})
export type McpServer = typeof McpServer.Type

export const JobModel = Schema.Struct({
  provider: NonEmpty,
  id: NonEmpty,
  thinking: Schema.optionalWith(ThinkingLevel, { exact: true })
})

export const JobMcp = Schema.Struct({ servers: Schema.Array(McpServer) })

/** Opaque correlation data, echoed on job.started, never shown to the agent. */
export const JobMetadata = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const JobTask = NonEmpty

const Sha256 = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "must be a SHA-256 in lower-case hex" }))

/** One message of a conversation as the model's API took it (pi-ai's shape: a role and its fields, kept whole). */
export const HistoryMessage = Schema.Struct(
  { role: Schema.Literal("user", "assistant", "toolResult") },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/**
 * The conversation a job starts from (a continued job: its parent's transcript replayed), and the
 * prompt it belongs to: the SHA-256 of the system prompt and of the tool definitions as sent, as a
 * transcript turn records them. A job whose own prompt hashes differently is refused.
 */
export const JobHistory = Schema.Struct({
  instructionsHash: Sha256,
  toolsHash: Sha256,
  messages: Schema.Array(HistoryMessage).pipe(Schema.minItems(1, { message: () => "must hold at least one message" }))
})
export type JobHistory = typeof JobHistory.Type

const Amount = Schema.Number.pipe(
  Schema.filter((n) => (Number.isFinite(n) && n >= 0 ? undefined : `must be a non-negative number, got ${n}`))
)

/**
 * A job resumed after its worker was lost (ARCHITECTURE §10): it goes on from its transcript (`history`,
 * the task among its messages) instead of starting over. What the earlier runs did counts: their turns,
 * tokens and cost against the limits, their time against timeoutSec, their outputs and reads in the
 * output contract and the grounding check; its events continue the job's `seq`.
 */
export const JobResume = Schema.Struct({
  /** Which resume this is: 1, 2, … */
  resume: Positive,
  /** The `seq` of the resumed run's first event (the earlier runs stored the ones before it). */
  nextSeq: Count,
  /** The last transcript turn the model answered, and how many of `history.messages` make up the conversation it left. */
  turn: Count,
  answeredMessages: Count,
  /** What the earlier runs spent, as their last `usage` event totals it, and the time since the job first started. */
  spent: Schema.Struct({
    turns: Count,
    inputTokens: Count,
    outputTokens: Count,
    cacheReadTokens: Count,
    cacheWriteTokens: Count,
    costUsd: Amount,
    compactions: Count,
    compactionSummaries: Count,
    contextPeakPercent: Amount,
    elapsedMs: Amount
  }),
  /** The output paths the earlier runs reported (their `output` events, relative to outDir). */
  outputs: Schema.Array(Schema.String),
  /** The line ranges the earlier runs showed the model (their `source.read` events). */
  shown: Schema.Array(Schema.Struct({ path: Schema.String, firstLine: Count, lastLine: Schema.NullOr(Count) }))
})
export type JobResume = typeof JobResume.Type

export const JobSpec = Schema.Struct({
  agent: AgentDefinition,
  task: JobTask,
  model: JobModel,
  workspace: Workspace,
  limits: Limits,
  mcp: Schema.optionalWith(JobMcp, { exact: true }),
  metadata: Schema.optionalWith(JobMetadata, { exact: true }),
  /** The conversation to start from; the task follows it as the next user message. */
  history: Schema.optionalWith(JobHistory, { exact: true }),
  /** Set on a resumed job: it goes on from `history` (which then ends where its last run stopped) without the task again. */
  resume: Schema.optionalWith(JobResume, { exact: true })
})
export type JobSpec = typeof JobSpec.Type
