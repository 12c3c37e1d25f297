/** The output-contract front-matter keys: `grounding: required` and `outputs:` parse, reach the definition, survive serialization, and bad values are problems. */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { parseAgentPackage } from "../../src/agents/AgentPackage.ts"
import { serializeAgentPackage } from "../../src/agents/serializePackage.ts"
import { toAgentDefinition } from "../../src/agents/validateAgent.ts"

const md = (extra: string) => `---
name: mini
version: 1
description: d
${extra}---
Do it.
`

describe("grounding and outputs in front matter", () => {
  test("parsed, in the job's definition, and round-tripped by serialization", () => {
    const parsed = parseAgentPackage([{ path: "mini.md", content: md("grounding: required\noutputs: [report.md, data/report.json]\n") }])
    if (Either.isLeft(parsed)) throw new Error(JSON.stringify(parsed.left))
    expect(parsed.right).toMatchObject({ grounding: "required", outputs: ["report.md", "data/report.json"] })
    expect(toAgentDefinition(parsed.right, { version: 1, sharedSkills: new Map() })).toMatchObject({
      grounding: "required",
      outputs: ["report.md", "data/report.json"]
    })
    const again = parseAgentPackage(serializeAgentPackage(parsed.right).map((f) => ({ path: f.path, content: f.content })))
    expect(again).toEqual(parsed)
  })

  test("a bad grounding value and an empty output name are problems, all at once", () => {
    const parsed = parseAgentPackage([{ path: "mini.md", content: md('grounding: maybe\noutputs: [""]\n') }])
    expect(Either.isLeft(parsed)).toBe(true)
    const paths = Either.isLeft(parsed) ? parsed.left.map((p) => `${p.path}: ${p.message}`) : []
    expect(paths).toContain("mini.md#grounding: must be required (or left out)")
    expect(paths.some((p) => p.startsWith("mini.md#outputs.0"))).toBe(true)
  })
})
