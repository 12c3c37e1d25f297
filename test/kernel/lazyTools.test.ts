/**
 * The job child loads only what its job's tools need: codemode (and QuickJS behind it), the
 * MCP tools (and the MCP SDK behind them), the memory and web tools are loaded when a job grants them,
 * and are there when it does. The child runs from the sources under a preload that names each of those
 * modules as it loads (test/support/loadRecorder.ts).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { join } from "node:path"
import { childEnv, createEnvelope, createJob, createJobDirs, createProvider, runJobChild } from "../support/jobChild.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

setDefaultTimeout(60_000)

const RECORDER = join(import.meta.dir, "..", "support", "loadRecorder.ts")
const ENTRY = join(import.meta.dir, "..", "..", "src", "jobChild", "entry.ts")

const loadedModules = (stderr: string): Array<string> =>
  stderr
    .split("\n")
    .filter((l) => l.startsWith("loaded "))
    .map((l) => l.slice(l.indexOf("/src/") + 5))

/** One job from the sources granting `tools`, with its services channel (memory and web need one). */
const runGranting = async (tools: ReadonlyArray<string>) => {
  const server = await startOpenAIServer([{ kind: "turn", text: "done" }])
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  try {
    const envelope = {
      ...createEnvelope(createJob(dirs, { agent: { tools } }), [createProvider(server, "openai-completions")]),
      services: { url: "http://127.0.0.1:9/services", token: "services-token-0123456789" }
    }
    const run = await runJobChild(envelope, { entry: ENTRY, env: { ...childEnv(), BUN_OPTIONS: `--preload=${RECORDER}` } })
    return { ...run, loaded: loadedModules(run.stderr) }
  } finally {
    await server.stop()
    dirs.cleanup()
  }
}

describe("tool modules are loaded when a job grants them", () => {
  test("a job granting only read loads read's module and the process runner: no other tool, none of codemode, the MCP tools, the memory and web tools", async () => {
    const run = await runGranting(["read"])
    expect(run.code).toBe(0)
    expect(run.events[0]).toMatchObject({ type: "job.started", tools: ["read"] })
    expect(run.loaded.sort()).toEqual(["tools/ProcessRunner.ts", "tools/read.ts"])
  })

  test("a job granting no tool loads no kernel tool module, only the process runner", async () => {
    const run = await runGranting([])
    expect(run.code).toBe(0)
    expect(run.events[0]).toMatchObject({ type: "job.started", tools: [] })
    expect(run.loaded).toEqual(["tools/ProcessRunner.ts"])
  })

  test("a job granting codemode and memory loads those, and gets them", async () => {
    const run = await runGranting(["read", "codemode", "memory"])
    expect(run.code).toBe(0)
    const started = run.events[0]
    expect(started?.type).toBe("job.started")
    const tools = started?.type === "job.started" ? started.tools : []
    expect(tools).toEqual(expect.arrayContaining(["read", "codemode", "memory_search"]))
    expect(run.loaded.sort()).toEqual([
      "tools/ProcessRunner.ts",
      "tools/codemode/codemode.ts",
      "tools/find.ts",
      "tools/grep.ts",
      "tools/ls.ts",
      "tools/read.ts",
      "tools/services/serviceTools.ts"
    ])
  })
})
