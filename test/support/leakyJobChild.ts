/**
 * A stand-in job child for the worker's sweep test: runs `sleep <marker> & sleep <marker> & wait`
 * unconfined through the real process runner with the worker's run-token prefix, says so on stderr,
 * then waits to be killed (the test SIGKILLs it, so the runner never gets to clean up).
 */
import { Effect } from "effect"
import { createProcessRunner } from "../../src/tools/ProcessRunner.ts"
import { RUN_PREFIX_VAR, validRunPrefix } from "../../src/tools/processTree.ts"

// The marker travels in the envelope (the worker passes no variable of ours to a job child).
const marker = String((JSON.parse(await Bun.stdin.text()) as { job: { marker: string } }).job.marker)
const prefix = validRunPrefix(process.env[RUN_PREFIX_VAR]).runTokenPrefix
const runner = createProcessRunner(prefix === undefined ? {} : { tokenPrefix: prefix })
void Effect.runPromise(runner.run({ argv: ["bash", "-c", `sleep ${marker} & sleep ${marker} & wait`], cwd: "/", timeoutMs: 600_000 }))
process.stderr.write(`started ${process.pid} prefix=${prefix === undefined ? "none" : "set"}\n`)
setInterval(() => {}, 1000)
