/**
 * Drives the real job child (`bun src/cli.ts run-job`, or its bytecode bundle: jobChildBundle.ts) the way the worker will: an envelope on
 * stdin, NDJSON events on stdout. Also builds job envelopes against the scripted model servers.
 */
import { Either, Schema } from "effect"
import { mkdtempSync, mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { JobEvent } from "../../src/contract/JobEvent.ts"
import type { JobSpec } from "../../src/contract/JobSpec.ts"
import { JOB_CHILD_JIT_ENV } from "../../src/jobChild/args.ts"
import { decodeJob } from "../../src/kernel/decodeJob.ts"
import { jobChildEntryForTests } from "./jobChildBundle.ts"
import { testJobRoot } from "./jobRoots.ts"
import type { ScriptedServer } from "./scriptedServers.ts"

export const TEST_API_KEY = "sk-test-SECRET-key-0123456789abcdef"
export const MODEL_PRICES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } as const

export interface ChildRun {
  readonly code: number
  readonly lines: ReadonlyArray<string>
  readonly events: ReadonlyArray<JobEvent>
  readonly stdout: string
  readonly stderr: string
}

const decodeEvent = Schema.decodeUnknownSync(JobEvent)

/** The job child's environment: no proxies for loopback, the test run's sandbox mode, the worker's JIT settings, nothing else of ours. */
export const childEnv = (): Record<string, string> => ({
  ...JOB_CHILD_JIT_ENV,
  PATH: process.env["PATH"] ?? "/usr/bin:/bin",
  HOME: process.env["HOME"] ?? "/tmp",
  NO_PROXY: "127.0.0.1,localhost",
  KINTSUGI_SANDBOX: process.env["KINTSUGI_SANDBOX"] ?? "auto",
  KINTSUGI_ALLOW_UNCONFINED_ROOT: process.env["KINTSUGI_ALLOW_UNCONFINED_ROOT"] ?? ""
})

export interface RunningChild {
  readonly proc: Bun.Subprocess<"pipe", "pipe", "pipe">
  /** Resolves once the child has printed an event of this type. */
  readonly waitFor: (type: JobEvent["type"]) => Promise<void>
  readonly done: Promise<ChildRun>
}

export interface ChildOptions {
  /** The script to run instead of src/cli.ts (e.g. a bytecode bundle). */
  readonly entry?: string
  /** Variables added to the child's environment. */
  readonly env?: Record<string, string>
}

/** Starts the job child with `envelope` (an object, or raw text) on stdin. */
export const startJobChild = (envelope: unknown, options: ChildOptions = {}): RunningChild => {
  const proc = Bun.spawn(["bun", options.entry ?? jobChildEntryForTests(), "run-job"], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...childEnv(), ...options.env }
  })
  proc.stdin.write(typeof envelope === "string" ? envelope : JSON.stringify(envelope))
  proc.stdin.end()
  const seen = new Set<string>()
  const waiters: Array<{ type: string; resolve: () => void }> = []
  let stdout = ""
  const readStdout = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stdout) {
      stdout += decoder.decode(chunk, { stream: true })
      for (const line of stdout.split("\n").slice(0, -1)) {
        try {
          const type = (JSON.parse(line) as { type: string }).type
          seen.add(type)
          for (const w of waiters.filter((w) => w.type === type)) w.resolve()
        } catch {
          // not JSON: the test asserting on lines will say so
        }
      }
    }
  })()
  const done = (async (): Promise<ChildRun> => {
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited, readStdout])
    const lines = stdout.split("\n").filter((l) => l !== "")
    const events = lines
      .map((l) => JSON.parse(l) as { type: string })
      .filter((e) => e.type !== "job.refused")
      .map((e) => decodeEvent(e))
    return { code, lines, events, stdout, stderr }
  })()
  // Rejects when the child ends without printing the event, so a caller never waits forever.
  const waitFor = (type: JobEvent["type"]) =>
    seen.has(type)
      ? Promise.resolve()
      : Promise.race([
          new Promise<void>((resolve) => waiters.push({ type, resolve })),
          done.then((run) => {
            if (!seen.has(type)) throw new Error(`the job child exited (${run.code}) without a ${type} event: ${run.stderr.slice(0, 500)}`)
          })
        ])
  return { proc, waitFor, done }
}

/** Runs the job child to the end. */
export const runJobChild = (envelope: unknown, options: ChildOptions = {}): Promise<ChildRun> => startJobChild(envelope, options).done

/** A job workspace on disk: root with `src/` (read-only), `WORKSPACE.md`, and `out/`. */
export interface JobDirs {
  readonly root: string
  readonly src: string
  readonly out: string
  readonly cleanup: () => void
}

export const createJobDirs = (files: Record<string, string> = {}): JobDirs => {
  // Inside the test job root, so the same workspace can also be sent to the API.
  const root = realpathSync(mkdtempSync(join(testJobRoot(), "kintsugi-job-")))
  const src = join(root, "src")
  const out = join(root, "out")
  mkdirSync(src, { recursive: true })
  mkdirSync(out, { recursive: true })
  for (const [rel, text] of Object.entries(files)) {
    const p = join(src, rel)
    mkdirSync(dirname(p), { recursive: true })
    writeFileSync(p, text)
  }
  return { root, src, out, cleanup: () => rmSync(root, { recursive: true, force: true }) }
}

export interface JobOverrides {
  readonly agent?: Record<string, unknown>
  readonly limits?: Record<string, unknown>
  readonly model?: Record<string, unknown>
  readonly task?: string
  readonly metadata?: Record<string, unknown>
}

/** A job spec over `dirs` naming the scripted provider's model. */
export const createJob = (dirs: JobDirs, o: JobOverrides = {}) => ({
  agent: {
    id: "reader",
    version: 3,
    instructions: "You are a careful code reader.\nAnswer briefly.",
    skills: [{ name: "cite-lines", content: "Cite file:line for every claim." }],
    ...o.agent
  },
  task: o.task ?? "What does src/a.ts export?",
  model: { provider: "scripted", id: "scripted-model", ...o.model },
  workspace: { root: dirs.root, readOnly: [dirs.src], outDir: dirs.out },
  limits: { timeoutSec: 30, idleTimeoutSec: 10, maxTurns: 20, ...o.limits },
  metadata: o.metadata ?? { projectId: "p-1", trigger: "test" }
})

/** `createJob` through the job child's decoder: the typed spec `AgentRuntime.start` takes. */
export const createJobSpec = (dirs: JobDirs, o: JobOverrides = {}): JobSpec =>
  Either.getOrThrowWith(decodeJob(createJob(dirs, o)), (f) => new Error(`createJobSpec: ${JSON.stringify(f.problems)}`))

export type ScriptedApi = "openai-completions" | "anthropic-messages"

/** The provider config for a scripted server. */
export const createProvider = (server: ScriptedServer, api: ScriptedApi, model: Record<string, unknown> = {}) => ({
  id: "scripted",
  api,
  baseUrl: server.baseUrl,
  apiKey: TEST_API_KEY,
  models: [{ id: "scripted-model", contextWindow: 128_000, maxTokens: 8_192, cost: MODEL_PRICES, ...model }]
})

export const createEnvelope = (job: unknown, providers: ReadonlyArray<unknown>) => ({ job, providers })

/** Writes a file under a directory (for path-case fixtures outside the workspace). */
export const writeFile = (path: string, text: string) => {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}
