/**
 * The job child's command line, shared by the worker that starts it and the child: `run-job`, and
 * `run-job --ahead` for a child started before its job (the worker's pool), which warms up while it
 * waits for its envelope (jobChildWarmUp.ts). Imports nothing: cli.ts reads it before anything loads.
 */
export const RUN_JOB = "run-job"
export const AHEAD_FLAG = "--ahead"

/** The arguments (after the script) of a child started now (`ahead` false) or ahead of its job. */
export const runJobArgs = (ahead: boolean): Array<string> => (ahead ? [RUN_JOB, AHEAD_FLAG] : [RUN_JOB])

/** Whether `args` (after the script) are a job child's. */
export const isRunJob = (args: ReadonlyArray<string>): boolean => args[0] === RUN_JOB && (args.length === 1 || (args.length === 2 && args[1] === AHEAD_FLAG))

/** Whether the child was started ahead of its job. */
export const startedAhead = (args: ReadonlyArray<string>): boolean => isRunJob(args) && args[1] === AHEAD_FLAG
