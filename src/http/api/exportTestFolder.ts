/**
 * The folder `kintsugi jobs export-test` writes for a completed job with a transcript: the agent package
 * at the job's version, the workspace files the job read (its `source.read` events; capped), the model's
 * turns as scripted steps, the expected tool calls and outputs, and a `bun test` file replaying them
 * through `kintsugi-runtime/testing`. Files are read from the job's workspace as it is on disk now.
 */
import { Schema } from "effect"
import { lstatSync, readFileSync, realpathSync, statSync } from "node:fs"
import { isAbsolute, join, relative, sep } from "node:path"
import { serializeAgentPackage } from "../../agents/serializePackage.ts"
import type { AgentPackage } from "../../agents/packageSchema.ts"
import type { JobEvent } from "../../contract/JobEvent.ts"
import type { TranscriptTurn } from "../../job/Transcript.ts"
import { RUNTIME_VERSION } from "../../kernel/runtimeVersion.ts"
import { expectedOf, type RecordedJob, scriptOf, TurnNotReplayable } from "../../testing/recordedJob.ts"

/** Largest workspace file the export carries, and the most all of them may hold together (bytes). */
const EXPORT_FILE_BYTES = 256 * 1024
const EXPORT_TOTAL_BYTES = 4 * 1024 * 1024

/** The job cannot be exported as a test; `why` says what is missing. */
export class JobNotExportable extends Schema.TaggedError<JobNotExportable>()("JobNotExportable", {
  id: Schema.String,
  why: Schema.String
}) {
  override get message(): string {
    return `job "${this.id}" cannot be exported as a test: ${this.why}`
  }
}

/** One file of the export, by its path relative to the export folder. */
export interface ExportFile {
  readonly path: string
  readonly content: string
}

export interface ExportInput {
  readonly job: {
    readonly id: string
    readonly agentName: string
    readonly agentVersion: number
    readonly task: string
    readonly workspace: { readonly root: string; readonly readOnly: ReadonlyArray<string>; readonly outDir: string }
  }
  readonly pkg: AgentPackage
  /** The job's model window, when its provider still configures the model. */
  readonly model: { readonly contextWindow: number; readonly maxTokens: number } | undefined
  /** The custom shared skills the package names (name → SKILL.md body); built-in ones ship with the runtime. */
  readonly sharedSkills: ReadonlyMap<string, string>
  readonly turns: ReadonlyArray<TranscriptTurn>
  readonly events: ReadonlyArray<JobEvent>
}

const inside = (parent: string, child: string) => {
  const rel = relative(parent, child)
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel))
}
const toPosix = (path: string) => path.split(sep).join("/")
const utf8 = new TextDecoder("utf-8", { fatal: true })

/** The workspace files the job read: each once, inside a read-only entry, text, and within the caps; the rest named in `notes`. */
const readFiles = (
  workspace: ExportInput["job"]["workspace"],
  events: ReadonlyArray<JobEvent>
): { files: Array<ExportFile>; notes: Array<string> } => {
  const paths = [...new Set(events.flatMap((e) => (e.type === "source.read" ? [e.path] : [])))].sort()
  const entries = workspace.readOnly.flatMap((p) => {
    try {
      return [realpathSync(p)]
    } catch {
      return []
    }
  })
  const files: Array<ExportFile> = []
  const notes: Array<string> = []
  let total = 0
  for (const path of paths) {
    const full = join(workspace.root, path)
    let real: string
    try {
      real = realpathSync(full)
    } catch {
      notes.push(`workspace/${path}: left out (no longer on disk)`)
      continue
    }
    if (!entries.some((entry) => inside(entry, real)) || !statSync(real).isFile()) {
      notes.push(`workspace/${path}: left out (not a file inside a read-only entry of the job)`)
      continue
    }
    const size = statSync(real).size
    if (size > EXPORT_FILE_BYTES) {
      notes.push(`workspace/${path}: left out (${size} bytes, over the ${EXPORT_FILE_BYTES}-byte cap per file)`)
      continue
    }
    if (total + size > EXPORT_TOTAL_BYTES) {
      notes.push(`workspace/${path}: left out (the export's ${EXPORT_TOTAL_BYTES}-byte cap for workspace files was reached)`)
      continue
    }
    let content: string
    try {
      content = utf8.decode(readFileSync(real))
    } catch {
      notes.push(`workspace/${path}: left out (not UTF-8 text)`)
      continue
    }
    total += size
    files.push({ path: `workspace/${path}`, content })
  }
  return { files, notes }
}

/** The read-only entries relative to the workspace root (an entry outside it cannot be laid out and is noted). */
const layout = (workspace: ExportInput["job"]["workspace"], notes: Array<string>): RecordedJob["workspace"] => {
  const readOnly = workspace.readOnly.flatMap((p) => {
    if (!inside(workspace.root, p)) {
      notes.push("a read-only entry outside the workspace root: left out (the replay lays out the root only)")
      return []
    }
    const path = toPosix(relative(workspace.root, p)) || "."
    try {
      return [{ path, kind: lstatSync(p).isFile() ? ("file" as const) : ("dir" as const) }]
    } catch {
      notes.push(`read-only entry ${path}: no longer on disk; the replay makes it an empty folder`)
      return [{ path, kind: "dir" as const }]
    }
  })
  const out = relative(workspace.root, workspace.outDir)
  return { folder: "workspace", readOnly, outDir: inside(workspace.root, workspace.outDir) && out !== "" ? toPosix(out) : "out" }
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`

/** The package the exported test imports (the text of a generated file, not an import of this module). */
const TESTING_ENTRY = "kintsugi-runtime/testing"

const testFile = (job: ExportInput["job"]) => `import { setDefaultTimeout, test } from "bun:test"
import { expectSameRun, replayJob } from ${JSON.stringify(TESTING_ENTRY)}

setDefaultTimeout(120_000)

// Job ${job.id} of ${job.agentName} v${job.agentVersion}, exported by \`kintsugi jobs export-test\`: the agent
// package in agent/, the files the job read in workspace/, the model's answers in model.json.
test(${JSON.stringify(`job ${job.id} of ${job.agentName} v${job.agentVersion} replays: the same tool calls, outputs and summary`)}, async () => {
  const run = await replayJob(import.meta.dir)
  expectSameRun(run, await Bun.file(\`\${import.meta.dir}/expected.json\`).json())
})
`

const readme = (job: ExportInput["job"], notes: ReadonlyArray<string>) =>
  [
    `# Job ${job.id}: ${job.agentName} v${job.agentVersion}, as a test`,
    "",
    "`bun install` (package.json names kintsugi-runtime at the server's version: point it at your registry's",
    "or a `file:` tarball of the package), then `bun test`: `job.test.ts` runs the agent",
    "package in `agent/` on the files in `workspace/` against a scripted model answering from `model.json`",
    "and checks the tool calls, outputs and summary in `expected.json` (what the job recorded).",
    "",
    "Only the files the job read are in `workspace/`, as they were on disk at export time; a tool call",
    "that lists or searches the workspace sees only them (the script, not the results, decides the calls).",
    "",
    ...(notes.length === 0 ? ["Nothing was left out."] : ["## Left out", "", ...notes.map((n) => `- ${n}`)]),
    ""
  ].join("\n")

/** Every file of the export, or why the job cannot be one (JobNotExportable's `why`). */
export const exportFolder = (input: ExportInput): { files: Array<ExportFile>; notes: Array<string> } | { why: string } => {
  const { job } = input
  if (input.turns.length === 0)
    return { why: "it kept no transcript (its project's transcripts setting was off, or the transcript was deleted at retention)" }
  let steps: ReturnType<typeof scriptOf>
  try {
    steps = scriptOf(input.turns)
  } catch (e) {
    if (e instanceof TurnNotReplayable) return { why: e.message }
    throw e
  }
  const expected = expectedOf(input.events)
  if (expected === undefined) return { why: "its events hold no job.completed" }
  const { files: workspaceFiles, notes } = readFiles(job.workspace, input.events)
  const recorded: RecordedJob = {
    jobId: job.id,
    agent: { folder: "agent", name: job.agentName, version: job.agentVersion },
    task: job.task,
    workspace: layout(job.workspace, notes),
    modelCalls: steps.length,
    ...(input.model === undefined ? {} : { model: { contextWindow: input.model.contextWindow, maxTokens: input.model.maxTokens } }),
    ...(input.sharedSkills.size === 0 ? {} : { sharedSkills: "shared-skills" })
  }
  const files: Array<ExportFile> = [
    {
      path: "package.json",
      content: json({
        name: `kintsugi-job-${job.id.toLowerCase().replace(/[^a-z0-9-]/g, "-")}`,
        private: true,
        type: "module",
        scripts: { test: "bun test" },
        devDependencies: { "kintsugi-runtime": RUNTIME_VERSION }
      })
    },
    { path: "README.md", content: readme(job, notes) },
    { path: "job.json", content: json(recorded) },
    { path: "model.json", content: json(steps) },
    { path: "expected.json", content: json(expected) },
    { path: "job.test.ts", content: testFile(job) },
    ...serializeAgentPackage(input.pkg).map((f) => ({ path: `agent/${f.path}`, content: f.content })),
    ...[...input.sharedSkills].map(([name, content]) => ({ path: `shared-skills/${name}.md`, content })),
    ...workspaceFiles
  ]
  return { files, notes }
}
