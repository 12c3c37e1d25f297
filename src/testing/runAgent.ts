/**
 * Runs an agent package (folder, `.zip` or `<name>.md`) on a fixture workspace through the real job
 * child (`bun src/cli.ts run-job`, envelope on stdin) against a scripted model server.
 */
import { Either, Schema } from "effect"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, relative, sep } from "node:path"
import { parseAgentPackage } from "../agents/AgentPackage.ts"
import { builtinSkills } from "../agents/builtins.ts"
import { loadPackageFiles } from "../agents/loadPackageFiles.ts"
import { toAgentDefinition, validateAgent } from "../agents/validateAgent.ts"
import type { AgentDefinition, ThinkingLevel } from "../contract/AgentDefinition.ts"
import { JobEvent, JobRefusedLine, type TerminalEvent } from "../contract/JobEvent.ts"
import type { JobSpec, Limits } from "../contract/JobSpec.ts"
import type { Problem } from "../contract/Problem.ts"
import type { ProviderModel } from "../contract/ProviderConfig.ts"
import { JOB_CHILD_JIT_ENV } from "../jobChild/args.ts"
import type { ScriptedServer } from "./scriptedSteps.ts"

/** The job child alone (`kintsugi run-job` without the command line): it imports the kernel and nothing of the server. */
const JOB_CHILD = join(import.meta.dir, "..", "jobChild", "entry.ts")
/** The key the job child sends the scripted server; a test can look for it where it must not be. */
export const SCRIPTED_API_KEY = "sk-kintsugi-testing-0123456789abcdef"
const PROVIDER_ID = "scripted"
const MODEL_ID = "scripted-model"

export interface RunAgentOptions {
  /** The agent package: a folder, a `<name>.md` or a `.zip`. */
  readonly agent: string
  readonly task: string
  /** The scripted model server the job calls (`startOpenAIServer` / `startAnthropicServer`). */
  readonly server: ScriptedServer
  /** The codebase the job reads, at `src/` in the workspace: a folder (copied) or files by relative path. */
  readonly fixture: string | Readonly<Record<string, string>>
  /** `WORKSPACE.md`, the job's guide: a read-only entry beside `src/` when given. */
  readonly guide?: string
  /** Default: timeoutSec 60, idleTimeoutSec 30, maxTurns 50. */
  readonly limits?: Partial<Limits>
  /** The job's thinking level (as a binding sets it); default: the agent's own. */
  readonly thinking?: ThinkingLevel
  /** The scripted model's config; default: 128k window, 8k output, no reasoning, no prices. */
  readonly model?: Partial<Omit<ProviderModel, "id">>
  /** Shared skills the agent may name, besides the built-in ones (name → SKILL.md body). */
  readonly sharedSkills?: Readonly<Record<string, string>>
  /** Variables added to the job child's environment (e.g. `KINTSUGI_SANDBOX`). */
  readonly env?: Readonly<Record<string, string>>
  /** Where the temporary workspace is made (default: the OS temp dir); it is removed after the run. */
  readonly tmpDir?: string
}

/** What one run produced. */
export interface AgentRun {
  /** 0 completed, 1 failed, 2 refused. */
  readonly exitCode: number
  /** Every event of the job, in order (empty when refused). */
  readonly events: ReadonlyArray<JobEvent>
  /** `job.completed` or `job.failed`; undefined when the job was refused. */
  readonly terminal: TerminalEvent | undefined
  /** Every problem when the job child refused the job. */
  readonly refused: ReadonlyArray<Problem> | undefined
  /** Every file the job left in its output directory, by path relative to it, as UTF-8 text. */
  readonly outputs: Readonly<Record<string, string>>
  /** The job child's diagnostics (redacted by the kernel). */
  readonly stderr: string
  /** The job as sent, for assertions on what the agent became. */
  readonly job: JobSpec
}

/** The package did not pass the format and installation checks; lists every problem. */
export class AgentPackageInvalid extends Error {
  constructor(
    readonly target: string,
    readonly problems: ReadonlyArray<Problem>
  ) {
    super(`${target} is not a valid agent package:\n${problems.map((p) => `  ${p.path}: ${p.message}`).join("\n")}`)
    this.name = "AgentPackageInvalid"
  }
}

/**
 * The job's AgentDefinition for a package on disk, as the worker would build it (version 1): every
 * format and installation check runs first. Shared skills: the built-in ones plus `sharedSkills`.
 * Throws `AgentPackageInvalid` with every problem.
 */
export const loadAgentDefinition = async (
  target: string,
  sharedSkills: Readonly<Record<string, string>> = {}
): Promise<AgentDefinition> => {
  const loaded = await loadPackageFiles(target)
  if ("usage" in loaded) throw new AgentPackageInvalid(target, [{ path: "(package)", message: loaded.usage }])
  const parsed = parseAgentPackage(loaded.files)
  const problems = [...loaded.problems, ...(Either.isLeft(parsed) ? parsed.left : [])]
  const skills = new Map([...[...builtinSkills().values()].map((s) => [s.name, s.content] as const), ...Object.entries(sharedSkills)])
  if (Either.isRight(parsed)) problems.push(...validateAgent(parsed.right, { sharedSkills: new Set(skills.keys()) }))
  if (problems.length > 0 || Either.isLeft(parsed)) throw new AgentPackageInvalid(target, problems)
  return toAgentDefinition(parsed.right, { version: 1, sharedSkills: skills })
}

/** Only what the child needs (and the worker's JIT settings for it): no host variables, so no host secret reaches the job (PATH, HOME and the sandbox settings are the test process's own, from process.env). */
const childEnv = (extra: Readonly<Record<string, string>>): Record<string, string> => ({
  ...JOB_CHILD_JIT_ENV,
  PATH: process.env["PATH"] ?? "/usr/bin:/bin",
  HOME: process.env["HOME"] ?? "/tmp",
  NO_PROXY: "127.0.0.1,localhost",
  KINTSUGI_SANDBOX: process.env["KINTSUGI_SANDBOX"] ?? "auto",
  ...(process.env["KINTSUGI_ALLOW_UNCONFINED_ROOT"] === undefined
    ? {}
    : { KINTSUGI_ALLOW_UNCONFINED_ROOT: process.env["KINTSUGI_ALLOW_UNCONFINED_ROOT"] }),
  ...extra
})

const writeFixture = (src: string, fixture: RunAgentOptions["fixture"]) => {
  if (typeof fixture === "string") {
    cpSync(fixture, src, { recursive: true, verbatimSymlinks: true })
    return
  }
  mkdirSync(src, { recursive: true })
  for (const [rel, text] of Object.entries(fixture)) {
    const path = join(src, rel)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, text)
  }
}

const readOutputs = (out: string): Record<string, string> => {
  const files: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) files[relative(out, path).split(sep).join("/")] = readFileSync(path, "utf8")
    }
  }
  walk(out)
  return files
}

const decodeEvent = Schema.decodeUnknownSync(JobEvent)
const decodeRefusal = Schema.decodeUnknownSync(JobRefusedLine)

const parseStdout = (stdout: string): { events: Array<JobEvent>; refused: ReadonlyArray<Problem> | undefined } => {
  const events: Array<JobEvent> = []
  let refused: ReadonlyArray<Problem> | undefined
  for (const line of stdout.split("\n").filter((l) => l !== "")) {
    let doc: unknown
    try {
      doc = JSON.parse(line)
    } catch {
      throw new Error(`the job child printed a line that is not JSON: ${line.slice(0, 200)}`)
    }
    if (typeof doc === "object" && doc !== null && "type" in doc && doc.type === "job.refused") refused = decodeRefusal(doc).problems
    else events.push(decodeEvent(doc))
  }
  return { events, refused }
}

/**
 * Runs `job` (its workspace laid out already) in the job child, with a provider pointing at
 * `options.server`, and returns its events and the files in its output directory.
 */
export const runJobSpec = async (job: JobSpec, options: Pick<RunAgentOptions, "server" | "model" | "env">): Promise<AgentRun> => {
  const provider = {
    id: job.model.provider,
    api: options.server.api ?? "openai-completions",
    baseUrl: options.server.baseUrl,
    apiKey: SCRIPTED_API_KEY,
    models: [{ id: job.model.id, contextWindow: 128_000, maxTokens: 8_192, ...options.model }]
  }
  const proc = Bun.spawn([process.execPath, JOB_CHILD], {
    stdin: new TextEncoder().encode(JSON.stringify({ job, providers: [provider] })),
    stdout: "pipe",
    stderr: "pipe",
    env: childEnv(options.env ?? {})
  })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  const { events, refused } = parseStdout(stdout)
  const last = events.at(-1)
  const terminal = last?.type === "job.completed" || last?.type === "job.failed" ? last : undefined
  return { exitCode, events, terminal, refused, outputs: readOutputs(job.workspace.outDir), stderr, job }
}

/**
 * Runs the agent once: builds its definition from the package, lays out a workspace (`src/` read-only,
 * optional `WORKSPACE.md`, `out/` as the output directory) in a fresh temp dir, sends the envelope to
 * `bun src/cli.ts run-job` with a provider pointing at `server`, and returns the events and the files
 * written. The workspace is removed afterwards. Throws `AgentPackageInvalid` for a broken package.
 */
export const runAgent = async (options: RunAgentOptions): Promise<AgentRun> => {
  const agent = await loadAgentDefinition(options.agent, options.sharedSkills)
  const root = realpathSync(mkdtempSync(join(options.tmpDir ?? tmpdir(), "kintsugi-agent-")))
  try {
    const src = join(root, "src")
    const out = join(root, "out")
    writeFixture(src, options.fixture)
    mkdirSync(out)
    const readOnly = [src]
    if (options.guide !== undefined) {
      writeFileSync(join(root, "WORKSPACE.md"), options.guide)
      readOnly.push(join(root, "WORKSPACE.md"))
    }
    const job: JobSpec = {
      agent,
      task: options.task,
      model: { provider: PROVIDER_ID, id: MODEL_ID, ...(options.thinking === undefined ? {} : { thinking: options.thinking }) },
      workspace: { root, readOnly, outDir: out },
      limits: { timeoutSec: 60, idleTimeoutSec: 30, maxTurns: 50, ...options.limits },
      metadata: { trigger: "kintsugi-runtime/testing" }
    }
    return await runJobSpec(job, options)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
