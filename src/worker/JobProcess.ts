/**
 * One job child: `kintsugi run-job` with the envelope on stdin (the only place secrets travel), its
 * NDJSON events handed over in order, its end reported as what the worker must record. A child that
 * dies without a terminal event (crash, SIGKILL, OOM) is a failure, never a job left running.
 */
import { Effect, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import type { JobEnvelope } from "../contract/AgentRuntime.ts"
import { JobEvent, JobRefusedLine } from "../contract/JobEvent.ts"
import { readStat, RUN_PREFIX_VAR, sweepRunPrefix } from "../tools/processTree.ts"
import type { Settlement } from "./JobStore.ts"

export const CLI_PATH = join(import.meta.dir, "..", "cli.ts")
/** After SIGTERM, how long a child gets to emit its `aborted` event before SIGKILL. */
export const ABORT_GRACE_MS = 10_000

const decodeEvent = Schema.decodeUnknownEither(JobEvent)
const decodeRefusal = Schema.decodeUnknownEither(JobRefusedLine)

/**
 * The child's environment: what it needs to run and reach providers, nothing of the server's (no
 * DATABASE_URL, no KINTSUGI_SECRET_KEY): secrets come on stdin only. KINTSUGI_SANDBOX tells it how to
 * confine shell and git.
 */
export const childEnvironment = (): Record<string, string> => {
  const keep = ["PATH", "HOME", "LANG", "TZ", "TMPDIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "KINTSUGI_SANDBOX", "KINTSUGI_ALLOW_UNCONFINED_ROOT"]
  const env: Record<string, string> = {}
  for (const k of keep) {
    const v = process.env[k]
    if (v !== undefined) env[k] = v
  }
  return env
}

export interface JobProcessHooks {
  /** Each event, in seq order; the next one waits until this settles. */
  readonly onEvent: (event: JobEvent) => Promise<void>
  /** Polled about once a second: true = end the job as aborted. */
  readonly abortRequested: () => Promise<boolean>
  /** Diagnostics from the child's stderr (the child redacts its own secrets). */
  readonly log: (line: string) => void
}

/** Runs the child to its end and returns how the job ended. Never fails: every end is a settlement. */
export const runJobProcess = (envelope: JobEnvelope, hooks: JobProcessHooks, entry: string = CLI_PATH): Effect.Effect<Settlement> =>
  Effect.promise(async (signal): Promise<Settlement> => {
    // Every process the job starts carries a run token with this prefix: after the child is gone,
    // whatever still carries it is swept (a SIGKILLed child cannot kill its own unconfined processes).
    const runPrefix = `${randomBytes(12).toString("hex")}-`
    const child = Bun.spawn(["bun", entry, "run-job"], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...childEnvironment(), [RUN_PREFIX_VAR]: runPrefix }
    })
    const childStart = readStat(child.pid)?.startTime
    child.stdin.write(JSON.stringify(envelope))
    await child.stdin.end()
    let terminal: Settlement | undefined
    let refused: string | undefined
    let aborting = false
    const abort = () => {
      if (aborting) return
      aborting = true
      child.kill("SIGTERM")
      setTimeout(() => child.kill("SIGKILL"), ABORT_GRACE_MS).unref()
    }
    signal.addEventListener("abort", abort, { once: true })
    const poll = setInterval(() => {
      void hooks.abortRequested().then((yes) => yes && abort(), () => undefined)
    }, 1000)
    const stderr = (async () => {
      for await (const line of readLines(child.stderr)) hooks.log(line)
    })()
    try {
      for await (const line of readLines(child.stdout)) {
        const parsed = safeJson(line)
        const event = decodeEvent(parsed)
        if (event._tag === "Right") {
          await hooks.onEvent(event.right)
          if (event.right.type === "job.completed") terminal = { status: "completed", summary: event.right.summary }
          if (event.right.type === "job.failed") terminal = { status: "failed", reason: event.right.reason, message: event.right.message }
          continue
        }
        const refusal = decodeRefusal(parsed)
        if (refusal._tag === "Right") refused = refusal.right.problems.map((p) => `${p.path}: ${p.message}`).join("; ")
        else hooks.log("job child printed a line that is not an event (ignored)")
      }
      const code = await child.exited
      await stderr
      if (terminal !== undefined) return terminal
      if (refused !== undefined) return { status: "failed", reason: "error", message: `the job was refused: ${refused}` }
      const how = child.signalCode !== null ? `was killed by ${child.signalCode}` : `exited with code ${code}`
      return { status: "failed", reason: aborting ? "aborted" : "error", message: `the job process ${how} before the job ended` }
    } finally {
      clearInterval(poll)
      signal.removeEventListener("abort", abort)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      await child.exited
      const survivors = await sweepRunPrefix(runPrefix, childStart)
      if (survivors.length > 0) hooks.log(`${survivors.length} process(es) of the job survived SIGKILL`)
    }
  })

const safeJson = (line: string): unknown => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true })
    let nl = buffer.indexOf("\n")
    while (nl !== -1) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      if (line !== "") yield line
      nl = buffer.indexOf("\n")
    }
  }
  if (buffer !== "") yield buffer
}
