/**
 * `kintsugi run-job`: the kernel as a process (ARCHITECTURE §5). One JSON envelope on stdin; one
 * JobEvent per line on stdout and nothing else; exit 0 after job.completed, 1 after job.failed, 2
 * when refused (one `job.refused` line). SIGTERM/SIGINT abort the job. Keys live only in memory.
 */
import { Config, Effect, Either, Exit, Option, Schema, Stream } from "effect"
import { AgentRuntime, JobEnvelope, JobRefused } from "./contract/AgentRuntime.ts"
import type { JobEvent } from "./contract/JobEvent.ts"
import { decodeAll, type Problem } from "./contract/Problem.ts"
import { armJobChildExit, exitJob, failJob, onAbortSignal, writeEvent, writeLine, writeRefusal } from "./jobChildExit.ts"
import { decodeJob } from "./kernel/decodeJob.ts"
import { jobProblems, makeAgentRuntime, type KernelConfig } from "./kernel/Kernel.ts"
import { dieWithParent } from "./kernel/dieWithParent.ts"
import { makeNonDumpable } from "./kernel/nonDumpable.ts"
import { startedAhead } from "./jobChildArgs.ts"
import { warmUpSteps, warmUpWhileWaiting } from "./jobChildWarmUp.ts"
import { RUN_PREFIX_VAR, validRunPrefix } from "./tools/processTree.ts"
import { makeSandbox, type SandboxConfig, sandboxConfig } from "./tools/Sandbox.ts"

/** What a job child takes from its environment (not from the envelope): read before the envelope. */
interface ChildSettings {
  readonly sandbox: SandboxConfig
  readonly runTokenPrefix?: string
}

const childSettings = (): ChildSettings => ({
  sandbox: Effect.runSync(sandboxConfig),
  ...validRunPrefix(Effect.runSync(Config.string(RUN_PREFIX_VAR).pipe(Config.option, Effect.map(Option.getOrUndefined), Effect.orElseSucceed(() => undefined))))
})

const refuse = (problems: ReadonlyArray<Problem>): number => {
  writeRefusal(JSON.stringify({ type: "job.refused", problems }))
  return 2
}

/** The job's problems with their document path, as the refusal line names them. */
const inJob = (problems: ReadonlyArray<Problem>): Array<Problem> =>
  problems.map((p) => ({ ...p, path: p.path.startsWith("providers") || p.path.startsWith("skillFiles") ? p.path : p.path === "(root)" ? "job" : `job.${p.path}` }))

/** The envelope's decoder, made once (a child started ahead has used it in its rehearsal). */
const decodeEnvelope = decodeAll(JobEnvelope)

/** The envelope with only its `job` read, so a bad envelope still reports the job's own problems. */
const JobOnly = Schema.Struct({ job: Schema.Unknown })

/** Runs one job from `stdin` text; returns the exit code. */
export const runJobChild = async (stdin: string, settings: ChildSettings = childSettings()): Promise<number> => {
  let doc: unknown
  try {
    doc = JSON.parse(stdin)
  } catch {
    return refuse([{ path: "(stdin)", message: "stdin is not one JSON document" }])
  }
  const envelope = decodeEnvelope(doc)
  if (Either.isLeft(envelope)) {
    // Report the job's own problems too, so one refusal lists everything.
    const job = Option.match(Schema.decodeUnknownOption(JobOnly)(doc), { onNone: () => undefined, onSome: (d) => d.job })
    const jobProblems = Either.match(decodeJob(job), { onLeft: (f) => inJob(f.problems), onRight: () => [] })
    return refuse([...envelope.left.filter((p) => !p.path.startsWith("job")), ...jobProblems])
  }
  const diagnostics = (line: string) => writeLine(2, line)
  // Each event goes to stdout as it is emitted, from the job's own fiber (job.started waits for nothing).
  const onEvent = (event: JobEvent): void => {
    try {
      writeEvent(event)
    } catch {
      diagnostics("run-job: internal error (stdout could not be written)")
      failJob("error", "the job process failed: internal error")
    }
  }
  const config: KernelConfig = {
    providers: envelope.right.providers,
    diagnostics,
    boundary: envelope.right.boundary,
    services: envelope.right.services,
    skillFiles: envelope.right.skillFiles,
    onEvent,
    ...settings
  }
  const decoded = decodeJob(envelope.right.job)
  if (Either.isLeft(decoded)) {
    // The environment's problems with the parts that did decode belong in the same refusal.
    const more = await Effect.runPromise(jobProblems(config, decoded.left.parts))
    return refuse(inJob([...decoded.left.problems, ...more]))
  }
  // The kernel's one service is built directly: no layer to build on the way to job.started.
  const program = Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const handle = yield* runtime.start(decoded.right)
    onAbortSignal(() => void Effect.runFork(handle.abort))
    // The job's fiber runs first: it writes job.started itself (onEvent) before the stream's reader is set up.
    yield* Effect.yieldNow()
    yield* Stream.runDrain(handle.events)
    const outcome = yield* handle.result
    return outcome._tag === "Completed" ? 0 : 1
  }).pipe(Effect.scoped, Effect.provideService(AgentRuntime, makeAgentRuntime(config, makeSandbox(settings.sandbox))))
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isSuccess(exit)) return exit.value
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (failure instanceof JobRefused) return refuse(inJob(failure.problems))
  diagnostics(`run-job: internal error (${exit.cause._tag === "Die" ? "a defect" : exit.cause._tag})`)
  return failJob("error", "the job process failed: internal error")
}

/**
 * The process entry: every exit ends with its terminal event (jobChildExit.ts); non-dumpable before
 * any secret is read, dies with its parent, then stdin (a child started ahead warms up while it waits
 * for its envelope: jobChildWarmUp.ts), then exit. `entryStdin` is the read the entry started
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
