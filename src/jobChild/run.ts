/**
 * One envelope, from its text to the job's end: parse, decode, the kernel's checks and the job, with
 * its lines going where `output` says. The job child runs it on its stdin with its stdout as output
 * (jobChild/main.ts); a child started ahead runs it on its own warm-up document with an output that drops
 * every line (jobChild/warmUp.ts), so the path a job takes from its envelope's bytes to `job.started`
 * (the same decoders on objects of JSON.parse, the same program, each event encoded) has run before.
 */
import { Effect, Either, Exit, Option, Schema, Stream } from "effect"
import { AgentRuntime, JobEnvelope, JobRefused } from "../contract/AgentRuntime.ts"
import type { JobEvent } from "../contract/JobEvent.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { decodeJob } from "../kernel/decodeJob.ts"
import { jobProblems, makeAgentRuntime, type KernelConfig, type MakeLlm } from "../kernel/Kernel.ts"
import { makeSandbox, type SandboxConfig } from "../tools/Sandbox.ts"

/** What a job child takes from its environment (not from the envelope): read before the envelope. */
export interface ChildSettings {
  readonly sandbox: SandboxConfig
  readonly runTokenPrefix?: string
}

/** Where a run's lines go. None of these may throw. */
export interface RunOutput {
  /** Each event as it is emitted, from the job's own fiber (job.started waits for no stream reader). */
  readonly event: (event: JobEvent) => void
  /** The one `job.refused` line of a refused envelope. */
  readonly refusal: (line: string) => void
  /** Diagnostics (never secrets: the kernel redacts them). */
  readonly diagnostics: (line: string) => void
}

/** How a run ended: the exit code its terminal line calls for, or an internal error (nothing written yet says so). */
export type RunResult = { readonly _tag: "Exit"; readonly code: number } | { readonly _tag: "Internal"; readonly what: string }

const exitWith = (code: number): RunResult => ({ _tag: "Exit", code })

/** The envelope's decoder, made once (a child started ahead has used it in its rehearsals). */
const decodeEnvelope = decodeAll(JobEnvelope)

/** The envelope with only its `job` read, so a bad envelope still reports the job's own problems. */
const JobOnly = Schema.Struct({ job: Schema.Unknown })

/** The job's problems with their document path, as the refusal line names them. */
const inJob = (problems: ReadonlyArray<Problem>): Array<Problem> =>
  problems.map((p) => ({
    ...p,
    path: p.path.startsWith("providers") || p.path.startsWith("skillFiles") ? p.path : p.path === "(root)" ? "job" : `job.${p.path}`
  }))

/** The envelope's text as JSON, or the refusal's problem. */
const parse = (text: string): Either.Either<unknown, Problem> =>
  Either.try({ try: () => JSON.parse(text) as unknown, catch: () => ({ path: "(stdin)", message: "stdin is not one JSON document" }) })

/**
 * Runs the job of one envelope's text with `settings`, its lines to `output`; `llm` builds the job's
 * model service (default: pi-ai's). Interrupting it aborts the job: its `aborted` end goes to
 * `output.event` before the interruption completes.
 */
export const runEnvelope = (text: string, settings: ChildSettings, output: RunOutput, llm?: MakeLlm): Effect.Effect<RunResult> =>
  Effect.gen(function* () {
    const refuse = (problems: ReadonlyArray<Problem>): RunResult => {
      output.refusal(JSON.stringify({ type: "job.refused", problems }))
      return exitWith(2)
    }
    const doc = parse(text)
    if (Either.isLeft(doc)) return refuse([doc.left])
    const envelope = decodeEnvelope(doc.right)
    if (Either.isLeft(envelope)) {
      // Report the job's own problems too, so one refusal lists everything.
      const job = Option.match(Schema.decodeUnknownOption(JobOnly)(doc.right), { onNone: () => undefined, onSome: (d) => d.job })
      const jobProblems = Either.match(decodeJob(job), { onLeft: (f) => inJob(f.problems), onRight: () => [] })
      return refuse([...envelope.left.filter((p) => !p.path.startsWith("job")), ...jobProblems])
    }
    const config: KernelConfig = {
      providers: envelope.right.providers,
      diagnostics: output.diagnostics,
      boundary: envelope.right.boundary,
      services: envelope.right.services,
      skillFiles: envelope.right.skillFiles,
      onEvent: output.event,
      ...settings
    }
    const decoded = decodeJob(envelope.right.job)
    if (Either.isLeft(decoded)) {
      // The environment's problems with the parts that did decode belong in the same refusal.
      const more = yield* jobProblems(config, decoded.left.parts)
      return refuse(inJob([...decoded.left.problems, ...more]))
    }
    // The kernel's one service is built directly: no layer to build on the way to job.started.
    const exit = yield* Effect.gen(function* () {
      const runtime = yield* AgentRuntime
      const handle = yield* runtime.start(decoded.right)
      // The job's fiber runs first: it writes job.started itself (output.event) before the stream's reader is set up.
      yield* Effect.yieldNow()
      yield* Stream.runDrain(handle.events)
      const outcome = yield* handle.result
      return outcome._tag === "Completed" ? 0 : 1
    }).pipe(Effect.scoped, Effect.provideService(AgentRuntime, makeAgentRuntime(config, makeSandbox(settings.sandbox), llm)), Effect.exit)
    if (Exit.isSuccess(exit)) return exitWith(exit.value)
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    if (failure instanceof JobRefused) return refuse(inJob(failure.problems))
    return { _tag: "Internal", what: exit.cause._tag === "Die" ? "a defect" : exit.cause._tag } satisfies RunResult
  })
