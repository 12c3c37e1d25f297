/**
 * Twenty jobs streaming deltas over several turns while the database goes away: two rounds of
 * `pg_terminate_backend` on the shared server, then a stop and start of a private PostgreSQL cluster.
 * None fails; every job's events are stored once each and in order (seq contiguous from 0, from
 * job.started to job.completed), and their deltas spell exactly what the scripted model streamed.
 * PostgreSQL only: the embedded database has no backends to terminate.
 */
import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { makeDbLayer } from "../../src/db/Db.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { adminStatement, withDatabase } from "../support/db.ts"
import { createRootDir } from "../support/jobRoots.ts"
import { startOpenAIServer, type Step } from "../support/scriptedServers.ts"
import { makeTestAppRuntime, type TestRuntime } from "../support/testApp.ts"
import { until } from "../support/waitFor.ts"
import { seedBoundAgent, useCleanups } from "../support/deployment.ts"

const SERVER = process.env["DATABASE_URL"] ?? ""
const JOBS = 20
const AGENT = "db-faults-probe"
const TOTAL_MS = 420_000
const BIN = "/usr/local/bin"

/** What the model streams in each of a job's three turns (the first two also call `read`). */
const TURNS = ["alpha ".repeat(24), "bravo ".repeat(24), "charlie ".repeat(18)]

const cleanups = useCleanups(120_000)

/** A turn by how many tool results the request carries: text streamed in small chunks, a `read` in the first two. */
const turnFor = (body: unknown): Step => {
  const messages = typeof body === "object" && body !== null && "messages" in body && Array.isArray(body.messages) ? body.messages : []
  const done = messages.filter((m: unknown) => typeof m === "object" && m !== null && "role" in m && m.role === "tool").length
  const text = TURNS[Math.min(done, TURNS.length - 1)] ?? ""
  return {
    kind: "turn",
    text,
    chunkSize: 4,
    delayMs: 60,
    ...(done < TURNS.length - 1 ? { toolCalls: [{ name: "read", arguments: { path: "src/app.ts" } }] } : {}),
    usage: { input: 100, output: 10 }
  }
}

/** Runs `rt`'s statements as the test's own reads. */
/**
 * The test's own reads, on the runtime's pool: a connection the fault terminated under one is read
 * again on a new one (the test watches; the worker's writes are what is under test).
 */
const query = (rt: TestRuntime, text: string, values: Array<unknown> = []) =>
  rt.runPromise(
    Effect.retry(
      Effect.flatMap(SqlClient, (s) => s.unsafe<Record<string, unknown>>(text, values)),
      { times: 50, while: (e) => e._tag === "SqlError" }
    )
  )

/**
 * A worker runtime of 20 loops on `url` with 20 jobs queued; `fault` runs while they stream. Resolves
 * once all are settled, with the jobs' rows and events, and the runtime's log lines.
 */
const runTwentyJobs = async (url: string, fault: (rt: TestRuntime, stored: () => Promise<number>) => Promise<void>) => {
  const logs: Array<string> = []
  process.env["KINTSUGI_WORKERS"] = String(JOBS)
  // A lease the database's way back fits in on a loaded machine; it is renewed every 2 s.
  process.env["KINTSUGI_JOB_LEASE"] = "30"
  process.env["KINTSUGI_JOB_HEARTBEAT"] = "2"
  const model = await startOpenAIServer(
    Array.from({ length: JOBS * TURNS.length * 2 }, () => ({ kind: "fn", respond: (r) => turnFor(r.body) }))
  )
  cleanups.push(() => model.stop())
  const rt = await makeTestAppRuntime({ db: makeDbLayer({ url, migrate: true }), worker: { log: (l) => logs.push(l) } })
  cleanups.push(() => rt.dispose())
  for (const k of ["KINTSUGI_WORKERS", "KINTSUGI_JOB_LEASE", "KINTSUGI_JOB_HEARTBEAT"]) delete process.env[k]
  await rt.runPromise(seedBoundAgent({ baseUrl: model.baseUrl, apiKey: "sk-db-faults", agent: AGENT, tools: ["read"] }))
  const root = createRootDir("db-faults-")
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  writeFileSync(join(root, "src", "app.ts"), "export const main = () => 42\n")
  const ids = await rt.runPromise(
    Effect.gen(function* () {
      const store = yield* JobStore
      const ids: Array<string> = []
      for (let i = 0; i < JOBS; i++) {
        const job = yield* store.enqueue(
          {
            agent: AGENT,
            task: `Read the code [job-${i}].`,
            workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
            limits: { timeoutSec: 300 }
          },
          "ops"
        )
        ids.push(job.id)
      }
      return ids
    })
  )
  const stored = async () => Number((await query(rt, "SELECT count(*)::int AS n FROM runtime.job_event"))[0]?.["n"])
  await fault(rt, stored)
  await until(
    async () =>
      Number((await query(rt, "SELECT count(*)::int AS n FROM runtime.job WHERE status IN ('completed', 'failed')"))[0]?.["n"]) === JOBS,
    { what: "all jobs to settle", timeoutMs: TOTAL_MS / 2, everyMs: 250 }
  )
  const jobs = await query(rt, "SELECT id, status, reason, message FROM runtime.job")
  const events = await query(rt, "SELECT job_id, seq, type, event FROM runtime.job_event ORDER BY job_id, seq")
  return { ids, jobs, events, logs }
}

/** Every job completed; its events 0..n-1 with no gap, from job.started to job.completed, its deltas exactly the scripted turns. */
const expectEveryEventOnce = (run: Awaited<ReturnType<typeof runTwentyJobs>>) => {
  expect(run.jobs.filter((j) => j["status"] !== "completed")).toEqual([])
  for (const id of run.ids) {
    const events = run.events.filter((e) => e["jobId"] === id)
    const seqs = events.map((e) => Number(e["seq"]))
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i))
    const types = events.map((e) => String(e["type"]))
    expect(types[0]).toBe("job.started")
    expect(types.at(-1)).toBe("job.completed")
    expect(types.filter((t) => t === "job.completed").length).toBe(1)
    const deltas = events
      .filter((e) => e["type"] === "message.delta")
      .map((e) => {
        const event = typeof e["event"] === "string" ? JSON.parse(e["event"]) : e["event"]
        return typeof event === "object" && event !== null && "text" in event ? String(event.text) : ""
      })
    expect(deltas.join("")).toBe(TURNS.join(""))
  }
  expect(run.logs.filter((l) => l.includes("the worker failed") || l.includes("worker error"))).toEqual([])
}

/** Terminates every backend of `database` but the caller's; how many it terminated. */
const terminateBackends = async (database: string): Promise<number> => {
  const client = new pg.Client({ connectionString: SERVER })
  await client.connect()
  try {
    const r = await client.query<{ n: number }>(
      "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [database]
    )
    return r.rows[0]?.n ?? 0
  } finally {
    await client.end()
  }
}

const run = async (argv: ReadonlyArray<string>): Promise<{ code: number; out: string }> => {
  const proc = Bun.spawn([...argv], { stdout: "pipe", stderr: "pipe" })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out: `${out}${err}` }
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const address = s.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      s.close(() => resolve(port))
    })
  })

/** Why a private cluster cannot be started here, or undefined when it can (initdb refuses root: it runs as `postgres`). */
const clusterUnavailable = (): string | undefined => {
  if (!existsSync(join(BIN, "initdb")) || !existsSync(join(BIN, "pg_ctl"))) return `no initdb/pg_ctl in ${BIN}`
  if (process.getuid?.() !== 0) return "not root: cannot run initdb as the postgres user"
  if (Bun.spawnSync(["id", "-u", "postgres"]).exitCode !== 0) return "no postgres user"
  return undefined
}

/** A private PostgreSQL cluster on a free port, as the postgres user; `pg_ctl` for its stop and start. */
const startCluster = async () => {
  const uid = Number(new TextDecoder().decode(Bun.spawnSync(["id", "-u", "postgres"]).stdout).trim())
  const gid = Number(new TextDecoder().decode(Bun.spawnSync(["id", "-g", "postgres"]).stdout).trim())
  const dir = mkdtempSync(join(tmpdir(), "kintsugi-pgcluster-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  chownSync(dir, uid, gid)
  const data = join(dir, "data")
  const port = await freePort()
  const asPostgres = (...argv: Array<string>) => run(["runuser", "-u", "postgres", "--", ...argv])
  const init = await asPostgres(join(BIN, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
  if (init.code !== 0) throw new Error(`initdb failed: ${init.out}`)
  const pgCtl = (...args: Array<string>) =>
    asPostgres(
      join(BIN, "pg_ctl"),
      "-D",
      data,
      "-l",
      join(dir, "log"),
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`,
      "-w",
      ...args
    )
  const start = async () => {
    const r = await pgCtl("start")
    if (r.code !== 0) throw new Error(`pg_ctl start failed: ${r.out}`)
  }
  await start()
  cleanups.push(async () => void (await pgCtl("-m", "immediate", "stop")))
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async () => {
      const r = await pgCtl("-m", "fast", "stop")
      if (r.code !== 0) throw new Error(`pg_ctl stop failed: ${r.out}`)
      await start()
    }
  }
}

const unavailable = clusterUnavailable()

describe("jobs while the database goes away", () => {
  test.skipIf(SERVER === "")(
    `${JOBS} jobs, two rounds of pg_terminate_backend mid-run: none failed, every event once and in order` +
      (SERVER === "" ? " (skipped: needs DATABASE_URL — the embedded database has no backends to terminate)" : ""),
    async () => {
      const database = `kintsugi_faults_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
      await adminStatement(SERVER, `CREATE DATABASE ${database}`)
      cleanups.push(() => adminStatement(SERVER, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`))
      const terminated: Array<number> = []
      const result = await runTwentyJobs(withDatabase(SERVER, database), async (rt, stored) => {
        const running = async () =>
          Number((await query(rt, "SELECT count(*)::int AS n FROM runtime.job WHERE status = 'running'"))[0]?.["n"])
        await until(async () => (await running()) >= JOBS / 2 && (await stored()) >= 100, {
          what: "jobs to stream",
          timeoutMs: TOTAL_MS / 3,
          everyMs: 100
        })
        terminated.push(await terminateBackends(database))
        const after = await stored()
        await until(async () => (await stored()) >= after + 200, {
          what: "events stored after the first round",
          timeoutMs: 60_000,
          everyMs: 100
        })
        terminated.push(await terminateBackends(database))
      })
      expect(terminated.every((n) => n > 0)).toBe(true)
      expectEveryEventOnce(result)
    },
    TOTAL_MS
  )

  test.skipIf(SERVER === "" || unavailable !== undefined)(
    `${JOBS} jobs, a PostgreSQL restart mid-run: none failed, every event once and in order` +
      (SERVER === ""
        ? " (skipped: needs DATABASE_URL, as the rest of this file)"
        : unavailable !== undefined
          ? ` (skipped: a private cluster cannot start here: ${unavailable})`
          : ""),
    async () => {
      const cluster = await startCluster()
      const result = await runTwentyJobs(cluster.url, async (_rt, stored) => {
        await until(async () => (await stored()) >= 300, { what: "jobs to stream", timeoutMs: TOTAL_MS / 3, everyMs: 100 })
        await cluster.restart()
      })
      expectEveryEventOnce(result)
    },
    TOTAL_MS
  )
})
