/**
 * The job child's spans in the server's trace: each `span` event becomes a span under the worker's job
 * span (same trace, ids re-issued, times from the event), with GenAI semantic-convention names where
 * they fit. Only names, counts and flags pass: a string the kernel did not promise to be a name is dropped.
 */
import { Context, Effect, Exit, Option, type Tracer } from "effect"
import { KERNEL_TOOLS, MCP_GRANT, SERVICE_TOOLS } from "../contract/AgentDefinition.ts"
import type { SpanEvent } from "../contract/JobEvent.ts"

type SpanEventType = typeof SpanEvent.Type
type Attributes = Record<string, string | number | boolean>

/** Kernel attribute → exported name (GenAI conventions first, else `kintsugi.*`). */
const RENAMED: Readonly<Record<string, string>> = {
  agentId: "gen_ai.agent.name",
  provider: "gen_ai.provider.name",
  reason: "error.type",
  statusCode: "http.response.status_code",
  turn: "kintsugi.turn.number",
  toolCalls: "kintsugi.turn.tool_calls",
  contextOverflow: "kintsugi.turn.context_overflow",
  allowed: "kintsugi.tool.allowed",
  success: "kintsugi.tool.success",
  attempt: "kintsugi.retry.attempt",
  waitMs: "kintsugi.retry.wait_ms",
  cause: "kintsugi.retry.cause",
  serverRequested: "kintsugi.retry.server_requested",
  trigger: "kintsugi.compaction.trigger",
  turnsSummarised: "kintsugi.compaction.turns_summarised",
  toolResultsDropped: "kintsugi.compaction.tool_results_dropped",
  tokensBefore: "kintsugi.compaction.tokens_before",
  tokensAfter: "kintsugi.compaction.tokens_after"
}

/** Kernel attributes whose string values are names from configuration or a fixed set, never content. */
const NAME_KEYS = new Set([
  "agentId",
  "provider",
  "model",
  "tool",
  "cause",
  "trigger",
  "reason",
  "thinking.requested",
  "thinking.effective"
])
const NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$/

const OPERATION: Partial<Record<SpanEventType["name"], string>> = {
  "kintsugi.job": "invoke_agent",
  "kintsugi.turn": "chat",
  "kintsugi.tool": "execute_tool"
}

/**
 * Whether `name` is a tool the job could hold: a kernel tool, or an MCP tool of a server its agent is
 * granted (`grants` = the agent's tool list). Anything else a model asked for is not repeated.
 */
export const toolNameCheck = (grants: ReadonlyArray<string>) => {
  const servers = new Set(
    grants.flatMap((g) => {
      const m = MCP_GRANT.exec(g)
      return m?.[1] === undefined ? [] : [m[1]]
    })
  )
  return (name: string): boolean => {
    if ((KERNEL_TOOLS as ReadonlyArray<string>).includes(name)) return true
    if (SERVICE_TOOLS.includes(name) && grants.includes(name)) return true
    const m = MCP_GRANT.exec(name)
    return m?.[1] !== undefined && servers.has(m[1]) && NAME.test(name)
  }
}

/** The exported attributes of one kernel span. */
export const spanAttributes = (event: SpanEventType, knownTool: (name: string) => boolean): Attributes => {
  const out: Attributes = {}
  const operation = OPERATION[event.name]
  if (operation !== undefined) out["gen_ai.operation.name"] = operation
  for (const [key, value] of Object.entries(event.attributes)) {
    if (typeof value === "string") {
      if (!NAME_KEYS.has(key) || !NAME.test(value)) continue
      if (key === "tool") {
        out["gen_ai.tool.name"] = knownTool(value) ? value : "(unknown)"
      } else if (key === "model") {
        // The job span names `provider/model`; the retry span the model alone (its provider beside it).
        const slash = value.indexOf("/")
        if (event.name === "kintsugi.job" && slash > 0) out["gen_ai.provider.name"] = value.slice(0, slash)
        out["gen_ai.request.model"] = event.name === "kintsugi.job" && slash > 0 ? value.slice(slash + 1) : value
      } else out[RENAMED[key] ?? `kintsugi.${key}`] = value
    } else if (typeof value === "number" ? Number.isFinite(value) : typeof value === "boolean") {
      out[RENAMED[key] ?? `kintsugi.${key}`] = value
    }
  }
  return out
}

/** The failure recorded on a kernel span that ended in error: a fixed message, no stack. */
class KernelSpanError extends Error {
  constructor() {
    super("the span ended in error")
    this.name = "KernelSpanError"
    this.stack = `${this.name}: ${this.message}`
  }
}

const nanos = (iso: string): bigint | undefined => {
  const ms = Date.parse(iso)
  return Number.isFinite(ms) ? BigInt(ms) * 1_000_000n : undefined
}

/**
 * Exports `events` (the job child's span events, in any order) as spans under `parent`. A span whose
 * parent is missing or forms a cycle hangs from `parent` itself. Never fails.
 */
export const exportKernelSpans = (
  events: ReadonlyArray<SpanEventType>,
  parent: Tracer.AnySpan,
  knownTool: (name: string) => boolean
): Effect.Effect<void> =>
  Effect.flatMap(Effect.tracer, (tracer) =>
    Effect.sync(() => {
      const byId = new Map(events.map((e) => [e.spanId, e]))
      const made = new Map<string, Tracer.Span>()
      const visiting = new Set<string>()
      const make = (e: SpanEventType): Tracer.Span | undefined => {
        const existing = made.get(e.spanId)
        if (existing !== undefined) return existing
        const start = nanos(e.start)
        if (start === undefined || visiting.has(e.spanId)) return undefined
        visiting.add(e.spanId)
        const up = e.parentSpanId === undefined ? undefined : byId.get(e.parentSpanId)
        const parentSpan = (up === undefined ? undefined : make(up)) ?? parent
        visiting.delete(e.spanId)
        const span = tracer.span(e.name, Option.some(parentSpan), Context.empty(), [], start, "internal")
        for (const [k, v] of Object.entries(spanAttributes(e, knownTool))) span.attribute(k, v)
        made.set(e.spanId, span)
        return span
      }
      for (const e of events) make(e)
      for (const e of events) {
        const span = made.get(e.spanId)
        const start = nanos(e.start)
        if (span === undefined || start === undefined) continue
        const end = start + BigInt(Math.max(0, Math.round(e.durationMs * 1e6)))
        span.end(end, e.status === "ok" ? Exit.void : Exit.fail(new KernelSpanError()))
      }
    })
  )
