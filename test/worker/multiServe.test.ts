/**
 * Three `kintsugi serve` processes on one PostgreSQL run 60 jobs; one is killed with SIGKILL while it
 * runs jobs. Every job ends settled once, none runs twice, the killed process's jobs are settled
 * "worker lost" by the others, and no process of its jobs survives it. PostgreSQL only (PGlite is one
 * process).
 */
import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { WORKER_LOST } from "../../src/worker/JobStore.ts"
import { createDeployment, killWhileRunning, serveProcesses, settledJobs, useCleanups } from "../support/deployment.ts"
import { isAlive } from "../support/processes.ts"
import type { Step } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

const SERVER = process.env["DATABASE_URL"] ?? ""
const JOBS = 60
const AGENT = "multi-serve-probe"
const TOTAL_MS = 240_000

const cleanups = useCleanups(60_000)

describe("three serve processes on one PostgreSQL", () => {
  test.skipIf(SERVER === "")(
    `${JOBS} jobs, one process killed with SIGKILL mid-job: each job settled once, none run twice, no survivor` +
      (SERVER === "" ? " (skipped: needs DATABASE_URL — the embedded database is one process)" : ""),
    async () => {
      const deadline = Date.now() + TOTAL_MS - 20_000
      // Set up through the same code the servers run: migrations, a user with a token, a provider, a binding.
      // Each turn streams for a while (16 frames, 100 ms apart), so jobs are mid-run when the kill comes.
      const steps: Array<Step> = Array.from({ length: JOBS + 10 }, () => ({
        kind: "turn",
        text: "x".repeat(64),
        chunkSize: 4,
        delayMs: 100
      }))
      const deployment = await createDeployment({
        server: SERVER,
        prefix: "kintsugi_multi",
        agent: AGENT,
        steps,
        apiKey: "sk-multi",
        tools: ["read"],
        cleanups
      })

      const { rt, model, token, root } = deployment

      // Three serve processes: 2 workers each, a 10 s lease renewed every 2 s.
      const { all, start } = serveProcesses(deployment, cleanups)
      const servers: Array<{ pid: number; port: number; proc: ReturnType<typeof Bun.spawn> }> = []
      for (let i = 0; i < 3; i++) {
        const { proc, port } = await start(String(i), {
          env: {
            KINTSUGI_WORKERS: "2",
            // Long enough that a living server starved of CPU (three servers, their job children and the
            // rest of a parallel suite on two cores) still renews in time; the killed one's jobs wait it out.
            KINTSUGI_JOB_LEASE: "10",
            KINTSUGI_JOB_HEARTBEAT: "2"
          }
        })
        expect(port).toBeGreaterThan(0)
        servers.push({ pid: proc.pid, port, proc })
      }

      // 60 jobs through the API of all three.
      const ids: Array<string> = []
      for (let i = 0; i < JOBS; i++) {
        const s = servers[i % 3]!
        const r = await fetch(`http://127.0.0.1:${s.port}/api/jobs`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({
            agent: AGENT,
            task: `Inventory the code [job-${i}].`,
            workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
            limits: { timeoutSec: 120 }
          })
        })
        expect(r.status).toBe(201)
        ids.push(((await r.json()) as { job: { id: string } }).job.id)
      }
      // Kill the first server while it runs jobs (its job children are alive).
      const victim = servers[0]!
      const { running, orphans } = await killWhileRunning(rt, victim, all, deadline)
      const jobs = await settledJobs(rt, JOBS, deadline)
      expect(jobs.length).toBe(JOBS)
      // None ran twice: at most one start per job, at most one model request per job.
      for (const j of jobs) expect(Number(j["starts"])).toBeLessThanOrEqual(1)
      for (let i = 0; i < JOBS; i++) {
        expect(model.requests.filter((r) => JSON.stringify(r.body).includes(`[job-${i}]`)).length).toBeLessThanOrEqual(1)
      }
      // The killed process's jobs (those running when it was killed, and any it claimed in the instant
      // before) were completed by it or settled by the others as "worker lost".
      expect(running.length).toBeGreaterThan(0)
      const victimsJob = (j: Record<string, unknown>) => String(j["workerId"]).includes(`:${victim.pid}:`)
      for (const r of running) {
        const j = jobs.find((x) => x["id"] === r["id"]) ?? {}
        expect(victimsJob(j) ? true : j).toBe(true)
      }
      for (const j of jobs.filter(victimsJob)) {
        expect(
          j["status"] === "completed" || (j["status"] === "failed" && j["reason"] === "error" && j["message"] === WORKER_LOST) ? "ok" : j
        ).toBe("ok")
      }
      // Everything else completed, once, on a living worker.
      for (const j of jobs.filter((x) => !victimsJob(x))) {
        expect(j["status"] === "completed" ? "completed" : j).toBe("completed")
        expect(Number(j["starts"])).toBe(1)
        expect(Number(j["ends"])).toBe(1)
      }
      // No process of the killed server's jobs survives it.
      await until(() => orphans.every((pid) => !isAlive(pid)), { what: "the killed server's job processes to be gone", timeoutMs: 15_000 })
      expect(orphans.filter(isAlive)).toEqual([])
    },
    TOTAL_MS
  )
})
