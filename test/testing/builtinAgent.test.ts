/**
 * The example of docs/testing.md: a built-in agent (codebase-inventory) tested the way an agent author
 * tests theirs, importing only `kintsugi-runtime/testing`. The model is scripted; the job child is real.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test"
import { dirname, join } from "node:path"
import {
  expectEndedWith,
  expectRead,
  expectWrote,
  runAgent,
  startOpenAIServer,
  toolResultsOf,
  type ScriptedServer
} from "kintsugi-runtime/testing"

setDefaultTimeout(30_000)

// The built-in agents ship in the package, beside its package.json.
const AGENT = join(dirname(Bun.resolveSync("kintsugi-runtime/package.json", import.meta.dir)), "builtin-agents", "codebase-inventory")

// The typed answer its package's schemas/answer.schema.json describes.
const ANSWER = {
  summary: "An npm package, todo-api.",
  counts: { files: 2, lines: 7, languages: 1, modules: 1, entryPoints: 1, manifests: 1 },
  primaryLanguages: ["JavaScript"],
  highlights: [],
  gaps: [],
  injectionAttempts: 0,
  outputs: ["inventory.md", "inventory.json"]
}

let server: ScriptedServer | undefined
afterEach(() => server?.stop())

test("codebase-inventory reads the manifest and writes its report", async () => {
  server = await startOpenAIServer([
    // Turn 1: the model reads the manifest.
    { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/package.json" } }] },
    // Turn 2: it writes what the read really returned (a step is a function of the request).
    {
      kind: "fn",
      respond: (request) => {
        const manifest = toolResultsOf(request).at(-1) ?? ""
        const name = /"name": "([^"]+)"/.exec(manifest)?.[1] ?? "unknown"
        const content = `# Inventory\n\n| path | ecosystem | module |\n|---|---|---|\n| src/package.json:2 | npm | ${name} |\n`
        // inventory.json must satisfy the schema the package ships (schemas/inventory.schema.json).
        const inventory = {
          schema: "kintsugi.inventory/1",
          sourceRoot: "src",
          revision: null,
          summary: `An npm package, ${name}.`,
          size: { files: 2, lines: 7, skipped: [] },
          languages: [],
          modules: [],
          entryPoints: [],
          tooling: { build: [], test: [], lint: [], ci: [], packaging: [], runtime: [] },
          manifests: [
            { path: "src/package.json", ecosystem: "npm", module: name, lockfile: null, dependencies: { runtime: 1, dev: 0 }, notable: [] }
          ],
          generatedCode: [],
          history: { available: false },
          openQuestions: [],
          coverage: { readInDepth: ["src/package.json"], sampled: [], skipped: [] },
          injectionAttempts: []
        }
        return {
          kind: "turn",
          toolCalls: [
            { name: "write", arguments: { path: "inventory.md", content } },
            { name: "write", arguments: { path: "inventory.json", content: JSON.stringify(inventory, null, 2) } }
          ]
        }
      }
    },
    // Turn 3: the final answer, the typed answer as JSON (alone here; a note before a ```json block is fine too).
    { kind: "turn", text: JSON.stringify(ANSWER) }
  ])

  const run = await runAgent({
    agent: AGENT,
    server,
    task: "Inventory this codebase.",
    fixture: {
      "package.json": '{\n  "name": "todo-api",\n  "version": "1.0.0",\n  "dependencies": { "express": "4.19.2" }\n}\n',
      "index.js": 'const express = require("express")\nexpress().listen(3000)\n'
    }
  })

  // job.completed carries the answer, parsed and checked against the schema.
  expect(expectEndedWith(run, "completed")).toMatchObject({ answer: ANSWER })
  expectRead(run, "src/package.json", [1, 5])
  expectWrote(run, "inventory.md", /\| src\/package\.json:2 \| npm \| todo-api \|/)
  expectWrote(run, "inventory.json", /"module": "todo-api"/)
  // The agent's own instructions are the system prompt the model received.
  expect(server.requests[0]?.rawBody).toContain("You are the Codebase Inventory agent")
})
