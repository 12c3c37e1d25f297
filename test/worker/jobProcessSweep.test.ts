/**
 * The worker's last line of defence for unconfined and Landlock jobs: a job child killed with SIGKILL
 * cannot kill its own processes, so the worker sweeps every process carrying the job's run-token prefix
 * and, for Landlock calls, every process in a session the job child listed.
 */
import { expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Schema } from "effect"
import { join } from "node:path"
import { runJobProcess } from "../../src/worker/child/JobProcess.ts"
import { existsSync, readFileSync } from "node:fs"
import { readStat } from "../../src/tools/processTree.ts"
import { ProviderConfig } from "../../src/contract/ProviderConfig.ts"
import { createJob, createJobDirs, createProvider } from "../support/jobChild.ts"
import { pidsWithArg } from "../support/processes.ts"
import { landlockSkipReason, landlockWorks } from "../support/sandbox.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

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
                await until(() => pidsWithArg(marker).length >= 2, { what: "the leaky child's two processes" }).catch(() => undefined)
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
    expect(settlement).toMatchObject({
      status: "failed",
      reason: "error",
      message: "the job process was killed by SIGKILL before the job ended"
    })
    expect(pidsWithArg(marker)).toEqual([])
  } finally {
    for (const pid of pidsWithArg(marker)) process.kill(pid, "SIGKILL")
  }
})

test.skipIf(!landlockWorks())(
  `Landlock: a real job child SIGKILLed mid-command → the worker kills what its call left, env-cleared processes too${landlockWorks() ? "" : ` (${landlockSkipReason()})`}`,
  async () => {
    const marker = "1000.0812"
    const dirs = createJobDirs({ "a.ts": "x\n" })
    const server = await startOpenAIServer([
      {
        kind: "turn",
        toolCalls: [{ name: "shell", arguments: { command: `sleep ${marker} & (env -i /usr/bin/sleep ${marker}1 &); wait` } }]
      },
      { kind: "turn", text: "never" }
    ])
    const before = process.env["KINTSUGI_SANDBOX"]
    process.env["KINTSUGI_SANDBOX"] = "landlock"
    let seenBeforeKill = 0
    let jobTmp: string | undefined
    try {
      const settlement = await Effect.runPromise(
        runJobProcess(
          {
            job: createJob(dirs, { agent: { tools: ["shell"] } }),
            providers: [Schema.decodeUnknownSync(ProviderConfig)(createProvider(server, "openai-completions"))]
          },
          {
            onEvent: (e) =>
              Effect.promise(async () => {
                if (e.type !== "tool.call") return
                const both = () => pidsWithArg(marker).length + pidsWithArg(`${marker}1`).length
                await until(() => both() >= 2, { what: "the call's two sleeps" }).catch(() => undefined)
                seenBeforeKill = both()
                // This job's own temporary directory (other files' jobs may run beside it): the call's TMPDIR.
                const sleeper = pidsWithArg(marker)[0] ?? 0
                jobTmp = readFileSync(`/proc/${sleeper}/environ`, "latin1")
                  .split("\0")
                  .find((v) => v.startsWith("TMPDIR="))
                  ?.slice("TMPDIR=".length)
                // The job child: the parent of the call's session leader (the confined bash).
                const sid = readStat(sleeper)?.session ?? 0
                const child = readStat(sid)?.ppid ?? 0
                if (child > 1) process.kill(child, "SIGKILL")
              }),
            abortRequested: Effect.succeed(false),
            log: () => Effect.void
          }
        )
      )
      expect(seenBeforeKill).toBe(2)
      expect(settlement).toMatchObject({ status: "failed", reason: "error" })
      expect(pidsWithArg(marker)).toEqual([])
      expect(pidsWithArg(`${marker}1`)).toEqual([])
      // The job's temporary directory and its sessions list are gone with it.
      expect(jobTmp).toMatch(/\/kintsugi-job-[0-9a-f]{16,}/)
      expect(existsSync(jobTmp ?? "")).toBe(false)
    } finally {
      if (before === undefined) delete process.env["KINTSUGI_SANDBOX"]
      else process.env["KINTSUGI_SANDBOX"] = before
      for (const pid of [...pidsWithArg(marker), ...pidsWithArg(`${marker}1`)]) process.kill(pid, "SIGKILL")
      await server.stop()
      dirs.cleanup()
    }
  }
)
