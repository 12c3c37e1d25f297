import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Schema } from "effect"
import { defineTool } from "../../src/tools/Tool.ts"
import { createToolContext } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const { ctx } = createToolContext({ root: "/nonexistent", readOnly: ["/nonexistent"], outDir: "/nonexistent/out" })

const tool = defineTool({
  name: "demo",
  description: "demo",
  params: Schema.Struct({
    title: Schema.String.annotations({ description: "a field called title" }),
    count: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 5)), { exact: true })
  }),
  execute: (a) => Effect.succeed({ text: `${a.title}:${a.count ?? 0}` })
})

describe("defineTool", () => {
  test("the JSON Schema is provider-safe: object root, $ref inlined, no $schema or titles, field names kept", () => {
    expect(tool.parameters).toEqual({
      type: "object",
      required: ["title"],
      properties: {
        title: { type: "string", description: "a field called title" },
        count: { type: "integer", description: "a number between 1 and 5", minimum: 1, maximum: 5 }
      },
      additionalProperties: false
    })
  })

  test("invalid arguments come back as one ToolError listing every problem with its path", async () => {
    const r = await Effect.runPromise(Effect.either(Effect.provide(tool.execute({ title: 3, count: 9, extra: true }), ctx)))
    expect(r._tag).toBe("Left")
    const message = r._tag === "Left" ? r.left.message : ""
    expect(message).toContain('Invalid arguments for tool "demo"')
    expect(message).toContain("- title: Expected string, actual 3")
    expect(message).toContain("- count:")
    expect(message).toContain("- extra: is unexpected")
    expect(message).not.toContain("Expected undefined")
  })

  test("valid arguments reach execute decoded", async () => {
    expect(await Effect.runPromise(Effect.provide(tool.execute({ title: "t", count: 2 }), ctx))).toEqual({ text: "t:2" })
  })
})
