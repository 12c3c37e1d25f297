/**
 * `kintsugi run-job`: the kernel as a process (ARCHITECTURE §5). One JSON envelope on stdin; one
 * JobEvent per line on stdout and nothing else; exit 0 after job.completed, 1 after job.failed, 2
 * when refused (one `job.refused` line). SIGTERM/SIGINT abort the job. Keys live only in memory.
 */
import { Config, Effect, Option } from "effect"
import type { JobEvent } from "../contract/JobEvent.ts"
import { armJobChildExit, exitJob, failJob, onAbortSignal, writeEvent, writeLine, writeRefusal } from "./exit.ts"
import { type ChildSettings, runEnvelope, type RunOutput } from "./run.ts"
import { dieWithParent } from "../kernel/dieWithParent.ts"
import { makeNonDumpable } from "../kernel/nonDumpable.ts"
import { startedAhead } from "./args.ts"
import { warmUpSteps, warmUpWhileWaiting } from "./warmUp.ts"
import { RUN_PREFIX_VAR, validRunPrefix } from "../tools/processTree.ts"
import { sandboxConfig } from "../tools/Sandbox.ts"

const childSettings = (): ChildSettings => ({
  sandbox: Effect.runSync(sandboxConfig),
  ...validRunPrefix(Effect.runSync(Config.string(RUN_PREFIX_VAR).pipe(Config.option, Effect.map(Option.getOrUndefined), Effect.orElseSucceed(() => undefined))))
})

const diagnostics = (line: string) => writeLine(2, line)

/** The job's lines on stdout (one event per line, as emitted), diagnostics on stderr. */
const stdout: RunOutput = {
  event: (event: JobEvent): void => {
    try {
      writeEvent(event)
    } catch {
      diagnostics("run-job: internal error (stdout could not be written)")
      failJob("error", "the job process failed: internal error")
    }
  },
  refusal: writeRefusal,
  diagnostics
}

/** Runs one job from `stdin` text; returns the exit code. */
export const runJobChild = async (stdin: string, settings: ChildSettings = childSettings()): Promise<number> => {
  const result = await runEnvelope(stdin, settings, stdout, { onStarted: onAbortSignal })
  if (result._tag === "Exit") return result.code
  diagnostics(`run-job: internal error (${result.what})`)
  return failJob("error", "the job process failed: internal error")
}

/**
 * The process entry: every exit ends with its terminal event (jobChild/exit.ts); non-dumpable before
 * any secret is read, dies with its parent, then stdin (a child started ahead warms up while it waits
 * for its envelope: jobChild/warmUp.ts), then exit. `entryStdin` is the read the entry started
 * (runGuardedJobChild), else stdin is read from here.
 */
export const jobChildMain = async (entryStdin?: Promise<string>): Promise<never> => {
  armJobChildExit()
  makeNonDumpable()
  dieWithParent()
  const stdin = entryStdin ?? Bun.stdin.text()
  const settings = childSettings()
  if (startedAhead(process.argv.slice(2))) await warmUpWhileWaiting(stdin, warmUpSteps(settings.sandbox))
  const code = await runJobChild(await stdin, settings)
  return exitJob(code)
}
