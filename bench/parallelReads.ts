/**
 * Read-only tool calls of one turn at once: a job whose scripted model (zero latency, 127.0.0.1) asks
 * for 8 reads per turn (6 `read` of real source files, 2 `grep` over the tree) for 10 turns, over a
 * copy of this repository's src/, run with KINTSUGI_TOOL_CONCURRENCY=1 (one call at a time) against 8,
 * alternating, in one process. A second row: 8 calls per turn of a read-only MCP tool whose server
 * answers after 20 ms, the case where calls wait rather than compute.
 */
import { cpSync, readdirSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { Effect, Stream } from "effect"
import { AgentRuntime, type JobOutcome } from "../src/contract/AgentRuntime.ts"
import type { JobSpec } from "../src/contract/JobSpec.ts"
import { KernelLive } from "../src/kernel/Kernel.ts"
import { decodeJob } from "../src/kernel/decodeJob.ts"
import { createJob, createJobDirs, createProvider } from "../test/support/jobChild.ts"
import { startTestMcpServer } from "../test/support/mcpServers.ts"
import { startOpenAIServer, type ScriptedToolCall, type Step } from "../test/support/scriptedServers.ts"

const TURNS = 10
const RUNS = 5
const MCP_LATENCY_MS = 20

const dirs = createJobDirs()
cpSync(join(import.meta.dir, "..", "src"), dirs.src, { recursive: true })

/** The largest source files of the copy, relative to the workspace root. */
const files = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]))
const largest = files(dirs.src)
  .filter((f) => f.endsWith(".ts"))
  .sort((a, b) => statSync(b).size - statSync(a).size)
  .slice(0, 6 * TURNS)
  .map((f) => relative(dirs.root, f))

const readTurns = (): Array<Step> => [
  ...Array.from(
    { length: TURNS },
    (_, t): Step => ({
      kind: "turn",
      toolCalls: [
        ...largest.slice(6 * t, 6 * t + 6).map((path, i): ScriptedToolCall => ({ id: `t${t}r${i}`, name: "read", arguments: { path } })),
        { id: `t${t}g0`, name: "grep", arguments: { pattern: `Effect\\.gen.*${t}`, path: "src", limit: 50 } },
        { id: `t${t}g1`, name: "grep", arguments: { pattern: "TaggedError", path: "src", glob: "*.ts", limit: 50 } }
      ]
    })
  ),
  { kind: "turn", text: "done" }
]

const mcpTurns = (): Array<Step> => [
  ...Array.from(
    { length: TURNS },
    (_, t): Step => ({
      kind: "turn",
      toolCalls: Array.from({ length: 8 }, (_, i) => ({ id: `t${t}m${i}`, name: "mcp__kb__lookup", arguments: { q: `${t}-${i}` } }))
    })
  ),
  { kind: "turn", text: "done" }
]

const mcp = startTestMcpServer([
  {
    name: "lookup",
    readOnly: true,
    handler: async (a) => {
      await new Promise((resolve) => setTimeout(resolve, MCP_LATENCY_MS))
      return { content: [{ type: "text", text: `found ${String(a["q"])}` }] }
    }
  }
])

const spec = (tools: ReadonlyArray<string>, withMcp: boolean): JobSpec => {
  const job = {
    ...createJob(dirs, { agent: { tools }, limits: { maxTurns: 0, idleTimeoutSec: 0, timeoutSec: 300 } }),
    ...(withMcp ? { mcp: { servers: [{ name: "kb", url: mcp.url, timeoutSec: 10, allowPrivateNetwork: true }] } } : {})
  }
  const decoded = decodeJob(job)
  if (decoded._tag === "Left") throw new Error(`bench job: ${JSON.stringify(decoded.left.problems)}`)
  return decoded.right
}

/** One job in-process at `concurrency`; its wall time, and the calls each turn announced before its first result. */
const timeJob = async (steps: Array<Step>, job: JobSpec, concurrency: number): Promise<{ ms: number; grouped: number }> => {
  // The kernel reads the setting through Effect's Config from the environment at every turn.
  process.env["KINTSUGI_TOOL_CONCURRENCY"] = String(concurrency)
  const server = await startOpenAIServer(steps)
  let announced = 0
  let grouped = 0
  const t0 = performance.now()
  const outcome: JobOutcome = await Effect.runPromise(
    Effect.gen(function* () {
      const handle = yield* (yield* AgentRuntime).start(job)
      yield* Stream.runForEach(handle.events, (e) =>
        Effect.sync(() => {
          if (e.type === "tool.call") announced++
          else if (e.type === "tool.result") {
            grouped = Math.max(grouped, announced)
            announced = 0
          }
        })
      )
      return yield* handle.result
    }).pipe(Effect.scoped, Effect.provide(KernelLive({ providers: [createProvider(server, "openai-completions")] })))
  )
  const ms = performance.now() - t0
  await server.stop()
  if (outcome._tag !== "Completed") throw new Error(`bench job failed: ${outcome.message}`)
  return { ms, grouped }
}

const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

/** Alternates serial and parallel runs (the first of either pays JIT warm-up) and prints the medians. */
const row = async (label: string, steps: () => Array<Step>, job: JobSpec) => {
  const serial: Array<number> = []
  const parallel: Array<number> = []
  let grouped = { serial: 0, parallel: 0 }
  for (let r = 0; r < RUNS; r++) {
    const s = await timeJob(steps(), job, 1)
    const p = await timeJob(steps(), job, 8)
    serial.push(s.ms)
    parallel.push(p.ms)
    grouped = { serial: s.grouped, parallel: p.grouped }
  }
  const [s, p] = [median(serial), median(parallel)]
  console.log(
    `${label}: serial (1) ${s.toFixed(0)} ms, parallel (8) ${p.toFixed(0)} ms, serial/parallel ${(s / p).toFixed(2)}x` +
      ` (${(s / TURNS).toFixed(1)} vs ${(p / TURNS).toFixed(1)} ms per turn; calls announced before a result: ${grouped.serial} vs ${grouped.parallel})`
  )
}

const load = () => Bun.spawnSync(["uptime"]).stdout.toString().trim()
console.log(`median of ${RUNS} runs each, ${TURNS} turns of 8 calls; before: ${load()}`)
await row("8 reads (6 read + 2 grep) over src/", readTurns, spec(["read", "grep"], false))
await row(`8 read-only MCP calls (${MCP_LATENCY_MS} ms each)`, mcpTurns, spec(["mcp__kb__*"], true))
console.log(`after: ${load()}`)
delete process.env["KINTSUGI_TOOL_CONCURRENCY"]
await mcp.stop()
dirs.cleanup()
