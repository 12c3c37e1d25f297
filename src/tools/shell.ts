/**
 * The `shell` kernel tool: one `bash -c` per call in the workspace root, through the process runner;
 * plus the timeout and result formatting both process tools share.
 */
import { Effect, Schema } from "effect"
import type { ProcessRunnerShape, RunResult } from "./ProcessRunner.ts"
import { Limits } from "../job/Limits.ts"
import { defineTool, type KernelTool, ToolError } from "./Tool.ts"
import { Workspace } from "../job/Workspace.ts"

const DEFAULT_TIMEOUT_SEC = 120
const MAX_TIMEOUT_SEC = 600

/** The `timeoutSec` parameter both process tools share. */
export const TimeoutSec = Schema.Number.pipe(
  Schema.int(),
  Schema.between(1, MAX_TIMEOUT_SEC),
  Schema.annotations({
    description: `Seconds before the command and everything it started are killed (default ${DEFAULT_TIMEOUT_SEC}, at most ${MAX_TIMEOUT_SEC}, never beyond the job's remaining time).`
  })
)

/** The timeout of one call: what was asked (or the default), cut to the job's remaining time. */
export const effectiveTimeoutMs = (timeoutSec: number | undefined): Effect.Effect<number, ToolError, Limits> =>
  Effect.gen(function* () {
    const remaining = Math.floor(yield* (yield* Limits).remainingMs)
    if (remaining <= 0) return yield* Effect.fail(new ToolError({ message: "The job has no time left to run a process." }))
    return Math.min((timeoutSec ?? DEFAULT_TIMEOUT_SEC) * 1000, remaining)
  })

/** The text the model gets: a status line, then the (possibly cut) output. */
export const formatRunResult = (r: RunResult, timeoutMs: number): string => {
  const ending = r.timedOut
    ? `timed out after ${(timeoutMs / 1000).toFixed(timeoutMs % 1000 === 0 ? 0 : 1)}s: the process and everything it started were killed`
    : r.exitCode !== null
      ? `exit code: ${r.exitCode}`
      : `killed by signal ${r.signal ?? "unknown"}`
  // A limit the call reached names it: "killed: memory limit 1024 MiB", or beside the exit code when a process failed at it.
  const status =
    r.limit === undefined
      ? ending
      : r.limit.startsWith("killed:")
        ? `${r.limit}: the process and everything it started were killed`
        : `${ending} (${r.limit})`
  const body = r.output.length === 0 ? "(no output)" : r.output
  return `${status}${r.truncated ? " (output cut: head and tail kept)" : ""}\n${body}`
}

const ShellParams = Schema.Struct({
  command: Schema.String.pipe(
    Schema.minLength(1),
    Schema.annotations({ description: "The command line, run as `bash -c <command>` in the workspace root." })
  ),
  timeoutSec: Schema.optionalWith(TimeoutSec, { exact: true })
})

/** `shell`: stdout and stderr merged, exit code first; the deny check sees `command` exactly. */
export const makeShellTool = (runner: ProcessRunnerShape): KernelTool =>
  defineTool({
    name: "shell",
    description:
      "Run one bash command in the workspace root with a cleared environment and stdin from /dev/null. " +
      "Returns the exit code and the merged stdout/stderr, cut to the first and last lines when long. " +
      "Background processes are killed when the command returns.",
    params: ShellParams,
    commandOf: (a) => a.command,
    execute: (a) =>
      Effect.gen(function* () {
        const timeoutMs = yield* effectiveTimeoutMs(a.timeoutSec)
        const result = yield* runner.run({
          argv: ["bash", "-c", a.command],
          cwd: (yield* Workspace).paths.root,
          timeoutMs,
          onOutput: (yield* Limits).progress
        })
        return { text: formatRunResult(result, timeoutMs) }
      })
  })
