/**
 * `kintsugi run-job`: the job child. src/cli.ts starts it before this framework loads (its cold start
 * must not pay for @effect/cli); this command gives it help and usage.
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"

export const runJobCommand = Command.make("run-job", {}, () =>
  Effect.promise(() => import("../jobChild.ts").then((m) => m.jobChildMain()))
).pipe(
  Command.withDescription(
    "Run one agent job: a JSON envelope on stdin, NDJSON events on stdout; exit 0 completed, 1 failed, 2 refused envelope. Started by the worker, not by hand."
  )
)
