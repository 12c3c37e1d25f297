/**
 * What a built-in agent's output contract asks of a job (its `outputs:`: the Markdown report and the
 * JSON file its package's schema checks), as scripted model turns: tests that run a built-in agent to
 * `job.completed` write these before the final answer. The JSON documents are the smallest ones each
 * schema accepts (every key of the agent's sketch, empty collections).
 */
import type { ScriptedUsage, Step } from "../../src/testing/scriptedServers.ts"

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
    document: { ...head("kintsugi.dependencies/1"), components: [], edges: [], runtime: { units: [], stores: [], connections: [] }, externals: [], layers: [], findings: [], ...tail }
  },
  "data-interfaces": {
    report: "data-and-interfaces.md",
    json: "interfaces.json",
    document: { ...head("kintsugi.interfaces/1"), stores: [], schemas: [], migrations: [], interfaces: [], access: [], formats: [], sensitiveData: [], ...tail }
  },
  "domain-rules": {
    report: "domain.md",
    json: "rules.json",
    document: { ...head("kintsugi.rules/1"), glossary: [], entities: [], rules: [], stateMachines: [], calculations: [], conflicts: [], ...tail }
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

/** One scripted turn writing both contracted files of `agent` (the report's text as given). */
export const builtinOutputsStep = (agent: string, report = "# Report\n", usage?: ScriptedUsage): Step => {
  const o = BUILTIN_OUTPUTS[agent]
  if (o === undefined) throw new Error(`builtinOutputsStep: ${agent} is not a built-in agent`)
  return {
    kind: "turn",
    toolCalls: [
      { name: "write", arguments: { path: o.report, content: report } },
      { name: "write", arguments: { path: o.json, content: `${JSON.stringify(o.document, null, 2)}\n` } }
    ],
    ...(usage !== undefined ? { usage } : {})
  }
}
