/**
 * The typed answer (`answer: { schema }`): the final message must be JSON valid against the agent's
 * schema (alone, or in a ```json block ending the message); one nudge naming each violation, shared
 * with the output contract; a second violation fails the job. `job.completed` carries the parsed
 * answer. The package checks refuse a missing or unusable answer schema, naming its path. Real job
 * child, scripted model.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Either } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseAgentPackage, serializeAgentPackage } from "../../src/agents/AgentPackage.ts"
import { agentsValidate } from "../../src/agents/validateCommand.ts"
import { toAgentDefinition } from "../../src/agents/validateAgent.ts"
import { readTypedAnswer } from "../../src/kernel/answer.ts"
import { expectEndedWith, runAgent, startOpenAIServer, type ScriptedServer, type Step } from "kintsugi-runtime/testing"

setDefaultTimeout(60_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const agentMd = (extra: string) => `---
name: counter
version: 1
description: Counts files.
tools: [read, write]
${extra}---
Count the files.
`
const WITH_ANSWER = agentMd("answer: { schema: schemas/answer.schema.json }\n")
const WITH_BOTH = agentMd("outputs:\n  - report.md\nanswer: { schema: schemas/answer.schema.json }\n")

const SCHEMA = JSON.stringify({
  type: "object",
  required: ["files", "verdict"],
  additionalProperties: false,
  properties: { files: { type: "integer", minimum: 0 }, verdict: { enum: ["ok", "risky"] } }
})
const VALID = { files: 2, verdict: "ok" }
/** Every violation the validator names for `{ files: "2", extra: true }`, in its order. */
const PROBLEMS = [
  "answer at /verdict: is required (schemas/answer.schema.json)",
  "answer at /extra: is not allowed (additional property) (schemas/answer.schema.json)",
  "answer at /files: must be integer (schemas/answer.schema.json)"
]
const VIOLATING = JSON.stringify({ files: "2", extra: true })

/** An agent folder: `md` and, unless `schema` is null, schemas/answer.schema.json. */
const createAgentDir = (md: string, schema: string | null = SCHEMA): string => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-answer-")))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, "counter.md"), md)
  if (schema !== null) {
    mkdirSync(join(dir, "schemas"))
    writeFileSync(join(dir, "schemas", "answer.schema.json"), schema)
  }
  return dir
}

const serve = async (steps: ReadonlyArray<Step>): Promise<ScriptedServer> => {
  const server = await startOpenAIServer(steps)
  cleanups.push(() => server.stop())
  return server
}

const say = (text: string): Step => ({ kind: "turn", text })
const FIXTURE = { "a.ts": "x\n", "b.ts": "y\n" }

/** The last message the model received on request `i` (the nudge, after a violation). */
const lastMessage = (server: ScriptedServer, i: number): { role: string; content: string } => {
  const body = JSON.parse(server.requests[i]?.rawBody ?? "{}") as { messages?: Array<{ role: string; content: unknown }> }
  const last = body.messages?.at(-1)
  return { role: last?.role ?? "", content: typeof last?.content === "string" ? last.content : JSON.stringify(last?.content) }
}

describe("a typed answer", () => {
  test("valid JSON at once: job.completed carries it parsed; the schema reached the kernel and the prompt", async () => {
    const server = await serve([say(JSON.stringify(VALID))])
    const run = await runAgent({ agent: createAgentDir(WITH_ANSWER), server, task: "Count.", fixture: FIXTURE })
    const done = expectEndedWith(run, "completed")
    expect(done).toMatchObject({ summary: JSON.stringify(VALID), answer: VALID })
    expect(run.job.agent.answer).toEqual({ schema: "schemas/answer.schema.json", schemaText: SCHEMA })
    expect(server.requests[0]?.rawBody).toContain("<answer-format>")
    expect(server.requests.length).toBe(1)
  })

  test("prose ending with a ```json block: the block is the answer, the whole message the summary", async () => {
    const text = `Two files, nothing risky.\n\n\`\`\`json\n${JSON.stringify(VALID, null, 2)}\n\`\`\`\n`
    const server = await serve([say(text)])
    const run = await runAgent({ agent: createAgentDir(WITH_ANSWER), server, task: "Count.", fixture: FIXTURE })
    expect(expectEndedWith(run, "completed")).toMatchObject({ summary: text, answer: VALID })
  })

  test("an invalid answer gets one nudge naming each violation; the fixed answer completes", async () => {
    const server = await serve([say(VIOLATING), say(JSON.stringify(VALID))])
    const run = await runAgent({ agent: createAgentDir(WITH_ANSWER), server, task: "Count.", fixture: FIXTURE })
    expect(expectEndedWith(run, "completed")).toMatchObject({ answer: VALID })
    const nudge = lastMessage(server, 1)
    expect(nudge.role).toBe("user")
    for (const p of PROBLEMS) expect(nudge.content).toContain(p)
    expect(nudge.content).toContain("only chance")
    expect(server.requests.length).toBe(2)
  })

  test("invalid twice: failed/error naming every violation, no third model call", async () => {
    const server = await serve([say(VIOLATING), say(VIOLATING), say("never asked")])
    const run = await runAgent({ agent: createAgentDir(WITH_ANSWER), server, task: "Count.", fixture: FIXTURE })
    const failed = expectEndedWith(run, "error")
    expect(failed.type === "job.failed" ? failed.message : "").toBe(`the outputs violate the agent's contract: ${PROBLEMS.join("; ")}`)
    expect(run.events.some((e) => e.type === "job.completed")).toBe(false)
    expect(server.requests.length).toBe(2)
  })

  test("a final message that is not JSON is named as such, twice fails", async () => {
    const server = await serve([say("I counted two files."), say("```json\n{ files: 2 }\n```")])
    const run = await runAgent({ agent: createAgentDir(WITH_ANSWER), server, task: "Count.", fixture: FIXTURE })
    expect(lastMessage(server, 1).content).toContain("answer: the final message is not JSON")
    const failed = expectEndedWith(run, "error")
    expect(failed.type === "job.failed" ? failed.message : "").toStartWith(
      "the outputs violate the agent's contract: answer: the ```json block ending the final message is not valid JSON ("
    )
  })

  test("outputs and answer share the one chance: one nudge names both, the fix of both completes", async () => {
    const server = await serve([
      say("not json"),
      { kind: "turn", toolCalls: [{ name: "write", arguments: { path: "report.md", content: "# Two files\n" } }] },
      say(JSON.stringify(VALID))
    ])
    const run = await runAgent({ agent: createAgentDir(WITH_BOTH), server, task: "Count.", fixture: FIXTURE })
    expect(expectEndedWith(run, "completed")).toMatchObject({ answer: VALID })
    const nudge = lastMessage(server, 1).content
    expect(nudge).toContain("report.md: missing")
    expect(nudge).toContain("answer: the final message is not JSON")
    expect(server.requests.length).toBe(3)
  })

  test("an agent without `answer` behaves as before: free text completes, no answer field, no answer block", async () => {
    const server = await serve([say("Two files.")])
    const run = await runAgent({ agent: createAgentDir(agentMd(""), null), server, task: "Count.", fixture: FIXTURE })
    const done = expectEndedWith(run, "completed")
    expect(done).toMatchObject({ summary: "Two files." })
    expect("answer" in done).toBe(false)
    expect(server.requests[0]?.rawBody).not.toContain("<answer-format>")
  })
})

describe("the package's answer", () => {
  const filesOf = (md: string, schema?: string) => [
    { path: "counter.md", content: md },
    ...(schema === undefined ? [] : [{ path: "schemas/answer.schema.json", content: schema }])
  ]

  test("round trip: parse(serialize(p)) keeps `answer`; the definition carries the schema's text", () => {
    const parsed = parseAgentPackage(filesOf(WITH_ANSWER, SCHEMA))
    if (Either.isLeft(parsed)) throw new Error(JSON.stringify(parsed.left))
    expect(parsed.right.answer).toEqual({ schema: "schemas/answer.schema.json" })
    const again = parseAgentPackage(serializeAgentPackage(parsed.right))
    expect(again).toEqual(Either.right(parsed.right))
    const definition = toAgentDefinition(parsed.right, { version: 1, sharedSkills: new Map() })
    expect(definition.answer).toEqual({ schema: "schemas/answer.schema.json", schemaText: SCHEMA })
  })

  const validate = async (dir: string) => {
    const out: Array<string> = []
    const code = await agentsValidate(dir, { out: (l) => out.push(l), err: () => undefined }, { KINTSUGI_DATA_DIR: join(dir, "none") })
    return { code, out }
  }

  test("agents validate: a missing answer schema is refused at counter.md#answer.schema", async () => {
    const r = await validate(createAgentDir(WITH_ANSWER, null))
    expect(r.code).toBe(1)
    expect(r.out).toContain("counter.md#answer.schema: schemas/answer.schema.json is not in the package")
  })

  test("agents validate: an answer schema that is not a usable JSON Schema is refused at its path", async () => {
    const r = await validate(createAgentDir(WITH_ANSWER, JSON.stringify({ type: "no-such-type" })))
    expect(r.code).toBe(1)
    expect(r.out.some((l) => l.startsWith("schemas/answer.schema.json: "))).toBe(true)
  })

  test("agents validate: an answer schema outside schemas/ and a malformed `answer` are refused", async () => {
    const outside = await validate(createAgentDir(agentMd("answer: { schema: counter.md }\n")))
    expect(outside.out).toContain('counter.md#answer.schema: must be a schemas/<name>.json file of the package, not "counter.md"')
    const malformed = await validate(createAgentDir(agentMd("answer: schemas/answer.schema.json\n")))
    expect(malformed.code).toBe(1)
    expect(malformed.out).toContain("counter.md#answer: must be { schema: schemas/<name>.json }")
  })
})

describe("what the answer accepts", () => {
  /** Any object: every check below is the answer's own, not the schema's. */
  const LOOSE = { schema: "schemas/answer.schema.json", schemaText: JSON.stringify({ type: "object" }) }
  const check = (message: string) => Effect.runPromise(readTypedAnswer(LOOSE, message))

  test("a ```json block whose JSON holds ``` in a string is the answer (the opening fence starts a line)", async () => {
    const value = { note: "wrap it in ```ts fences```", lines: ["```", "x ```json"] }
    for (const json of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
      expect(await check(`Here it is.\n\n\`\`\`json\n${json}\n\`\`\``)).toEqual({ _tag: "Valid", value })
      expect(await check(`  \`\`\`json\n${json}\n  \`\`\``)).toEqual({ _tag: "Valid", value })
    }
  })

  test("nesting deeper than 64 levels is refused before it is parsed (the store cannot hold 20,000 levels)", async () => {
    const nested = (depth: number) => `{"x":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`
    expect(await check(nested(64))).toMatchObject({ _tag: "Valid" })
    for (const depth of [65, 20_000]) {
      expect(await check(nested(depth))).toEqual({
        _tag: "Invalid",
        problems: ["answer: the final message is not valid JSON (nests arrays and objects deeper than 64 levels)"]
      })
    }
    // Brackets inside strings are text.
    expect(await check(JSON.stringify({ x: "[".repeat(100) }))).toMatchObject({ _tag: "Valid" })
  })

  test("a string or key the store cannot hold (U+0000, an unpaired surrogate) and a number JSON cannot hold are named", async () => {
    expect(await check(String.raw`{"a":{"b":"x\u0000y"}}`)).toEqual({
      _tag: "Invalid",
      problems: ["answer at /a/b: the string holds the character U+0000, which cannot be stored"]
    })
    expect(await check(String.raw`{"a":["ok","\ud800"]}`)).toEqual({
      _tag: "Invalid",
      problems: ["answer at /a/1: the string holds an unpaired surrogate, which cannot be stored"]
    })
    expect(await check(String.raw`{"k\udc00":1}`)).toEqual({
      _tag: "Invalid",
      problems: ["answer at /: a key holds an unpaired surrogate, which cannot be stored"]
    })
    expect(await check(`{"n":{"m":1e400}}`)).toEqual({ _tag: "Invalid", problems: ["answer at /n/m: a number too large for JSON"] })
    // A surrogate pair is text.
    expect(await check(JSON.stringify({ "k😀": "😀" }))).toEqual({ _tag: "Valid", value: { "k😀": "😀" } })
  })

  test("a __proto__ key is the answer's own key: kept, and no prototype is touched", async () => {
    const checked = await check(`{"__proto__":{"polluted":true},"a":1}`)
    expect(checked._tag).toBe("Valid")
    const value = checked._tag === "Valid" ? (checked.value as Record<string, unknown>) : {}
    expect(Object.keys(value)).toEqual(["__proto__", "a"])
    expect(JSON.stringify(value)).toBe(`{"__proto__":{"polluted":true},"a":1}`)
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined()
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype)
  })
})
