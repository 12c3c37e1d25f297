/**
 * A job child whose kernel fails in one way (`FAIL_MODE`), behind the real exit guard of
 * src/jobChild/exit.ts: "import" (the kernel cannot load), "stall" (job.started, then nothing left to
 * run — what a pi-ai module left uninitialised in a bundle did), "throw" (an uncaught error), "reject"
 * (an unhandled rejection), "exit0" (a stray process.exit(0)). Every message names FAIL_SECRET, which
 * must never reach stdout or stderr.
 */
import { type JobChildExit, runGuardedJobChild } from "../../src/jobChild/exit.ts"

export const FAIL_SECRET = "sk-fail-SECRET-0123456789"
const mode = process.env["FAIL_MODE"]

if (import.meta.main)
  runGuardedJobChild(async () => {
    if (mode === "import") throw new Error(`cannot load with ${FAIL_SECRET}`)
    return {
      jobChildMain: async (stdin: Promise<string>, exit: JobChildExit) => {
        await stdin
        exit.writeEvent({
          type: "job.started",
          seq: 0,
          at: new Date().toISOString(),
          runtimeVersion: "0",
          agentId: "a",
          agentVersion: 1,
          metadata: {}
        } as { type: string; seq: number })
        if (mode === "stall") return new Promise<never>(() => {})
        if (mode === "throw")
          setTimeout(() => {
            throw new Error(`boom ${FAIL_SECRET}`)
          }, 1)
        if (mode === "reject") void Promise.reject(new Error(`rejected ${FAIL_SECRET}`))
        if (mode === "exit0") process.exit(0)
        return new Promise<never>(() => setInterval(() => {}, 1000))
      }
    }
  })
