/**
 * Replays an exported job test (`kintsugi jobs export-test`): the agent package in the export, its
 * workspace files, and the model's recorded turns from a scripted server; then checks that the replay
 * made the tool calls, outputs and summary the job recorded (`expectSameRun`).
 */
import { Schema } from "effect"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import type { JobSpec } from "../contract/JobSpec.ts"
import { ExpectedRun, ModelScript, RecordedJob } from "./recordedJob.ts"
import { loadAgentDefinition, runJobSpec, type AgentRun } from "./runAgent.ts"
import { startOpenAIServer } from "./scriptedServers.ts"

export interface ReplayOptions {
  /** Variables added to the job child's environment (e.g. `KINTSUGI_SANDBOX`). */
  readonly env?: Readonly<Record<string, string>>
  /** Where the temporary workspace is made (default: the OS temp dir); it is removed after the run. */
  readonly tmpDir?: string
}

/** A replayed run: what `runAgent` returns, and how many scripted model answers were left unused. */
export interface ReplayRun extends AgentRun {
  readonly unusedSteps: number
}

const readJson = (dir: string, file: string): unknown => JSON.parse(readFileSync(join(dir, file), "utf8"))
const decodeJob = Schema.decodeUnknownSync(RecordedJob, { errors: "all" })
const decodeScript = Schema.decodeUnknownSync(ModelScript, { errors: "all" })
const decodeExpected = Schema.decodeUnknownSync(ExpectedRun, { errors: "all" })

/** The custom shared skills of the export (`<name>.md` each in `folder`), by name. */
const sharedSkills = (dir: string, folder: string | undefined): Record<string, string> =>
  folder === undefined
    ? {}
    : Object.fromEntries(
        readdirSync(join(dir, folder))
          .filter((f) => f.endsWith(".md"))
          .map((f) => [f.slice(0, -3), readFileSync(join(dir, folder, f), "utf8")])
      )

/**
 * Runs the job of the export folder `dir` again: copies its `workspace/` to a fresh root (a read-only
 * entry the job never read is made empty), runs the agent package of `agent/` with the recorded task
 * against a scripted OpenAI server answering from `model.json`, and returns the run.
 */
export const replayJob = async (dir: string, options: ReplayOptions = {}): Promise<ReplayRun> => {
  const recorded = decodeJob(readJson(dir, "job.json"))
  const steps = decodeScript(readJson(dir, "model.json"))
  const agent = await loadAgentDefinition(join(dir, recorded.agent.folder), sharedSkills(dir, recorded.sharedSkills))
  const server = await startOpenAIServer(steps)
  const root = realpathSync(mkdtempSync(join(options.tmpDir ?? tmpdir(), "kintsugi-replay-")))
  try {
    const files = join(dir, recorded.workspace.folder)
    if (existsSync(files)) cpSync(files, root, { recursive: true, verbatimSymlinks: true })
    for (const entry of recorded.workspace.readOnly) {
      const path = join(root, entry.path)
      if (existsSync(path)) continue
      if (entry.kind === "dir") mkdirSync(path, { recursive: true })
      else {
        mkdirSync(dirname(path), { recursive: true })
        writeFileSync(path, "")
      }
    }
    const outDir = join(root, recorded.workspace.outDir)
    mkdirSync(outDir, { recursive: true })
    const job: JobSpec = {
      agent,
      task: recorded.task,
      model: { provider: "scripted", id: "scripted-model" },
      workspace: { root, readOnly: recorded.workspace.readOnly.map((e) => join(root, e.path)), outDir },
      limits: { timeoutSec: 120, idleTimeoutSec: 60, maxTurns: Math.max(50, recorded.modelCalls) },
      metadata: { trigger: "kintsugi-runtime/testing", replayOf: recorded.jobId }
    }
    const run = await runJobSpec(job, {
      server,
      ...(recorded.model === undefined ? {} : { model: recorded.model }),
      ...(options.env === undefined ? {} : { env: options.env })
    })
    return { ...run, unusedSteps: server.remaining() }
  } finally {
    await server.stop()
    rmSync(root, { recursive: true, force: true })
  }
}

/** JSON with object keys sorted, so that two values compare by content. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v
  )

/**
 * Throws an Error naming the first difference between the replay and `expected` (the export's
 * `expected.json`, decoded here): the tool calls (name, input, allowed; in order), the output paths
 * (in order, each file present), the job's end (completed, with the same summary and answer), and
 * every scripted answer used.
 */
export const expectSameRun = (run: ReplayRun, expected: unknown): void => {
  const want = decodeExpected(expected)
  if (run.refused !== undefined)
    throw new Error(`the replay was refused:\n${run.refused.map((p) => `  ${p.path}: ${p.message}`).join("\n")}`)
  const calls = run.events.flatMap((e) => (e.type === "tool.call" ? [{ tool: e.tool, input: e.input, allowed: e.allowed }] : []))
  const count = Math.max(calls.length, want.toolCalls.length)
  for (let i = 0; i < count; i++) {
    const [got, wanted] = [calls[i], want.toolCalls[i]]
    if (canonical(got) !== canonical(wanted))
      throw new Error(
        `tool call ${i + 1} differs:\n  recorded: ${wanted === undefined ? "(none)" : canonical(wanted)}\n  replayed: ${got === undefined ? "(none)" : canonical(got)}`
      )
  }
  const outputs = run.events.flatMap((e) => (e.type === "output" ? [e.path] : []))
  if (canonical(outputs) !== canonical(want.outputs))
    throw new Error(`the outputs differ:\n  recorded: ${canonical(want.outputs)}\n  replayed: ${canonical(outputs)}`)
  const missing = outputs.filter((path) => !(path in run.outputs))
  if (missing.length > 0) throw new Error(`the replay named outputs it did not leave: ${missing.join(", ")}`)
  const end = run.terminal
  if (end?.type !== "job.completed")
    throw new Error(
      `the job completed, the replay ${end === undefined ? "did not end" : `failed (${end.reason}: ${end.message})`}\n${run.stderr.slice(-2000)}`
    )
  if (end.summary !== want.summary) throw new Error(`the summary differs:\n  recorded: ${want.summary}\n  replayed: ${end.summary}`)
  if (canonical(end.answer) !== canonical(want.answer))
    throw new Error(`the answer differs:\n  recorded: ${canonical(want.answer)}\n  replayed: ${canonical(end.answer)}`)
  if (run.unusedSteps > 0) throw new Error(`the replay ended with ${run.unusedSteps} recorded model answers unused`)
}
