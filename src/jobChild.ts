/**
 * `kintsugi run-job`: the kernel as a process (ARCHITECTURE §5). One JSON envelope on stdin; one
 * JobEvent per line on stdout and nothing else; exit 0 after job.completed, 1 after job.failed, 2
 * when refused (one `job.refused` line). SIGTERM/SIGINT abort the job. Keys live only in memory.
 */
import { Effect, Either, Exit, Stream } from "effect"
import { writeSync } from "node:fs"
import { AgentRuntime, JobEnvelope, JobRefused } from "./contract/AgentRuntime.ts"
import { JobSpec } from "./contract/JobSpec.ts"
import { decodeAll, type Problem } from "./contract/Problem.ts"
import { KernelLive } from "./kernel/Kernel.ts"
import { dieWithParent } from "./kernel/dieWithParent.ts"
import { makeNonDumpable } from "./kernel/nonDumpable.ts"
import { RUN_PREFIX_VAR, validRunPrefix } from "./tools/processTree.ts"
import { sandboxConfigFromEnv } from "./tools/Sandbox.ts"

/** Writes a whole line to a file descriptor, synchronously, so lines never interleave or get lost at exit. */
const writeLine = (fd: number, line: string) => {
  const buf = Buffer.from(`${line}\n`)
  let off = 0
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off)
    } catch (e) {
      // A non-blocking pipe that is full: wait for the reader, then go on.
      if ((e as NodeJS.ErrnoException).code !== "EAGAIN") throw e
      Bun.sleepSync(1)
    }
  }
}

const refuse = (problems: ReadonlyArray<Problem>): number => {
  writeLine(1, JSON.stringify({ type: "job.refused", problems }))
  return 2
}

/** Runs one job from `stdin` text; returns the exit code. */
export const runJobChild = async (stdin: string): Promise<number> => {
  let doc: unknown
  try {
    doc = JSON.parse(stdin)
  } catch {
    return refuse([{ path: "(stdin)", message: "stdin is not one JSON document" }])
  }
  const envelope = decodeAll(JobEnvelope)(doc)
  if (Either.isLeft(envelope)) {
    // Report the job's own problems too, so one refusal lists everything.
    const job = (doc !== null && typeof doc === "object" ? (doc as Record<string, unknown>)["job"] : undefined)
    const jobProblems = Either.match(decodeAll(JobSpec)(job), { onLeft: (p) => p.map((x) => ({ ...x, path: `job.${x.path}` })), onRight: () => [] })
    return refuse([...envelope.left.filter((p) => !p.path.startsWith("job")), ...jobProblems])
  }
  const diagnostics = (line: string) => writeLine(2, line)
  const program = Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const handle = yield* runtime.start(envelope.right.job)
    const onSignal = () => Effect.runFork(handle.abort)
    process.on("SIGTERM", onSignal)
    process.on("SIGINT", onSignal)
    yield* Stream.runForEach(handle.events, (event) => Effect.sync(() => writeLine(1, JSON.stringify(event))))
    const outcome = yield* handle.result
    return outcome._tag === "Completed" ? 0 : 1
  }).pipe(
    Effect.provide(
      KernelLive({
        providers: envelope.right.providers,
        diagnostics,
        boundary: envelope.right.boundary,
        sandbox: sandboxConfigFromEnv(process.env),
        ...validRunPrefix(process.env[RUN_PREFIX_VAR])
      })
    )
  )
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isSuccess(exit)) return exit.value
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (failure instanceof JobRefused) {
    return refuse(failure.problems.map((p) => ({ ...p, path: p.path.startsWith("providers") ? p.path : `job.${p.path}` })))
  }
  diagnostics("run-job: internal error before the job started")
  return 1
}

/** The process entry: non-dumpable before any secret is read, dies with its parent, then stdin, then exit. */
export const jobChildMain = async (): Promise<never> => {
  makeNonDumpable()
  dieWithParent()
  const stdin = await Bun.stdin.text()
  const code = await runJobChild(stdin)
  process.exit(code)
}
