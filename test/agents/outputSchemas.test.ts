/**
 * Output contracts with JSON Schemas in the package: `outputs:` entries may name a
 * `schemas/<name>.json`; the package check refuses a missing or unusable schema with a plain problem;
 * the schema is part of the package (serialized, zipped, stored) and reaches the job definition whole,
 * never as a skill.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { parseAgentPackage, serializeAgentPackage } from "../../src/agents/AgentPackage.ts"
import { adaptAgentFiles } from "../../src/agents/interop.ts"
import { toAgentDefinition, validateAgent } from "../../src/agents/validateAgent.ts"
import { readZip, writeZip } from "../../src/agents/zip.ts"
import { AgentDefinition } from "../../src/contract/AgentDefinition.ts"
import { decodeAll } from "../../src/contract/Problem.ts"

const md = (outputs: string) => `---
name: finder
version: 1
description: Finds things.
outputs: ${outputs}
---
Write findings.json.
`

const SCHEMA = JSON.stringify({
  type: "object",
  required: ["findings"],
  properties: {
    findings: {
      type: "array",
      items: { type: "object", required: ["path", "line"], properties: { path: { type: "string" }, line: { type: "integer" } } }
    }
  }
})

const problemsOf = (files: ReadonlyArray<{ path: string; content: string }>): Array<string> => {
  const parsed = parseAgentPackage(files)
  return Either.isLeft(parsed) ? parsed.left.map((p) => `${p.path}: ${p.message}`) : []
}

describe("outputs with a schema: the package", () => {
  const files = [
    { path: "finder.md", content: md("[report.md, { file: findings.json, schema: schemas/findings.schema.json }]") },
    { path: "schemas/findings.schema.json", content: SCHEMA }
  ]

  test("parses; the schema file is a package file, not a skill; the definition carries the schema text", () => {
    const parsed = parseAgentPackage(files)
    if (Either.isLeft(parsed)) throw new Error(JSON.stringify(parsed.left))
    expect(parsed.right.outputs).toEqual(["report.md", { file: "findings.json", schema: "schemas/findings.schema.json" }])
    expect(parsed.right.files).toEqual([{ path: "schemas/findings.schema.json", content: SCHEMA }])
    expect(validateAgent(parsed.right, { sharedSkills: new Set() })).toEqual([])
    const definition = toAgentDefinition(parsed.right, { version: 4, sharedSkills: new Map() })
    expect(definition.outputs).toEqual(["report.md", { file: "findings.json", schema: "schemas/findings.schema.json", schemaText: SCHEMA }])
    expect(definition.skills).toBeUndefined()
    expect(Either.isRight(decodeAll(AgentDefinition)(definition))).toBe(true)
  })

  test("round trip: serialize and ZIP export/import give the same package (the schema is part of the version)", async () => {
    const parsed = parseAgentPackage(files)
    const written = serializeAgentPackage(Either.getOrThrow(parsed))
    expect(written.map((f) => f.path)).toEqual(["finder.md", "schemas/findings.schema.json"])
    expect(parseAgentPackage(written)).toEqual(parsed)
    const unzipped = await Effect.runPromise(readZip(writeZip(written)))
    expect(parseAgentPackage(unzipped.map((e) => ({ path: e.path, content: e.content })))).toEqual(parsed)
  })

  test("import keeps outputs, grounding and gate as contract keys (never moved into metadata as foreign keys)", () => {
    const adapted = adaptAgentFiles([
      {
        path: "finder.md",
        content: md(
          "[report.md, { file: findings.json, schema: schemas/findings.schema.json }]\ngrounding: required\ngate: evals\ncolor: blue"
        )
      },
      files[1]!
    ])
    const parsed = Either.getOrThrow(parseAgentPackage(adapted.files))
    expect(parsed.outputs).toEqual(["report.md", { file: "findings.json", schema: "schemas/findings.schema.json" }])
    expect(parsed.grounding).toBe("required")
    expect(parsed.gate).toBe("evals")
    expect(parsed.metadata).toEqual({ color: "blue" })
    expect(adapted.notes.filter((n) => n.includes("outputs") || n.includes("grounding") || n.includes("gate"))).toEqual([])
  })

  test("a missing schema file, a broken one, an invalid JSON Schema, a schema on a .md file and bad places: every problem at once", () => {
    const problems = problemsOf([
      {
        path: "finder.md",
        content: md(
          "[{ file: report.md, schema: schemas/ok.json }, { file: a.json, schema: schemas/missing.json }, { file: b.json, schema: commands/x.json }, { file: c.json }, report.md]"
        )
      },
      { path: "schemas/ok.json", content: SCHEMA },
      { path: "schemas/broken.json", content: "{ not json" },
      { path: "schemas/typo.json", content: '{ "type": "object", "propertiez": {} }' },
      { path: "schemas/badtype.json", content: '{ "type": "strnig" }' },
      { path: "schemas/remote.json", content: '{ "$ref": "https://example.com/schema.json" }' },
      { path: "schemas/backref.json", content: '{ "type": "string", "pattern": "(a)\\\\1" }' },
      { path: "schemas/old.json", content: '{ "$schema": "http://json-schema.org/draft-04/schema#" }' },
      { path: "schemas/notes.txt", content: "x" },
      { path: "schemas/sub/x.json", content: "{}" }
    ])
    expect(problems).toContain("finder.md#outputs.0.file: a schema applies to a .json file only")
    expect(problems).toContain("finder.md#outputs.1.schema: schemas/missing.json is not in the package")
    expect(problems).toContain('finder.md#outputs.2.schema: must be a schemas/<name>.json file of the package, not "commands/x.json"')
    expect(problems).toContain("finder.md#outputs.3: must be a file name, or { file: <name>.json, schema: schemas/<name>.json }")
    expect(problems).toContain('finder.md#outputs.4: "report.md" is listed twice')
    expect(problems.find((p) => p.startsWith("schemas/broken.json: not valid JSON"))).toBeDefined()
    expect(problems).toContain('schemas/typo.json: not a valid JSON Schema: strict mode: unknown keyword: "propertiez"')
    expect(problems.find((p) => p.startsWith("schemas/badtype.json: not a valid JSON Schema"))).toBeDefined()
    expect(problems).toContain(
      "schemas/remote.json: not a valid JSON Schema: can't resolve reference https://example.com/schema.json from id #"
    )
    expect(problems.find((p) => p.startsWith("schemas/backref.json: not a valid JSON Schema") && p.includes("\\1"))).toBeDefined()
    expect(problems.find((p) => p.startsWith("schemas/old.json: $schema must be draft-07"))).toBeDefined()
    expect(problems).toContain("schemas/notes.txt: schemas must be .json files")
    expect(problems).toContain("schemas/sub/x.json: schemas/ holds files directly, no sub-folders")
    expect(problems.some((p) => p.startsWith("schemas/ok.json"))).toBe(false)
  })

  test("a schema over 64 KiB is refused", () => {
    const big = JSON.stringify({ type: "object", description: "x".repeat(70 * 1024) })
    expect(
      problemsOf([
        { path: "finder.md", content: md("[{ file: a.json, schema: schemas/big.json }]") },
        { path: "schemas/big.json", content: big }
      ])
    ).toContain("schemas/big.json: a schema is at most 64 KiB")
  })

  test("an output name that leaves the output directory is a problem", () => {
    expect(problemsOf([{ path: "finder.md", content: md('["../escape.json"]') }])).toContain(
      "finder.md#outputs.0: must be a file name in the output directory: `..` segments are not allowed"
    )
  })
})
