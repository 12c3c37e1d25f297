/**
 * Every exit of the job child ends with its terminal event and the matching exit code (ARCHITECTURE
 * §5): a kernel that cannot load, stalls, throws, rejects or exits early still reports
 * `job.failed` and exits 1, never 0; a signal before the envelope is an `aborted` job. The guard is the
 * real one (src/jobChild/exit.ts); the failures are staged by test/support/failingJobChild.ts.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { join } from "node:path"
import { childEnv, runJobChild } from "../support/jobChild.ts"
import { FAIL_SECRET } from "../support/failingJobChild.ts"
import { jobChildEntryForTests } from "../support/jobChildBundle.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(60_000)

const FAILING = join(import.meta.dir, "..", "support", "failingJobChild.ts")

describe("a job child whose kernel fails", () => {
  test.each(["import", "stall", "throw", "reject", "exit0"])(
    "%s → job.failed (error) as the last line, exit 1, no secret",
    async (mode) => {
      const run = await runJobChild("{}", { entry: FAILING, env: { FAIL_MODE: mode } })
      expect(run.code).toBe(1)
      const last = run.events[run.events.length - 1]
      expect(last).toMatchObject({ type: "job.failed", reason: "error" })
      // seq continues after what was written; exactly one terminal event.
      expect(run.events.map((e) => e.seq)).toEqual(run.events.map((_, i) => i))
      expect(run.events.filter((e) => e.type === "job.failed" || e.type === "job.completed").length).toBe(1)
      expect(run.stdout + run.stderr).not.toContain(FAIL_SECRET)
    }
  )
})

/** Whether `pid` has a handler for SIGTERM (bit 15 of SigCgt in /proc/<pid>/status). */
const catchesSigterm = async (pid: number): Promise<boolean> => {
  const status = await Bun.file(`/proc/${pid}/status`)
    .text()
    .catch(() => "")
  const hex = /SigCgt:\s*([0-9a-f]+)/.exec(status)?.[1]
  return hex !== undefined && (BigInt(`0x${hex}`) & (1n << 14n)) !== 0n
}

describe.skipIf(process.platform !== "linux")("a job child waiting for its envelope (the warm pool's state)", () => {
  test("SIGTERM before the envelope → job.failed (aborted), exit 1", async () => {
    const proc = Bun.spawn(["bun", jobChildEntryForTests(), "run-job"], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env: childEnv() })
    // Armed: the guard's handler is installed (no sleep: the kernel reads its own signal mask).
    await until(() => catchesSigterm(proc.pid), { what: "the child's exit guard (SIGTERM caught)", events: [proc.exited] })
    proc.kill("SIGTERM")
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
    expect(code).toBe(1)
    const lines = stdout.split("\n").filter((l) => l !== "")
    expect(lines.length).toBe(1)
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ type: "job.failed", seq: 0, reason: "aborted" })
  })
})
