/**
 * The worker's last line of defence for unconfined jobs: a job child killed with SIGKILL cannot kill
 * its own processes, so the worker sweeps every process carrying the job's run-token prefix.
 */
import { expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { join } from "node:path"
import { runJobProcess } from "../../src/worker/JobProcess.ts"
import { pidsWithArg } from "../support/processes.ts"

setDefaultTimeout(30_000)

test("unconfined: sleep 1000 & sleep 1000 & wait, job child SIGKILLed → the worker leaves no survivor", async () => {
  const marker = "1000.0811"
  const logs: Array<string> = []
  let seenBeforeKill = 0
  try {
    const settlement = await Effect.runPromise(
      runJobProcess(
        { job: { marker }, providers: [] },
        {
          onEvent: () => Effect.void,
          abortRequested: Effect.succeed(false),
          log: (line) =>
            Effect.sync(() => {
              logs.push(line)
              const pid = /^started (\d+)/.exec(line)?.[1]
              if (pid === undefined) return
              void (async () => {
                for (let i = 0; i < 500 && pidsWithArg(marker).length < 2; i++) await Bun.sleep(10)
                seenBeforeKill = pidsWithArg(marker).length
                process.kill(Number(pid), "SIGKILL")
              })()
            })
        },
        join(import.meta.dir, "..", "support", "leakyJobChild.ts")
      )
    )
    expect(logs[0]).toMatch(/^started \d+ prefix=set$/)
    expect(seenBeforeKill).toBe(2)
    expect(settlement).toMatchObject({ status: "failed", reason: "error", message: "the job process was killed by SIGKILL before the job ended" })
    expect(pidsWithArg(marker)).toEqual([])
  } finally {
    for (const pid of pidsWithArg(marker)) process.kill(pid, "SIGKILL")
  }
})
