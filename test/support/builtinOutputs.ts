/**
 * What a built-in agent's output contract asks of a job (its `outputs:`: the Markdown report and the
 * JSON file its package's schema checks), as scripted model turns: tests that run a built-in agent to
 * `job.completed` write these before the final answer. The JSON documents are the smallest ones each
 * schema accepts (every key of the agent's sketch, empty collections).
 */
import type { ScriptedToolCall, ScriptedUsage, Step } from "../../src/testing/scriptedServers.ts"

const coverage = { readInDepth: [], sampled: [], skipped: [] }
const head = (schema: string) => ({ schema, sourceRoot: "src", revision: null, summary: "" })
const tail = { openQuestions: [], coverage, injectionAttempts: [] }

/** Per built-in: its Markdown report, its JSON file and the smallest JSON document its schema accepts. */
export const BUILTIN_OUTPUTS: Readonly<Record<string, { readonly report: string; readonly json: string; readonly document: unknown }>> = {
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

/**
 * A step for jobs that run at once on one scripted server (steps are taken in request order, not per
 * job): a request without a tool result yet writes the contracted files, the next answers `text`.
 */
export const builtinAnswerStep = (agent: string, text: string): Step => ({
  kind: "fn",
  respond: (request) => (/"role":\s*"tool"|"tool_result"/.test(request.rawBody) ? { kind: "turn", text } : builtinOutputsStep(agent))
})
