#!/usr/bin/env bun
/**
 * The `kintsugi` command (src/cli/ holds one file per command). `run-job`, the job child, starts before
 * the CLI framework loads: its cold start must not pay for @effect/cli.
 */
const argv = process.argv.slice(2)
// No top-level await: the file can also be bundled to bytecode for a faster job-child start.
if (argv.length === 1 && argv[0] === "run-job") void import("./jobChildExit.ts").then((m) => m.runGuardedJobChild(() => import("./jobChild.ts")))
else void import("./cli/kintsugi.ts").then((m) => m.main(process.argv))
