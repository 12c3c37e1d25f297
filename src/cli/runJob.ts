/**
 * `kintsugi run-job`: the job child. src/cli.ts starts it before this framework loads (its cold start
 * must not pay for @effect/cli); this command gives it help and usage.
 */
import * as Command from "@effect/cli/Command"
import * as Effect from "effect/Effect"

export const runJobCommand = Command.make("run-job", {}, () =>
  // The job child's own entry (exit guard, stdin, kernel), which ends the process itself.
  Effect.promise(() =>
    Promise.all([import("../jobChild/exit.ts"), import("../jobChild/load.ts")]).then(([{ runGuardedJobChild }, { loadJobChild }]) => {
      runGuardedJobChild(loadJobChild)
      return new Promise<never>(() => {})
    })
  )
).pipe(
  Command.withDescription(
    "Run one agent job: a JSON envelope on stdin, NDJSON events on stdout; exit 0 completed, 1 failed, 2 refused envelope. Started by the worker, not by hand."
  )
)
