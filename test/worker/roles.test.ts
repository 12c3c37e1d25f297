/**
 * `kintsugi serve --role`: one API process and two worker processes on one PostgreSQL. Jobs queued
 * through the API run on the workers only; a worker answers the probes and 404 to everything else; one
 * worker killed with SIGKILL mid-run leaves every job settled once. The embedded database refuses
 * `api` and `worker` before it opens.
 */
import { describe, expect, test } from "bun:test"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { WORKER_LOST } from "../../src/worker/JobStore.ts"
import { createDeployment, killWhileRunning, serveProcesses, settledJobs, useCleanups } from "../support/deployment.ts"
import { descendants, isAlive } from "../support/processes.ts"
import type { Step } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

const SERVER = process.env["DATABASE_URL"] ?? ""
const JOBS = 40
const AGENT = "roles-probe"
const TOTAL_MS = 240_000
const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")

const cleanups = useCleanups(60_000)

/** The environment without DATABASE_URL (the embedded database). */
const embeddedEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "DATABASE_URL" && k !== "DATABASE_URL_FILE") env[k] = v
  return env
}

describe("serve --role", () => {
  test("api and worker refuse the embedded database before opening it, naming DATABASE_URL", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "kintsugi-roles-embedded-"))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    for (const role of ["api", "worker"]) {
      const proc = Bun.spawn(["bun", CLI, "serve", "--role", role], {
        env: { ...embeddedEnv(), KINTSUGI_DATA_DIR: dataDir, PORT: "0" },
        stdout: "pipe",
        stderr: "pipe"
      })
      cleanups.push(() => void proc.kill("SIGKILL"))
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      expect(code).toBe(2)
      expect(err).toContain(
        `kintsugi: cannot start: --role ${role} needs a PostgreSQL server (DATABASE_URL): the embedded database admits one process`
      )
      expect(out).not.toContain("serving on")
      // Nothing was opened: no embedded database was created in the data dir.
      expect(readdirSync(dataDir)).toEqual([])
    }
  }, 60_000)

  test.skipIf(SERVER === "")(
    `1 api + 2 worker processes: ${JOBS} jobs queued through the API run on the workers; a worker serves the probes only; one worker SIGKILLed mid-run, every job settled once` +
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
        prefix: "kintsugi_roles",
        agent: AGENT,
        steps,
        apiKey: "sk-roles",
        tools: ["read"],
        cleanups
      })

      const { rt, model, token, root } = deployment
      const processes = serveProcesses(deployment, cleanups)
      const { all } = processes
      const start = async (role: "api" | "worker", i: number) => {
        const { proc, port, out, stderr } = await processes.start(`${role}-${i}`, {
          args: ["--role", role],
          env: {
            KINTSUGI_WORKERS: "2",
            // Long enough that a living worker starved of CPU still renews in time; the killed one's jobs wait it out.
            KINTSUGI_JOB_LEASE: "10",
            KINTSUGI_JOB_HEARTBEAT: "2"
          },
          quiet: true
        })
        expect(port > 0 ? port : `${out}${stderr()}`).toBe(port)
        return { pid: proc.pid, port, proc, out, stderr }
      }
      const api = await start("api", 0)
      const workers = [await start("worker", 0), await start("worker", 1)]
      const at = (s: { port: number }, path: string, init: RequestInit = {}) => fetch(`http://127.0.0.1:${s.port}${path}`, init)

      // The start-up lines say the role; the worker's ready line leaves the admin password out.
      expect(api.stderr()).toContain("kintsugi: role api: the API and the portal; jobs run in worker processes")
      expect(api.stderr()).toContain("job children: none (this process runs no jobs)")
      expect(api.out).toContain("(role api; allowed hosts: ")
      for (const w of workers) {
        expect(w.stderr()).toContain("kintsugi: role worker: the worker loops (KINTSUGI_WORKERS)")
        expect(w.out).toContain("(role worker: /healthz, /readyz and /metrics only; allowed hosts: ")
        expect(w.out).not.toContain("admin password")
      }

      // A worker serves the probes and metrics; the API, the portal and everything else are 404 there.
      const w = workers[0]!
      expect((await at(w, "/healthz")).status).toBe(200)
      const ready = await at(w, "/readyz")
      expect(ready.status).toBe(200)
      expect(await ready.json()).toMatchObject({ status: "ready", role: "worker" })
      expect(await (await at(api, "/readyz")).json()).toMatchObject({ status: "ready", role: "api" })
      const metrics = await at(w, "/metrics")
      expect(metrics.status).toBe(200)
      expect(await metrics.text()).toContain("kintsugi_jobs{")
      for (const path of ["/api/session", "/api/jobs", "/", "/jobs", "/sign-in", "/nothing-here"]) {
        const r = await at(w, path, { headers: { authorization: `Bearer ${token}` } })
        expect(`${path} ${r.status}`).toBe(`${path} 404`)
        expect(await r.json()).toEqual({ error: { code: "not-found", message: expect.stringContaining("--role worker") } })
      }
      expect((await at(w, "/api/jobs", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: "{}" })).status).toBe(404)
      // The API process answers its API (a signed-in endpoint, through the token).
      expect((await at(api, "/api/session", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)

      // Every job through the one API process.
      const ids: Array<string> = []
      for (let i = 0; i < JOBS; i++) {
        const r = await at(api, "/api/jobs", {
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
      // Kill the first worker while it runs jobs (its job children are alive).
      const victim = workers[0]!
      const { running, orphans } = await killWhileRunning(rt, victim, all, deadline)
      const jobs = await settledJobs(rt, JOBS, deadline)
      expect(jobs.length).toBe(JOBS)
      expect(new Set(jobs.map((j) => j["id"]))).toEqual(new Set(ids))
      // Only the workers ran jobs: every job's worker is one of theirs, none the API process.
      const workerOf = (j: Record<string, unknown>) => String(j["workerId"])
      for (const j of jobs) expect(workers.some((x) => workerOf(j).includes(`:${x.pid}:`)) ? "a worker" : j).toBe("a worker")
      expect(jobs.filter((j) => workerOf(j).includes(`:${workers[1]!.pid}:`)).length).toBeGreaterThan(0)
      // None ran twice: at most one start per job, at most one model request per job.
      for (const j of jobs) expect(Number(j["starts"])).toBeLessThanOrEqual(1)
      for (let i = 0; i < JOBS; i++) {
        expect(model.requests.filter((r) => JSON.stringify(r.body).includes(`[job-${i}]`)).length).toBeLessThanOrEqual(1)
      }
      // The killed worker's jobs were completed by it or settled "worker lost" by the other worker.
      expect(running.length).toBeGreaterThan(0)
      const victimsJob = (j: Record<string, unknown>) => workerOf(j).includes(`:${victim.pid}:`)
      for (const r of running) {
        const j = jobs.find((x) => x["id"] === r["id"]) ?? {}
        expect(victimsJob(j) ? true : j).toBe(true)
      }
      for (const j of jobs.filter(victimsJob)) {
        expect(
          j["status"] === "completed" || (j["status"] === "failed" && j["reason"] === "error" && j["message"] === WORKER_LOST) ? "ok" : j
        ).toBe("ok")
      }
      // Everything else completed, once, on the living worker.
      for (const j of jobs.filter((x) => !victimsJob(x))) {
        expect(j["status"] === "completed" ? "completed" : j).toBe("completed")
        expect(Number(j["starts"])).toBe(1)
        expect(Number(j["ends"])).toBe(1)
      }
      // The API process keeps no job child waiting (a worker keeps one started ahead).
      await until(() => descendants(api.pid).length === 0, { what: "the API process to have no child process", timeoutMs: 15_000 })
      expect(descendants(workers[1]!.pid).length).toBeGreaterThan(0)
      await until(() => orphans.every((pid) => !isAlive(pid)), { what: "the killed worker's job processes to be gone", timeoutMs: 15_000 })
      // The API still answers after the kill, and lists the settled jobs.
      const listed = await at(api, `/api/jobs?limit=${JOBS}`, { headers: { authorization: `Bearer ${token}` } })
      expect(((await listed.json()) as { jobs: Array<unknown> }).jobs.length).toBe(JOBS)
    },
    TOTAL_MS
  )
})
