/**
 * Output contracts with a JSON Schema: the kernel checks findings.json against the
 * schema the job definition carries, names each violation by its JSON pointer, gives the model one
 * chance to fix it, and fails the job when it does not. Real job child, scripted model. The schema
 * engine's guards: no remote `$ref` is ever fetched, patterns run without backtracking.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Either } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { compileJsonSchema } from "../../src/kernel/jsonSchema.ts"
import { expectEndedWith, runAgent, startOpenAIServer, type ScriptedServer, type Step } from "kintsugi-runtime/testing"

setDefaultTimeout(60_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const AGENT = `---
name: finder
version: 1
description: Writes findings.json.
tools: [read, write]
outputs:
  - { file: findings.json, schema: schemas/findings.schema.json }
---
Write findings.json.
`

const SCHEMA = JSON.stringify({
  type: "object",
  required: ["findings"],
  additionalProperties: false,
  properties: {
    findings: {
      type: "array",
      items: {
        type: "object",
        required: ["path", "line", "severity"],
        properties: { path: { type: "string" }, line: { type: "integer", minimum: 1 }, severity: { enum: ["low", "medium", "high"] } }
      }
    }
  }
})

const VIOLATING = JSON.stringify({ findings: [{ path: "a.ts", line: "3" }], extra: true })
const VALID = JSON.stringify({ findings: [{ path: "a.ts", line: 1, severity: "low" }] })

const agentDir = (): string => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-schema-")))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, "finder.md"), AGENT)
  mkdirSync(join(dir, "schemas"))
  writeFileSync(join(dir, "schemas", "findings.schema.json"), SCHEMA)
  return dir
}

const serve = async (steps: ReadonlyArray<Step>): Promise<ScriptedServer> => {
  const server = await startOpenAIServer(steps)
  cleanups.push(() => server.stop())
  return server
}

const write = (content: string): Step => ({ kind: "turn", toolCalls: [{ name: "write", arguments: { path: "findings.json", content } }] })

/** In the order the validator finds them. */
const PROBLEMS = [
  "findings.json at /extra: is not allowed (additional property) (schemas/findings.schema.json)",
  "findings.json at /findings/0/severity: is required (schemas/findings.schema.json)",
  "findings.json at /findings/0/line: must be integer (schemas/findings.schema.json)"
]

describe("output contracts with a JSON Schema", () => {
  test("a violating findings.json fixed in the second try completes; the nudge named each pointer", async () => {
    const server = await serve([write(VIOLATING), { kind: "turn", text: "done" }, write(VALID), { kind: "turn", text: "fixed" }])
    const run = await runAgent({ agent: agentDir(), server, task: "Find.", fixture: { "a.ts": "x\n" } })
    expect(expectEndedWith(run, "completed")).toMatchObject({ summary: "fixed" })
    // The schema reached the kernel whole, through the job definition.
    expect(run.job.agent.outputs).toEqual([{ file: "findings.json", schema: "schemas/findings.schema.json", schemaText: SCHEMA }])
    const nudge = JSON.parse(server.requests[2]?.rawBody ?? "{}") as { messages: Array<{ role: string; content: unknown }> }
    const last = nudge.messages.at(-1)
    expect(last?.role).toBe("user")
    for (const p of PROBLEMS) expect(String(last?.content)).toContain(p)
    expect(run.outputs["findings.json"]).toBe(VALID)
    expect(server.requests.length).toBe(4)
  })

  test("not fixed: failed/error naming every pointer and message", async () => {
    const server = await serve([
      write(VIOLATING),
      { kind: "turn", text: "done" },
      { kind: "turn", text: "still done" },
      { kind: "turn", text: "never asked" }
    ])
    const run = await runAgent({ agent: agentDir(), server, task: "Find.", fixture: { "a.ts": "x\n" } })
    const failed = expectEndedWith(run, "error")
    const message = failed.type === "job.failed" ? failed.message : ""
    expect(message).toBe(`the outputs violate the agent's contract: ${PROBLEMS.join("; ")}`)
    expect(server.requests.length).toBe(3)
  })

  test("valid at once: completed with no extra turn", async () => {
    const server = await serve([write(VALID), { kind: "turn", text: "done" }])
    const run = await runAgent({ agent: agentDir(), server, task: "Find.", fixture: { "a.ts": "x\n" } })
    expectEndedWith(run, "completed")
    expect(server.requests.length).toBe(2)
  })
})

test("the job child loads the schema engine (ajv) only when a job's contract has a schema", async () => {
  const script = `
    const ajvModules = () => Object.keys(require.cache).filter((k) => k.includes("/node_modules/ajv/")).length
    await import(${JSON.stringify(join(import.meta.dir, "..", "..", "src", "jobChild", "main.ts"))})
    const before = ajvModules()
    await import(${JSON.stringify(join(import.meta.dir, "..", "..", "src", "kernel", "jsonSchema.ts"))})
    console.log(JSON.stringify({ before, after: ajvModules() }))`
  const child = Bun.spawn([process.execPath, "-e", script], {
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }
  })
  const out = await new Response(child.stdout).text()
  expect(await child.exited).toBe(0)
  const counts = JSON.parse(out.trim().split("\n").at(-1) ?? "{}") as { before: number; after: number }
  expect(counts.before).toBe(0)
  expect(counts.after).toBeGreaterThan(0)
})

describe("the schema engine's guards", () => {
  test("a remote $ref is a compile problem and is never fetched", async () => {
    let fetched = 0
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => (fetched++, Response.json({ type: "string" })) })
    cleanups.push(() => server.stop(true))
    // Any fetch the engine starts goes through the global fetch: counted while it compiles and until
    // one request of the test's own has been answered.
    const realFetch = globalThis.fetch
    let fetchCalls = 0
    globalThis.fetch = Object.assign((...args: Parameters<typeof fetch>) => (fetchCalls++, realFetch(...args)), realFetch)
    try {
      const compiled = compileJsonSchema(JSON.stringify({ $ref: `http://127.0.0.1:${server.port}/s.json` }))
      expect(Either.isLeft(compiled) ? compiled.left : "compiled").toContain("can't resolve reference")
      await (await realFetch(`http://127.0.0.1:${server.port}/own`)).text()
    } finally {
      globalThis.fetch = realFetch
    }
    expect(fetchCalls).toBe(0)
    expect(fetched).toBe(1)
  })

  test("a pattern that backtracks catastrophically in JavaScript runs in linear time on a hostile value", () => {
    const compiled = Either.getOrThrow(compileJsonSchema(JSON.stringify({ type: "string", pattern: "^(a+)+$" })))
    // With the JavaScript engine this would take about 2^60 steps; re2js answers at once.
    expect(compiled(`${"a".repeat(60)}!`)).toEqual([{ pointer: "", message: 'must match pattern "^(a+)+$"' }])
    expect(compiled("a".repeat(60))).toEqual([])
  })

  test("uniqueItems compares JSON values (key order ignored) and names both items", () => {
    const compiled = Either.getOrThrow(compileJsonSchema(JSON.stringify({ type: "array", uniqueItems: true })))
    expect(compiled([{ a: 1, b: [1, 2] }, { c: 1 }, { b: [1, 2], a: 1 }])).toEqual([
      { pointer: "", message: "must NOT have duplicate items (items 0 and 2 are identical)" }
    ])
    expect(compiled([{ a: 1 }, { a: 2 }, [1], ["1"]])).toEqual([])
  })

  test("a hostile document nested too deeply is a problem, not a crash; hostile keys are shown escaped and cut", () => {
    const recursive = Either.getOrThrow(
      compileJsonSchema(JSON.stringify({ $defs: { n: { type: "array", items: { $ref: "#/$defs/n" } } }, $ref: "#/$defs/n" }))
    )
    let deep: unknown = []
    for (let i = 0; i < 200_000; i++) deep = [deep]
    expect(recursive(deep)).toEqual([{ pointer: "", message: "could not be checked against the schema (nested too deeply)" }])
    const closed = Either.getOrThrow(compileJsonSchema(JSON.stringify({ type: "object", additionalProperties: false })))
    const [v] = closed({ [`a\nb${"x".repeat(500)}`]: 1 })
    expect(v?.pointer.startsWith("/a\\u000ab")).toBe(true)
    expect(v?.pointer.length).toBeLessThanOrEqual(201)
  })
})
