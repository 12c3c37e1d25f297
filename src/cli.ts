#!/usr/bin/env bun
/**
 * The `kintsugi` command (src/cli/ holds one file per command). `run-job`, the job child, starts before
 * the CLI framework loads: its cold start must not pay for @effect/cli. `run-job --ahead`: a child the
 * worker starts before its job, which warms up while it waits for its envelope (src/jobChildWarmUp.ts).
 */
import { isRunJob } from "./jobChildArgs.ts"

// No top-level await: the file can also be bundled to bytecode for a faster job-child start.
if (isRunJob(process.argv.slice(2))) void import("./jobChildExit.ts").then((m) => m.runGuardedJobChild(() => import("./jobChild.ts")))
else void import("./cli/kintsugi.ts").then((m) => m.main(process.argv))
