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

let nextSeq = 0
let ending: Ending | undefined
let abortJob: (() => void) | undefined
let armed = false

const EXIT_CODE: Record<Ending, number> = { completed: 0, failed: 1, refused: 2 }

/** Writes one event line on stdout, noting its seq and whether it ends the job; nothing is written after the end. */
export const writeEvent = (event: { readonly type: string; readonly seq: number }): void => {
  if (ending !== undefined) return
  writeLine(1, JSON.stringify(event))
  nextSeq = event.seq + 1
  if (event.type === "job.completed") ending = "completed"
  if (event.type === "job.failed") ending = "failed"
}

/** Writes the `job.refused` line (the job never started). */
export const writeRefusal = (line: string): void => {
  if (ending !== undefined) return
  writeLine(1, line)
  ending = "refused"
}

/** Writes `job.failed` unless the job already ended; never throws (stdout may be gone). */
const writeFailure = (reason: "error" | "aborted", message: string): void => {
  if (ending !== undefined) return
  try {
    writeLine(1, JSON.stringify({ type: "job.failed", seq: nextSeq, at: new Date().toISOString(), reason, message }))
  } catch {
    // Nobody reads our stdout any more: the exit code still says it.
  }
  ending = "failed"
}

const diagnose = (line: string): void => {
  try {
    writeLine(2, line)
  } catch {
    // stderr is gone too: nothing left to tell.
  }
}

/**
 * Ends the job as failed (unless it already ended) and exits with the code its terminal event calls
 * for. The message is fixed text: an error's own message could quote a secret.
 */
export const failJob = (reason: "error" | "aborted", message: string): never => {
  writeFailure(reason, message)
  process.exit(EXIT_CODE[ending ?? "failed"])
}

/** Exits with `code` when the written events agree with it; otherwise ends the job as failed first. */
export const exitJob = (code: number): never => {
  if (ending === undefined || EXIT_CODE[ending] !== code) {
    if (ending === undefined) diagnose(`run-job: the job ended (exit ${code}) without its terminal event`)
    return failJob("error", "the job process ended without a result")
  }
  process.exit(code)
}

/** From now on a signal asks the job to abort (it then writes its own `aborted` end). */
export const onAbortSignal = (abort: () => void): void => {
  abortJob = abort
}

/** What an error is, for stderr: its class name only (messages and stacks may carry secrets or host paths). */
const kind = (e: unknown): string => (e instanceof Error ? e.name : typeof e)

/**
 * Arms the exit guard: uncaught errors and rejections, an empty event loop and stray exits end the
 * job as failed; SIGTERM/SIGINT/SIGHUP abort it (before it started: at once, as `aborted`).
 */
export const armJobChildExit = (): void => {
  if (armed) return
  armed = true
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
}

/**
 * The job child's entry: makes the process non-dumpable, arms the guard, starts reading stdin, then
 * loads the kernel with `load` and runs it on that stdin. A kernel that cannot load is a failed job,
 * never a silent exit.
 *
 * The kernel loads in the event loop's first turn, not in the entry's own evaluation: once
 * the entry module and its microtasks are done, Bun runs one full garbage collection before that turn
 * whenever work is pending, and its cost grows with the heap — after the kernel's modules it took
 * 8–15 ms on the way to `job.started`, on the entry's small heap it is about a millisecond. Stdin is
 * read meanwhile (on Bun's thread pool), so the envelope is there once the kernel is.
 */
export const runGuardedJobChild = (load: () => Promise<{ readonly jobChildMain: (stdin: Promise<string>) => Promise<unknown> }>): void => {
  // Before the kernel loads (a child started ahead loads while other jobs run): from here on, no
  // process of the same user can open our /proc/<pid>/fd/0 and wait there for the next envelope.
  makeNonDumpable()
  armJobChildExit()
  const stdin = Bun.stdin.text()
  setImmediate(() =>
    load().then(
      (m) => m.jobChildMain(stdin),
      (e: unknown) => {
        diagnose(`run-job: internal error (the kernel could not be loaded: ${kind(e)})`)
        failJob("error", "the job process could not load the kernel: internal error")
      }
    )
  )
}
