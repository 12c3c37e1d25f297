/**
 * `kintsugi-runtime/testing`: runAgent on every package form (folder, .md, .zip) and both dialects,
 * refusals, broken packages, the expectation helpers' failure messages, and that the testing entry
 * loads no server or database code.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, relative, resolve } from "node:path"
import {
  AgentPackageInvalid,
  expectEndedWith,
  expectRead,
  expectWrote,
  runAgent,
  SCRIPTED_API_KEY,
  startAnthropicServer,
  startOpenAIServer,
  toolResultsOf,
  type ScriptedServer
} from "kintsugi-runtime/testing"
import { writeZip } from "../../src/agents/zip.ts"

setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const tempDir = (): string => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-testing-")))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const notesAgent = `---
name: notes
version: 1
description: Reads the guide and writes notes.
tools: [read, grep, write]
---
You read WORKSPACE.md, then write notes.md.
`

const serve = async (start: typeof startOpenAIServer, steps: Parameters<typeof startOpenAIServer>[0]): Promise<ScriptedServer> => {
  const server = await start(steps)
  cleanups.push(() => server.stop())
  return server
}

describe("runAgent", () => {
  test("a single .md agent on Anthropic: reads the guide, writes a file; the key never reaches events or outputs", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, "notes.md"), notesAgent)
    const fixture = join(dir, "fixture")
    mkdirSync(join(fixture, "lib"), { recursive: true })
    writeFileSync(join(fixture, "lib", "a.ts"), "export const a = 1\n")
    const server = await serve(startAnthropicServer, [
      { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "WORKSPACE.md" } }] },
      {
        kind: "fn",
        respond: (req) => ({
          kind: "turn",
          toolCalls: [{ name: "write", arguments: { path: "deep/notes.md", content: `guide said: ${toolResultsOf(req).at(-1)}` } }]
        })
      },
      { kind: "turn", text: "done" }
    ])
    const run = await runAgent({ agent: join(dir, "notes.md"), server, task: "Take notes.", fixture, guide: "Focus on lib/.\n" })
    expect(server.api).toBe("anthropic-messages")
    expectEndedWith(run, "completed")
    expectRead(run, "WORKSPACE.md", [1, 1])
    expect(expectWrote(run, "deep/notes.md")).toBe("guide said: Focus on lib/.")
    expect(run.outputs).toEqual({ "deep/notes.md": "guide said: Focus on lib/." })
    expect(run.job.agent).toMatchObject({ id: "notes", version: 1, tools: ["read", "grep", "write"] })
    expect(server.requests[0]?.headers["x-api-key"]).toBe(SCRIPTED_API_KEY)
    expect(JSON.stringify(run.events) + run.stderr).not.toContain(SCRIPTED_API_KEY)
  })

  test("a .zip package (one enclosing folder) runs like its folder", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, "notes.zip"), writeZip([{ path: "notes/notes.md", content: notesAgent }]))
    const server = await serve(startOpenAIServer, [{ kind: "turn", text: "nothing to do" }])
    const run = await runAgent({ agent: join(dir, "notes.zip"), server, task: "Nothing.", fixture: { "x.txt": "x\n" } })
    expect(expectEndedWith(run, "completed")).toMatchObject({ summary: "nothing to do" })
    expect(run.outputs).toEqual({})
  })

  test("a broken package throws with every problem; nothing runs", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, "broken.md"), "---\nname: other\nversion: 1\ndescription: x\ntools: [read, teleport]\n---\nHi.\n")
    const server = await serve(startOpenAIServer, [])
    const error = await runAgent({ agent: join(dir, "broken.md"), server, task: "t", fixture: {} }).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(AgentPackageInvalid)
    const paths = (error as AgentPackageInvalid).problems.map((p) => p.path)
    expect(paths).toEqual(expect.arrayContaining(["broken.md#name", "broken.md#tools.1"]))
    expect(server.requests).toHaveLength(0)
  })

  test("a refused job is reported with its problems, and expectEndedWith names them", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, "notes.md"), notesAgent)
    const server = await serve(startOpenAIServer, [])
    const run = await runAgent({ agent: join(dir, "notes.md"), server, task: "t", fixture: {}, limits: { timeoutSec: 0 } })
    expect(run.exitCode).toBe(2)
    expect(run.refused?.map((p) => p.path)).toEqual(["job.limits.timeoutSec"])
    expect(() => expectEndedWith(run, "completed")).toThrow(/refused: job\.limits\.timeoutSec: must be a positive number/)
  })
})

describe("expectation helpers", () => {
  test("say what was expected and what happened", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, "notes.md"), notesAgent)
    const server = await serve(startOpenAIServer, [
      { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/a.txt", limit: 2 } }] },
      { kind: "turn", toolCalls: [{ name: "write", arguments: { path: "n.md", content: "one\n" } }] },
      { kind: "turn", text: "ok" }
    ])
    const run = await runAgent({ agent: join(dir, "notes.md"), server, task: "t", fixture: { "a.txt": "1\n2\n3\n4\n" } })
    expectRead(run.events, "src/a.txt", [1, 2])
    expect(() => expectRead(run, "src/a.txt", [2, 3])).toThrow("line 3 was never shown (reads: read src/a.txt:1-2)")
    expect(() => expectRead(run, "src/b.txt")).toThrow("expected the job to read src/b.txt; it read: read src/a.txt:1-2")
    expect(() => expectWrote(run, "m.md")).toThrow("expected the job to write m.md; output events: n.md")
    expect(() => expectWrote(run, "n.md", "two\n")).toThrow("n.md differs from what was expected")
    expect(() => expectWrote(run, "n.md", /two/)).toThrow("n.md does not match /two/")
    expect(() => expectEndedWith(run, "timeout")).toThrow("expected the job to end timeout; it ended completed")
  })
})

test("kintsugi-runtime/testing loads no server, database or model-client code", () => {
  const transpiler = new Bun.Transpiler({ loader: "ts" })
  const files = new Set<string>()
  const packages = new Set<string>()
  const walk = (file: string) => {
    if (files.has(file)) return
    files.add(file)
    for (const { path } of transpiler.scanImports(readFileSync(file, "utf8"))) {
      if (path.startsWith(".")) walk(resolve(dirname(file), path))
      else
        packages.add(
          path
            .split("/")
            .slice(0, path.startsWith("@") ? 2 : 1)
            .join("/")
        )
    }
  }
  const root = join(import.meta.dir, "..", "..")
  walk(join(root, "src", "testing", "index.ts"))
  const dirs = [...files].map((f) => relative(root, dirname(f)))
  expect([...new Set(dirs)].sort()).toEqual(["src/agents", "src/contract", "src/jobChild", "src/kernel", "src/testing", "src/tools"])
  // Of src/jobChild/ only the job child's command line and JIT settings (a module that imports nothing).
  expect([...files].filter((f) => relative(root, dirname(f)) === "src/jobChild").map((f) => relative(root, f))).toEqual([
    "src/jobChild/args.ts"
  ])
  expect([...files].filter((f) => f.includes("/src/tools/")).map((f) => relative(root, f))).toEqual(["src/tools/denyPatterns.ts"])
  // The package check compiles output schemas (ajv): that kernel module and the ajv engines it loads
  // (src/kernel/ajvEngines.ts imports packages only), never the kernel itself.
  expect(
    [...files]
      .filter((f) => f.includes("/src/kernel/"))
      .map((f) => relative(root, f))
      .sort()
  ).toEqual(["src/kernel/ajvEngines.ts", "src/kernel/jsonSchema.ts"])
  expect([...packages].filter((p) => !p.startsWith("node:")).sort()).toEqual(["ajv", "effect", "fflate", "re2js"])
})

test("docs/testing.md's example is test/testing/builtinAgent.test.ts", () => {
  const docs = readFileSync(join(import.meta.dir, "..", "..", "docs", "testing.md"), "utf8")
  const fence = "```ts file=inventory.test.ts\n"
  const start = docs.indexOf(`${fence}import { afterEach`)
  const example = docs.slice(start + fence.length, docs.indexOf("\n```\n", start + fence.length) + 1)
  const file = readFileSync(join(import.meta.dir, "builtinAgent.test.ts"), "utf8")
  expect(start).toBeGreaterThan(0)
  expect(file.slice(file.indexOf("import { afterEach"))).toBe(example)
})
