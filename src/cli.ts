#!/usr/bin/env bun
/**
 * The `kintsugi` command (src/cli/ holds one file per command). `run-job`, the job child, starts before
 * the CLI framework loads: its cold start must not pay for @effect/cli. `run-job --ahead`: a child the
 * worker starts before its job, which warms up while it waits for its envelope (src/jobChild/warmUp.ts).
 * `serve` secures its secrets (the re-exec) before the framework loads too.
 */
import { pinDataDir } from "./cli/installation.ts"
import { isRunJob } from "./jobChild/args.ts"

const argv = process.argv.slice(2)
// Every command but the job child resolves the data dir one way, whatever the shell's current folder.
// process.env: the entry point, before any Effect runtime (and its ConfigProvider) exists.
if (!isRunJob(argv)) pinDataDir(process.env)
// No top-level await: the file can also be bundled to bytecode for a faster job-child start.
if (isRunJob(argv))
  void import("./jobChild/exit.ts").then((m) => m.runGuardedJobChild(() => import("./jobChild/load.ts").then((l) => l.loadJobChild())))
else if ((argv.length === 0 || argv[0] === "serve") && !argv.includes("--help") && !argv.includes("-h")) {
  // Serving: the secrets re-exec happens before anything loads (the first run then costs a bare start),
  // and the embedded database's worker starts compiling PGlite while the application loads.
  void import("./cli/processSecrets.ts")
    .then(async (m) => {
      if (m.secureProcessSecrets().values.get("DATABASE_URL") === undefined)
        (await import("./db/embeddedWorkerAhead.ts")).startWorkerAhead()
      return import("./cli/kintsugi.ts")
    })
    .then((m) => m.main(process.argv))
} else void import("./cli/kintsugi.ts").then((m) => m.main(process.argv))
