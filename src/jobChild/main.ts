/**
 * `kintsugi run-job`: the kernel as a process (ARCHITECTURE §5). One JSON envelope on stdin; one
 * JobEvent per line on stdout and nothing else; exit 0 after job.completed, 1 after job.failed, 2
 * when refused (one `job.refused` line). The job child is one Effect program, run once; SIGTERM/SIGINT
 * interrupt its fiber, which aborts the job. Keys live only in memory.
 */
import { Config, Effect, Exit, FiberId, Option } from "effect"
import type { JobEvent } from "../contract/JobEvent.ts"
import { dieWithParent } from "../kernel/dieWithParent.ts"
import { makeNonDumpable } from "../kernel/nonDumpable.ts"
import { RUN_PREFIX_VAR, validRunPrefix } from "../tools/processTree.ts"
import { sandboxConfig } from "../tools/Sandbox.ts"
import { startedAhead } from "./args.ts"
import { type JobChildExit, writeLine } from "./exit.ts"
import { type ChildSettings, runEnvelope, type RunOutput } from "./run.ts"
import { warmUpSteps, warmUpWhileWaiting } from "./warmUp.ts"

/** What the child takes from its environment (Config), read before the envelope. */
const childSettings: Effect.Effect<ChildSettings> = Effect.gen(function* () {
  const sandbox = yield* sandboxConfig
  const prefix = yield* Config.string(RUN_PREFIX_VAR).pipe(
    Config.option,
    Effect.map(Option.getOrUndefined),
    Effect.orElseSucceed(() => undefined)
  )
  return { sandbox, ...validRunPrefix(prefix) }
})

const diagnostics = (line: string) => writeLine(2, line)

/** The job's lines on stdout through the exit guard (one event per line, as emitted), diagnostics on stderr. */
const stdout = (exit: JobChildExit): RunOutput => ({
  event: (event: JobEvent): void => {
    try {
      exit.writeEvent(event)
    } catch {
      diagnostics("run-job: internal error (stdout could not be written)")
      exit.failJob("error", "the job process failed: internal error")
    }
  },
  refusal: exit.writeRefusal,
  diagnostics
})

/**
 * The job child from its loaded kernel to its exit code: non-dumpable before any secret is read, dies
 * with its parent, then stdin (a child started ahead warms up while it waits for its envelope:
 * warmUp.ts), then the job. An internal error is a failed job.
 */
const jobChild = (stdin: Promise<string>, exit: JobChildExit): Effect.Effect<number> =>
  Effect.gen(function* () {
    makeNonDumpable()
    dieWithParent()
    const settings = yield* childSettings
    if (startedAhead(process.argv.slice(2))) yield* warmUpWhileWaiting(stdin, warmUpSteps(settings.sandbox))
    const text = yield* Effect.promise(() => stdin)
    const result = yield* runEnvelope(text, settings, stdout(exit))
    if (result._tag === "Exit") return result.code
    diagnostics(`run-job: internal error (${result.what})`)
    return exit.failJob("error", "the job process failed: internal error")
  })

/**
 * Runs the job child on `stdin` (the read the entry started: exit.ts runGuardedJobChild) under the
 * armed exit guard, and exits with its code. A signal interrupts the program's fiber: a running job
 * ends as `aborted` (its terminal event written), one not started yet fails as `aborted`.
 */
export const jobChildMain = (stdin: Promise<string>, exit: JobChildExit): void => {
  const fiber = Effect.runFork(jobChild(stdin, exit))
  exit.onAbortSignal(() => fiber.unsafeInterruptAsFork(FiberId.none))
  fiber.addObserver((done) => {
    if (Exit.isSuccess(done)) return exit.exitJob(done.value)
    if (Exit.isInterrupted(done)) return exit.failJob("aborted", "the job was aborted before it started")
    diagnostics("run-job: internal error (a defect)")
    return exit.failJob("error", "the job process failed: internal error")
  })
}
