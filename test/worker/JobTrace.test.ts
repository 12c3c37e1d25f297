/**
 * The job child's span events as server spans: attribute names (GenAI conventions), what is dropped
 * (strings that are not names, tools the job could not hold), and the tree (orphans and cycles hang
 * from the worker's span).
 */
import { describe, expect, test } from "bun:test"
import { Effect, Option, Tracer } from "effect"
import type { SpanEvent } from "../../src/contract/JobEvent.ts"
import { exportKernelSpans, spanAttributes, toolNameCheck } from "../../src/worker/JobTrace.ts"

type Span = typeof SpanEvent.Type
const span = (over: Partial<Span> & Pick<Span, "name" | "spanId">): Span => ({
  type: "span",
  seq: 0,
  at: "2026-12-01T00:00:00.000Z",
  start: "2026-12-01T00:00:00.000Z",
  durationMs: 5,
  status: "ok",
  attributes: {},
  ...over
})

describe("spanAttributes", () => {
  const known = toolNameCheck(["read", "mcp__docs__*"])
  test("the job span: GenAI names for agent, provider and model", () => {
    const a = spanAttributes(
      span({
        name: "kintsugi.job",
        spanId: "j",
        attributes: { agentId: "inventory", model: "gw/claude-x", "thinking.clamped": false, reason: "budget" }
      }),
      known
    )
    expect(a).toEqual({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "inventory",
      "gen_ai.provider.name": "gw",
      "gen_ai.request.model": "claude-x",
      "kintsugi.thinking.clamped": false,
      "error.type": "budget"
    })
  })

  test("a tool the job could hold is named; anything else the model asked for is not repeated", () => {
    expect(spanAttributes(span({ name: "kintsugi.tool", spanId: "t", attributes: { tool: "read", allowed: true } }), known)).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "read",
      "kintsugi.tool.allowed": true
    })
    expect(
      spanAttributes(span({ name: "kintsugi.tool", spanId: "t", attributes: { tool: "mcp__docs__search" } }), known)["gen_ai.tool.name"]
    ).toBe("mcp__docs__search")
    for (const tool of ["exfiltrate_the_task", "mcp__other__x", "shell"]) {
      const expected = tool === "shell" ? "shell" : "(unknown)"
      expect(spanAttributes(span({ name: "kintsugi.tool", spanId: "t", attributes: { tool } }), known)["gen_ai.tool.name"]).toBe(expected)
    }
  })

  test("strings under other keys, or that are not names, are dropped; numbers and flags pass", () => {
    const a = spanAttributes(
      span({
        name: "kintsugi.turn",
        spanId: "u",
        attributes: { turn: 2, summary: "the file says hello", cause: "has spaces in it", toolCalls: 1, nan: Number.NaN }
      }),
      known
    )
    expect(a).toEqual({ "gen_ai.operation.name": "chat", "kintsugi.turn.number": 2, "kintsugi.turn.tool_calls": 1 })
  })
})

describe("exportKernelSpans", () => {
  /** A tracer that records what it is asked to make. */
  const recording = () => {
    const made: Array<{
      name: string
      parent: string
      id: string
      attributes: Map<string, unknown>
      start: bigint
      end?: bigint
      ok?: boolean
    }> = []
    let n = 0
    const tracer = Tracer.make({
      span: (name, parent, _context, _links, startTime) => {
        const record = {
          name,
          parent: Option.match(parent, { onNone: () => "", onSome: (p) => p.spanId }),
          id: `s${n++}`,
          attributes: new Map<string, unknown>(),
          start: startTime
        }
        made.push(record)
        return {
          _tag: "Span",
          name,
          spanId: record.id,
          traceId: "t",
          parent,
          context: _context,
          status: { _tag: "Started", startTime },
          attributes: record.attributes,
          links: [],
          sampled: true,
          kind: "internal",
          end: (endTime, exit) => Object.assign(record, { end: endTime, ok: exit._tag === "Success" }),
          attribute: (k, v) => void record.attributes.set(k, v),
          event: () => undefined,
          addLinks: () => undefined
        }
      },
      context: (f) => f()
    })
    return { made, tracer }
  }
  const root = Tracer.externalSpan({ traceId: "t", spanId: "worker" })

  test("children arrive before their parents (as the child emits them); the tree and times are kept", async () => {
    const { made, tracer } = recording()
    const events = [
      span({
        name: "kintsugi.tool",
        spanId: "k-3",
        parentSpanId: "k-2",
        start: "2026-12-01T00:00:01.000Z",
        durationMs: 2.5,
        status: "error"
      }),
      span({ name: "kintsugi.turn", spanId: "k-2", parentSpanId: "k-1", start: "2026-12-01T00:00:00.500Z", durationMs: 900 }),
      span({ name: "kintsugi.job", spanId: "k-1", start: "2026-12-01T00:00:00.000Z", durationMs: 1500 })
    ]
    await Effect.runPromise(
      Effect.withTracer(
        exportKernelSpans(events, root, () => true),
        tracer
      )
    )
    const byName = new Map(made.map((m) => [m.name, m]))
    expect(byName.get("kintsugi.job")?.parent).toBe("worker")
    expect(byName.get("kintsugi.turn")?.parent).toBe(byName.get("kintsugi.job")?.id)
    expect(byName.get("kintsugi.tool")?.parent).toBe(byName.get("kintsugi.turn")?.id)
    const tool = byName.get("kintsugi.tool")!
    expect(tool.start).toBe(BigInt(Date.parse("2026-12-01T00:00:01.000Z")) * 1_000_000n)
    expect(tool.end! - tool.start).toBe(2_500_000n)
    expect(tool.ok).toBe(false)
    expect(byName.get("kintsugi.job")?.ok).toBe(true)
  })

  test("a missing parent or a cycle hangs from the worker's span; each span is made once", async () => {
    const { made, tracer } = recording()
    const events = [
      span({ name: "kintsugi.turn", spanId: "a", parentSpanId: "b" }),
      span({ name: "kintsugi.turn", spanId: "b", parentSpanId: "a" }),
      span({ name: "kintsugi.tool", spanId: "c", parentSpanId: "gone" })
    ]
    await Effect.runPromise(
      Effect.withTracer(
        exportKernelSpans(events, root, () => true),
        tracer
      )
    )
    expect(made.length).toBe(3)
    expect(made.every((m) => m.end !== undefined)).toBe(true)
    // The cycle is cut once: one of a, b hangs from the worker's span, the other from it.
    const turns = made.filter((m) => m.name === "kintsugi.turn")
    expect(turns.filter((t) => t.parent === "worker").length).toBe(1)
    expect(turns.filter((t) => t.parent !== "worker")[0]?.parent).toBe(turns.find((t) => t.parent === "worker")?.id)
    expect(made.find((m) => m.name === "kintsugi.tool")?.parent).toBe("worker")
  })
})
