/**
 * Expectation helpers for agent tests: the job read these lines, wrote this file, ended this way.
 * They throw an `Error` naming what was expected and what happened, so they work under any runner.
 */
import type { FailureReason, JobEvent, TerminalEvent } from "../contract/JobEvent.ts"
import type { AgentRun } from "./runAgent.ts"

type SourceRead = Extract<JobEvent, { type: "source.read" }>
type EventsOf = AgentRun | ReadonlyArray<JobEvent>

const eventsOf = (from: EventsOf): ReadonlyArray<JobEvent> => ("events" in from ? from.events : from)

const fail = (message: string): never => {
  throw new Error(message)
}

const showReads = (reads: ReadonlyArray<SourceRead>): string =>
  reads.length === 0 ? "no source.read events" : reads.map((r) => `${r.tool} ${r.path}:${r.firstLine}-${r.lastLine ?? "end"}`).join(", ")

/**
 * The job showed the model `path` (as the tools print it, relative to the workspace root, e.g.
 * `src/app.ts`) through `read` or `grep`; with `lines` ([first, last], 1-based, inclusive), every line
 * of that range was shown by some read (a read to the end of the file covers everything after its start).
 * Returns the matching `source.read` events.
 */
export const expectRead = (from: EventsOf, path: string, lines?: readonly [number, number]): ReadonlyArray<SourceRead> => {
  const reads = eventsOf(from).filter((e): e is SourceRead => e.type === "source.read")
  const ofPath = reads.filter((r) => r.path === path)
  if (ofPath.length === 0) return fail(`expected the job to read ${path}; it read: ${showReads(reads)}`)
  if (lines !== undefined) {
    const [first, last] = lines
    for (let line = first; line <= last; line++) {
      if (!ofPath.some((r) => r.firstLine <= line && (r.lastLine === null || line <= r.lastLine))) {
        return fail(`expected the job to read ${path} lines ${first}-${last}; line ${line} was never shown (reads: ${showReads(ofPath)})`)
      }
    }
  }
  return ofPath
}

/**
 * The job wrote `path` (relative to the output directory): an `output` event names it and the file is
 * among the run's outputs. With `content`, the file equals that string or matches that pattern.
 * Returns the file's text.
 */
export const expectWrote = (run: AgentRun, path: string, content?: string | RegExp): string => {
  const written = run.events.filter((e) => e.type === "output").map((e) => e.path)
  if (!written.includes(path)) return fail(`expected the job to write ${path}; output events: ${written.join(", ") || "none"}`)
  const text = run.outputs[path]
  if (text === undefined) return fail(`the job reported writing ${path} but it is not in the output directory`)
  if (typeof content === "string" && text !== content) {
    return fail(`${path} differs from what was expected:\n--- expected\n${content}\n--- written\n${text}`)
  }
  if (content instanceof RegExp && !content.test(text)) return fail(`${path} does not match ${String(content)}:\n${text}`)
  return text
}

/**
 * The job ended with `outcome`: `"completed"` or a failure reason (`"timeout"`, `"loop"`, …). A refused
 * job fails this with its problems. Returns the terminal event.
 */
export const expectEndedWith = (run: AgentRun, outcome: "completed" | FailureReason): TerminalEvent => {
  if (run.refused !== undefined) {
    return fail(`expected ${outcome}; the job was refused: ${run.refused.map((p) => `${p.path}: ${p.message}`).join("; ")}`)
  }
  const terminal = run.terminal
  if (terminal === undefined)
    return fail(`expected ${outcome}; the job child ended (exit ${run.exitCode}) without a terminal event:\n${run.stderr.slice(0, 2000)}`)
  const actual = terminal.type === "job.completed" ? "completed" : terminal.reason
  if (actual !== outcome) {
    const detail = terminal.type === "job.failed" ? `: ${terminal.message}` : ""
    return fail(`expected the job to end ${outcome}; it ended ${actual}${detail}`)
  }
  return terminal
}
