/**
 * One tool call through `runToolCall` with the per-job services: the `kintsugi.tool` span carries
 * the call's outcome. Events are copied as they are delivered, as a job child writes them out.
 */
import { describe, expect, test } from "bun:test"
import type { ToolCall } from "@earendil-works/pi-ai"
import { Effect, Schema } from "effect"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import * as JobServices from "../../src/job/JobServices.ts"
import { runToolCall } from "../../src/kernel/toolCall.ts"
import { defineTool, ToolError } from "../../src/tools/Tool.ts"

const echo = defineTool({
  name: "echo",
  description: "Echoes, or fails on request.",
  params: Schema.Struct({ text: Schema.String, fail: Schema.optionalWith(Schema.Boolean, { exact: true }) }),
  execute: (a) => (a.fail === true ? Effect.fail(new ToolError({ message: `failed: ${a.text}` })) : Effect.succeed({ text: a.text }))
})
const toolbox = { tools: new Map([[echo.name, echo]]), deny: () => ({ blocked: false }) as const }

/** The `kintsugi.tool` span of each call, as delivered. */
const spansOf = async (calls: ReadonlyArray<ToolCall>) => {
  const events: Array<JobEvent> = []
  // A copy at delivery: whatever changes after the event went out must not count.
  const layer = JobServices.layerTest(
    { root: "/nonexistent", readOnly: ["/nonexistent"], outDir: "/nonexistent/out" },
    { jobId: "00000000-toolcall", deliver: (e) => void events.push(structuredClone(e)) }
  )
  await Effect.runPromise(Effect.forEach(calls, (c) => runToolCall(c, toolbox)).pipe(Effect.provide(layer)))
  return events.flatMap((e) => (e.type === "span" && e.name === "kintsugi.tool" ? [e] : []))
}

const call = (id: string, name: string, args: Record<string, unknown>, argumentsError?: string): ToolCall => ({
  type: "toolCall",
  id,
  name,
  arguments: args as ToolCall["arguments"],
  ...(argumentsError === undefined ? {} : { argumentsError })
})

describe("runToolCall", () => {
  test("the kintsugi.tool span says whether the call succeeded (set before the span is emitted)", async () => {
    const spans = await spansOf([
      call("1", "echo", { text: "hi" }),
      call("2", "echo", { text: "no", fail: true }),
      call("3", "shell", { command: "ls" }),
      call("4", "echo", {}, "not JSON")
    ])
    expect(spans.map((s) => [s.status, s.attributes])).toEqual([
      ["ok", { tool: "echo", allowed: true, success: true }],
      ["ok", { tool: "echo", allowed: true, success: false }],
      ["ok", { tool: "shell", allowed: false, success: false }],
      ["ok", { tool: "echo", allowed: true, success: false }]
    ])
  })
})
