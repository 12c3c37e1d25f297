/**
 * The five built-in agents ship valid, list no tools (so they get every kernel tool) and run as jobs,
 * each ending with a typed answer its schema accepts.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Either } from "effect"
import { AgentDefinition } from "../../src/contract/AgentDefinition.ts"
import { decodeAll } from "../../src/contract/Problem.ts"
import { builtinVersion } from "../../src/agents/agentCatalog.ts"
import { builtinAgents, builtinSkills } from "../../src/agents/builtins.ts"
import { parseEvals } from "../../src/agents/evalSpec.ts"
import { toAgentDefinition, validateAgent } from "../../src/agents/validateAgent.ts"
import { compileJsonSchema } from "../../src/kernel/jsonSchema.ts"
import { BUILTIN_OUTPUTS, builtinAnswer, builtinAnswerTurn, builtinOutputsStep } from "../support/builtinOutputs.ts"
import { createEnvelope, createJobDirs, createProvider, runJobChild } from "../support/jobChild.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const agents = [...builtinAgents().values()]
const sharedSkills = new Map([...builtinSkills().values()].map((s) => [s.name, s.content]))

describe("built-in agents", () => {
  test("there are five, runtime audience, no tools listed", () => {
    expect(agents.map((a) => a.name).sort()).toEqual([
      "architecture-map",
      "codebase-inventory",
      "data-interfaces",
      "domain-rules",
      "risk-quality"
    ])
    for (const a of agents) {
      expect(a.audience).toBe("runtime")
      expect(a.tools).toBeUndefined()
      expect(a.instructions.split("\n").length).toBeGreaterThan(60)
    }
  })

  test("each ships at least two evals that parse, on fixtures of its own, expecting only files its contract declares", () => {
    for (const a of agents) {
      const parsed = parseEvals(a.evals ?? [])
      expect({ agent: a.name, problems: parsed.problems }).toEqual({ agent: a.name, problems: [] })
      expect(parsed.evals.length).toBeGreaterThanOrEqual(2)
      const declared = new Set((a.outputs ?? []).map((o) => (typeof o === "string" ? o : o.file)))
      for (const e of parsed.evals) {
        expect(parsed.fixtures.get(e.fixture)?.files.length ?? 0).toBeGreaterThan(0)
        expect(e.task.trim()).not.toBe("")
        for (const file of e.expect.files ?? [])
          expect({ eval: e.name, file, declared: declared.has(file) }).toEqual({ eval: e.name, file, declared: true })
        expect(e.expect.grounding).toBe("clean")
      }
    }
  })

  test("each ships a positive whole version: the release's version number in the catalog and its jobs", () => {
    for (const a of agents) {
      expect(Number.isInteger(a.version) && (a.version as number) >= 1).toBe(true)
      expect(builtinVersion(a)).toBe(a.version as number)
    }
  })

  test.each(agents.map((a) => [a.name, a] as const))("%s validates and becomes a job definition the kernel accepts", (_name, pkg) => {
    expect(validateAgent(pkg, { sharedSkills: new Set(sharedSkills.keys()) })).toEqual([])
    const definition = toAgentDefinition(pkg, { version: 1, sharedSkills })
    expect(Either.isRight(decodeAll(AgentDefinition)(definition))).toBe(true)
  })

  test.each(agents.map((a) => [a.name, a] as const))(
    "%s declares its report and its JSON file, the JSON with a schema from its package that accepts its sketch",
    (name, pkg) => {
      const o = BUILTIN_OUTPUTS[name]!
      expect(pkg.outputs).toEqual([o.report, { file: o.json, schema: `schemas/${o.json.replace(/\.json$/, "")}.schema.json` }])
      const entry = toAgentDefinition(pkg, { version: 1, sharedSkills }).outputs?.[1]
      if (entry === undefined || typeof entry === "string") throw new Error("no schema in the definition")
      const check = Either.getOrThrow(compileJsonSchema(entry.schemaText))
      // The sketch of the agent's instructions, every collection empty: valid.
      expect(check(o.document)).toEqual([])
      // The wrong schema id, a missing key and a citation with line 0: each named.
      const { summary: _summary, ...partial } = o.document as Record<string, unknown>
      const bad = check({ ...partial, schema: "kintsugi.other/1", injectionAttempts: [{ path: "a.ts", line: 0, summary: "x" }] })
      expect(bad.map((v) => v.pointer).sort()).toEqual(["/injectionAttempts/0/line", "/schema", "/summary"])
    }
  )

  test.each(agents.map((a) => [a.name, a] as const))(
    "%s declares a typed answer: its schema accepts the example of its instructions and names each violation",
    (name, pkg) => {
      expect(pkg.answer).toEqual({ schema: "schemas/answer.schema.json" })
      const answer = toAgentDefinition(pkg, { version: 1, sharedSkills }).answer
      if (answer === undefined) throw new Error("no answer in the definition")
      const check = Either.getOrThrow(compileJsonSchema(answer.schemaText))
      const example = /```json\n([\s\S]*?)\n```\s*$/.exec(pkg.instructions)?.[1]
      expect(check(JSON.parse(example ?? "null"))).toEqual([])
      expect(check(BUILTIN_OUTPUTS[name]?.answer)).toEqual([])
      // A count as text, a missing summary, and no file written: each named.
      const { summary: _s, ...rest } = BUILTIN_OUTPUTS[name]?.answer as Record<string, unknown>
      const counts = rest["counts"] as Record<string, unknown>
      const first = Object.keys(counts)[0] ?? ""
      const bad = check({ ...rest, counts: { ...counts, [first]: "3" }, outputs: [] })
      expect(bad.map((v) => v.pointer).sort()).toEqual([`/counts/${first}`, "/outputs", "/summary"])
    }
  )

  const dirs = createJobDirs({ "app.ts": "export const main = () => 1\n" })
  afterAll(() => dirs.cleanup())

  test.each(agents.map((a) => [a.name, a] as const))(
    "a job of %s completes with a typed answer that validates against its schema",
    async (name, pkg) => {
      const server = await startOpenAIServer([builtinOutputsStep(name), builtinAnswerTurn(name, `Wrote the ${name} reports.`)])
      try {
        const agent = toAgentDefinition(pkg, { version: 1, sharedSkills })
        const job = {
          agent,
          task: "Look at this codebase.",
          model: { provider: "scripted", id: "scripted-model" },
          workspace: { root: dirs.root, readOnly: [dirs.src], outDir: dirs.out },
          limits: { timeoutSec: 30 }
        }
        const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]))
        const done = run.events.at(-1)
        expect(done).toMatchObject({ type: "job.completed", summary: builtinAnswer(name, `Wrote the ${name} reports.`) })
        const answer = done?.type === "job.completed" ? done.answer : undefined
        expect(answer).toEqual(BUILTIN_OUTPUTS[name]?.answer)
        const check = Either.getOrThrow(compileJsonSchema(agent.answer?.schemaText ?? ""))
        expect(check(answer)).toEqual([])
        expect(run.code).toBe(0)
        // The model was told the form and the schema (the system prompt's answer block).
        expect(server.requests[0]?.rawBody).toContain("<answer-format>")
      } finally {
        await server.stop()
      }
    }
  )

  test("codebase-inventory runs as a job: the prompt reaches the model, every kernel tool is offered", async () => {
    const pkg = builtinAgents().get("codebase-inventory")!
    const server = await startOpenAIServer([
      { kind: "turn", toolCalls: [{ name: "ls", arguments: {} }] },
      builtinOutputsStep("codebase-inventory", "# Inventory\n"),
      builtinAnswerTurn("codebase-inventory", "Wrote inventory.md and inventory.json.")
    ])
    try {
      const job = {
        agent: toAgentDefinition(pkg, { version: 1, sharedSkills }),
        task: "Inventory this codebase.",
        model: { provider: "scripted", id: "scripted-model" },
        workspace: { root: dirs.root, readOnly: [dirs.src], outDir: dirs.out },
        limits: { timeoutSec: 30 }
      }
      const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]))
      expect(run.code).toBe(0)
      expect(run.events.some((e) => e.type === "output" && e.path === "inventory.md")).toBe(true)
      expect(run.events.at(-1)).toMatchObject({
        type: "job.completed",
        summary: builtinAnswer("codebase-inventory", "Wrote inventory.md and inventory.json."),
        answer: BUILTIN_OUTPUTS["codebase-inventory"]?.answer
      })
      const body = server.requests[0]!.body as {
        messages: Array<{ role: string; content: string }>
        tools: Array<{ function: { name: string } }>
      }
      expect(body.messages[0]!.content.startsWith(pkg.instructions.slice(0, 200))).toBe(true)
      expect(body.tools.map((t) => t.function.name)).toEqual(["read", "ls", "grep", "find", "write", "edit", "shell", "git", "codemode"])
    } finally {
      await server.stop()
    }
  })
})
