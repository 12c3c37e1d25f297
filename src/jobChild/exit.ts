/**
 * Every exit of the job child ends with its terminal event (ARCHITECTURE §5): `job.completed` and exit
 * 0, `job.failed` and exit 1, or the `job.refused` line and exit 2 — whatever fails: a throw while the
 * kernel loads, a defect, a rejected promise nobody awaited, an event loop that ran dry with the job
 * unfinished, a stray `process.exit`, SIGTERM/SIGINT/SIGHUP before the job could abort itself. This
 * module imports nothing of the kernel, so it is armed before the kernel loads.
 */
import { writeSync } from "node:fs"
import { makeNonDumpable } from "../kernel/nonDumpable.ts"

/** Writes a whole line to a file descriptor, synchronously, so lines never interleave or get lost at exit. */
export const writeLine = (fd: number, line: string): void => {
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

type Ending = "completed" | "failed" | "refused"

const EXIT_CODE: Record<Ending, number> = { completed: 0, failed: 1, refused: 2 }

const diagnose = (line: string): void => {
  try {
    writeLine(2, line)
  } catch {
    // stderr is gone too: nothing left to tell.
  }
}

/** What an error is, for stderr: its class name only (messages and stacks may carry secrets or host paths). */
const kind = (e: unknown): string => (e instanceof Error ? e.name : typeof e)

/** The armed exit guard of one job child process: the only way its lines reach stdout, and its exit. */
export interface JobChildExit {
  /** Writes one event line on stdout, noting its seq and whether it ends the job; nothing is written after the end. */
  readonly writeEvent: (event: { readonly type: string; readonly seq: number }) => void
  /** Writes the `job.refused` line (the job never started). */
  readonly writeRefusal: (line: string) => void
  /**
   * Ends the job as failed (unless it already ended) and exits with the code its terminal event calls
   * for. The message is fixed text: an error's own message could quote a secret.
   */
  readonly failJob: (reason: "error" | "aborted", message: string) => never
  /** Exits with `code` when the written events agree with it; otherwise ends the job as failed first. */
  readonly exitJob: (code: number) => never
  /** Whether a terminal line (job.completed, job.failed, job.refused) is out. */
  readonly ended: () => boolean
  /** From now on SIGTERM/SIGINT/SIGHUP call `abort` (which ends the job as `aborted`) instead of exiting at once. */
  readonly onAbortSignal: (abort: () => void) => void
}

/**
 * Arms the exit guard: uncaught errors and rejections, an empty event loop and stray exits end the
 * job as failed; SIGTERM/SIGINT/SIGHUP abort it (before it started: at once, as `aborted`). Its state
 * (the next seq, how the job ended, the abort) lives in the returned guard, one per process.
 */
export const armJobChildExit = (): JobChildExit => {
  let nextSeq = 0
  let ending: Ending | undefined
  let abortJob: (() => void) | undefined
  const writeFailure = (reason: "error" | "aborted", message: string): void => {
    if (ending !== undefined) return
    try {
      writeLine(1, JSON.stringify({ type: "job.failed", seq: nextSeq, at: new Date().toISOString(), reason, message }))
    } catch {
      // Nobody reads our stdout any more: the exit code still says it.
    }
    ending = "failed"
  }
  const failJob = (reason: "error" | "aborted", message: string): never => {
    writeFailure(reason, message)
    process.exit(EXIT_CODE[ending ?? "failed"])
  }
  const guard: JobChildExit = {
    writeEvent: (event) => {
      if (ending !== undefined) return
      writeLine(1, JSON.stringify(event))
      nextSeq = event.seq + 1
      if (event.type === "job.completed") ending = "completed"
      if (event.type === "job.failed") ending = "failed"
    },
    writeRefusal: (line) => {
      if (ending !== undefined) return
      writeLine(1, line)
      ending = "refused"
    },
    failJob,
    exitJob: (code) => {
      if (ending === undefined || EXIT_CODE[ending] !== code) {
        if (ending === undefined) diagnose(`run-job: the job ended (exit ${code}) without its terminal event`)
        return failJob("error", "the job process ended without a result")
      }
      process.exit(code)
    },
    ended: () => ending !== undefined,
    onAbortSignal: (abort) => {
      abortJob = abort
    }
  }
  process.on("uncaughtException", (e) => {
    diagnose(`run-job: internal error (uncaught ${kind(e)})`)
    failJob("error", "the job process failed: internal error")
  })
  process.on("unhandledRejection", (e) => {
    diagnose(`run-job: internal error (unhandled rejection: ${kind(e)})`)
    failJob("error", "the job process failed: internal error")
  })
  // Nothing left to run, yet no end was written: a promise that can never settle (a module that
  // failed to initialise inside a bundle, say) would otherwise end the process with code 0.
  process.on("beforeExit", () => {
    if (ending === undefined) diagnose("run-job: internal error (the job stalled: nothing left to run)")
    failJob("error", "the job process stopped before the job ended: internal error")
  })
  process.on("exit", (code) => {
    if (ending === undefined) {
      diagnose(`run-job: the process exited (code ${code}) before the job ended`)
      writeFailure("error", "the job process exited before the job ended: internal error")
    }
    // 0 only after job.completed.
    if (code === 0 && ending !== "completed") process.exitCode = EXIT_CODE[ending ?? "failed"]
  })
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.on(signal, () => {
      if (abortJob !== undefined) return abortJob()
      failJob("aborted", `the job was aborted (${signal}) before it started`)
    })
  }
  return guard
}

/**
 * The job child's entry: makes the process non-dumpable, arms the guard, starts reading stdin, then
 * loads the kernel with `load` and runs it on that stdin with the guard. A kernel that cannot load is a failed job,
 * never a silent exit.
 *
 * The kernel loads in the event loop's first turn, not in the entry's own evaluation: once
 * the entry module and its microtasks are done, Bun runs one full garbage collection before that turn
 * whenever work is pending, and its cost grows with the heap: on the entry's small heap it is cheap,
 * after the kernel's modules it would delay `job.started`. Stdin is read meanwhile (on Bun's thread pool), so the envelope is there once the kernel is.
 */
export const runGuardedJobChild = (
  load: () => Promise<{ readonly jobChildMain: (stdin: Promise<string>, exit: JobChildExit) => unknown }>
): void => {
  // Before the kernel loads (a child started ahead loads while other jobs run): from here on, no
  // process of the same user can open our /proc/<pid>/fd/0 and wait there for the next envelope.
  makeNonDumpable()
  const exit = armJobChildExit()
  const stdin = Bun.stdin.text()
  setImmediate(() =>
    load().then(
      (m) => m.jobChildMain(stdin, exit),
      (e: unknown) => {
        diagnose(`run-job: internal error (the kernel could not be loaded: ${kind(e)})`)
        exit.failJob("error", "the job process could not load the kernel: internal error")
      }
    )
  )
}
