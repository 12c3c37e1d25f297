/**
 * The job child's command line, shared by the worker that starts it and the child: `run-job`, and
 * `run-job --ahead` for a child started before its job (the worker's pool), which warms up while it
 * waits for its envelope (jobChild/warmUp.ts). Imports nothing: cli.ts reads it before anything loads.
 */
const RUN_JOB = "run-job"
const AHEAD_FLAG = "--ahead"

/** The arguments (after the script) of a child started now (`ahead` false) or ahead of its job. */
export const runJobArgs = (ahead: boolean): Array<string> => (ahead ? [RUN_JOB, AHEAD_FLAG] : [RUN_JOB])

/**
 * JavaScriptCore's JIT thresholds for the job child (Bun reads `BUN_JSC_*` as it starts), far above JSC's
 * defaults: a job child runs most of its code only a few times, so compiling it on the way to
 * `job.started` costs more than it saves (bench/coldStart.ts). The server's own `BUN_JSC_*` variables
 * never reach a job child (childEnvironment's allowlist).
 */
export const JOB_CHILD_JIT_ENV: Readonly<Record<string, string>> = {
  BUN_JSC_thresholdForJITAfterWarmUp: "20000",
  BUN_JSC_thresholdForJITSoon: "20000"
}

/** Whether `args` (after the script) are a job child's. */
export const isRunJob = (args: ReadonlyArray<string>): boolean =>
  args[0] === RUN_JOB && (args.length === 1 || (args.length === 2 && args[1] === AHEAD_FLAG))

/** Whether the child was started ahead of its job. */
export const startedAhead = (args: ReadonlyArray<string>): boolean => isRunJob(args) && args[1] === AHEAD_FLAG
