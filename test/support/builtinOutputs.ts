/**
 * What a built-in agent's contract asks of a job (its `outputs:`: the Markdown report and the JSON
 * file its package's schema checks; its `answer:`: the typed final answer), as scripted model turns:
 * tests that run a built-in agent to `job.completed` write these, then answer with builtinAnswer. The
 * JSON documents are the smallest ones each schema accepts (every key of the agent's sketch, empty
 * collections); the answers are small valid ones.
 */
import type { ScriptedToolCall, ScriptedUsage, Step } from "../../src/testing/scriptedServers.ts"

const coverage = { readInDepth: [], sampled: [], skipped: [] }
const head = (schema: string) => ({ schema, sourceRoot: "src", revision: null, summary: "" })
const tail = { openQuestions: [], coverage, injectionAttempts: [] }

const none = { gaps: [], injectionAttempts: 0 }

/** Per built-in: its Markdown report, its JSON file, the smallest JSON document its schema accepts, and a valid answer. */
export const BUILTIN_OUTPUTS: Readonly<
  Record<string, { readonly report: string; readonly json: string; readonly document: unknown; readonly answer: unknown }>
> = {
  "codebase-inventory": {
    report: "inventory.md",
    json: "inventory.json",
    document: {
      ...head("kintsugi.inventory/1"),
      size: { files: 0, lines: 0, skipped: [] },
      languages: [],
      modules: [],
      entryPoints: [],
      tooling: { build: [], test: [], lint: [], ci: [], packaging: [], runtime: [] },
      manifests: [],
      generatedCode: [],
      history: { available: false },
      ...tail
    },
    answer: {
      summary: "An empty tree.",
      counts: { files: 0, lines: 0, languages: 0, modules: 0, entryPoints: 0, manifests: 0 },
      primaryLanguages: [],
      highlights: [],
      ...none,
      outputs: ["inventory.md", "inventory.json"]
    }
  },
  "architecture-map": {
    report: "architecture.md",
    json: "dependencies.json",
    document: {
      ...head("kintsugi.dependencies/1"),
      components: [],
      edges: [],
      runtime: { units: [], stores: [], connections: [] },
      externals: [],
      layers: [],
      findings: [],
      ...tail
    },
    answer: {
      summary: "No components.",
      counts: { components: 0, dependencies: 0, stores: 0, externals: 0, layers: 0, findings: 0 },
      deployableUnits: [],
      highlights: [],
      ...none,
      outputs: ["architecture.md", "dependencies.json"]
    }
  },
  "data-interfaces": {
    report: "data-and-interfaces.md",
    json: "interfaces.json",
    document: {
      ...head("kintsugi.interfaces/1"),
      stores: [],
      schemas: [],
      migrations: [],
      interfaces: [],
      access: [],
      formats: [],
      sensitiveData: [],
      ...tail
    },
    answer: {
      summary: "No data stores or interfaces.",
      counts: { stores: 0, schemas: 0, migrations: 0, interfaces: 0, formats: 0, sensitiveData: 0 },
      interfacesByKind: {},
      highlights: [],
      ...none,
      outputs: ["data-and-interfaces.md", "interfaces.json"]
    }
  },
  "domain-rules": {
    report: "domain.md",
    json: "rules.json",
    document: {
      ...head("kintsugi.rules/1"),
      glossary: [],
      entities: [],
      rules: [],
      stateMachines: [],
      calculations: [],
      conflicts: [],
      ...tail
    },
    answer: {
      summary: "No domain rules.",
      counts: { entities: 0, rules: 0, stateMachines: 0, calculations: 0, conflicts: 0 },
      fragileRules: [],
      highlights: [],
      ...none,
      outputs: ["domain.md", "rules.json"]
    }
  },
  "risk-quality": {
    report: "risks.md",
    json: "risks.json",
    document: {
      ...head("kintsugi.risks/1"),
      risks: [],
      hotspots: [],
      testing: { codeFiles: 0, testFiles: 0, frameworks: [], untested: [] },
      security: [],
      secrets: [],
      dependencies: [],
      deadCode: [],
      unverifiedSignals: [],
      ...tail
    },
    answer: {
      summary: "No risks found.",
      counts: { risks: 0, hotspots: 0, secrets: 0, dependencyIssues: 0, deadCode: 0 },
      risksBySeverity: { critical: 0, high: 0, medium: 0, low: 0, info: 0 },
      topRisks: [],
      ...none,
      outputs: ["risks.md", "risks.json"]
    }
  }
}

/** The two `write` calls that leave the contracted files of `agent` (the report's text as given). */
export const builtinOutputCalls = (agent: string, report = "# Report\n"): Array<ScriptedToolCall> => {
  const o = BUILTIN_OUTPUTS[agent]
  if (o === undefined) throw new Error(`builtinOutputCalls: ${agent} is not a built-in agent`)
  return [
    { name: "write", arguments: { path: o.report, content: report } },
    { name: "write", arguments: { path: o.json, content: `${JSON.stringify(o.document, null, 2)}\n` } }
  ]
}

/** One scripted turn writing both contracted files of `agent`. */
export const builtinOutputsStep = (agent: string, report = "# Report\n", usage?: ScriptedUsage): Step => ({
  kind: "turn",
  toolCalls: builtinOutputCalls(agent, report),
  ...(usage !== undefined ? { usage } : {})
})

/** The final answer of `agent`: a note, then its valid answer in a ```json block (the form its instructions ask for). */
export const builtinAnswer = (agent: string, note = "Done."): string => {
  const o = BUILTIN_OUTPUTS[agent]
  if (o === undefined) throw new Error(`builtinAnswer: ${agent} is not a built-in agent`)
  return `${note}\n\n\`\`\`json\n${JSON.stringify(o.answer, null, 2)}\n\`\`\`\n`
}

/** One scripted turn answering as `agent` must (builtinAnswer). */
export const builtinAnswerTurn = (agent: string, note?: string): Step => ({ kind: "turn", text: builtinAnswer(agent, note) })

/**
 * A step for jobs that run at once on one scripted server (steps are taken in request order, not per
 * job): a request without a tool result yet writes the contracted files, the next answers (builtinAnswer).
 */
export const builtinAnswerStep = (agent: string, note?: string): Step => ({
  kind: "fn",
  respond: (request) =>
    /"role":\s*"tool"|"tool_result"/.test(request.rawBody) ? builtinAnswerTurn(agent, note) : builtinOutputsStep(agent)
})
