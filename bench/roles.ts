/**
 * Jobs per minute of a split deployment against one process: 200 one-turn jobs (a scripted model that
 * answers at once) queued through the API of 1 `--role api` + 2 `--role worker` processes
 * (KINTSUGI_WORKERS=2 each), and of one `--role all` process (KINTSUGI_WORKERS=4: the same workers), each
 * on a fresh PostgreSQL database; rounds alternate. An extra row runs the split with KINTSUGI_WORKERS=4
 * in each worker process (the same workers per process). `warm` jobs run on the same processes before
 * the timed ones (their first jobs load code and warm the JIT in each process: a cost a long-running
 * deployment pays once). Timed from the first timed POST to the last job settled; every job must have
 * settled completed, started and ended once, with one model request. Prints each figure with where a
 * job's time went (p50 of each phase), each process's CPU seconds, PostgreSQL's and the machine's, the
 * ratios split/all and the load (`uptime`) before and after. Needs DATABASE_URL.
 *
 *   DATABASE_URL=postgres://… bun bench/roles.ts [rounds=1] [jobs=200] [warm=0]
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { type Cleanups, createDeployment, servingPort } from "../test/support/deployment.ts"

const SERVER = process.env["DATABASE_URL"] ?? ""
if (SERVER === "") {
  console.error("bench/roles.ts needs DATABASE_URL (a PostgreSQL server): the embedded database runs one process")
  process.exit(2)
}
const ROUNDS = Number(process.argv[2] ?? 1)
const TIMED = Number(process.argv[3] ?? 200)
const WARM = Number(process.argv[4] ?? 0)
const JOBS = WARM + TIMED
const WORKERS = 4
const AGENT = "roles-bench"
const CLI = join(import.meta.dir, "..", "src", "cli.ts")
const CONCURRENT_POSTS = 8

const uptime = async () => (await new Response(Bun.spawn(["uptime"], { stdout: "pipe" }).stdout).text()).trim()

/** One `all` process; 1 api + 2 workers of WORKERS/2 loops each (the default row); the same with WORKERS loops each. */
type Layout = "split" | "all" | "split4"

const LABEL: Record<Layout, string> = {
  all: "1 all (4 workers)        ",
  split: "1 api + 2 worker (2 each)",
  split4: "1 api + 2 worker (4 each)"
}

const TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100

/** CPU seconds of process `pid` so far: its own, and that of its children it has reaped (its job children). */
const cpuSeconds = (pid: number): { readonly own: number; readonly children: number } => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const f = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number)
  // Fields 14–17 of proc(5) (utime, stime, cutime, cstime), counted from the state field (3).
  return { own: ((f[11] ?? 0) + (f[12] ?? 0)) / TICKS, children: ((f[13] ?? 0) + (f[14] ?? 0)) / TICKS }
}

/** CPU seconds of the local PostgreSQL server (its live processes, and the backends its postmaster reaped); 0 when it is elsewhere. */
const postgresSeconds = (): number => {
  let ticks = 0
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      if (!stat.includes("(postgres)")) continue
      const f = stat
        .slice(stat.lastIndexOf(")") + 2)
        .split(" ")
        .map(Number)
      ticks += (f[11] ?? 0) + (f[12] ?? 0) + (f[1] === 1 ? (f[13] ?? 0) + (f[14] ?? 0) : 0)
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks / TICKS
}

/** The machine's busy and total CPU seconds so far (proc(5) /proc/stat: all but idle and iowait are busy). */
const machineSeconds = (): { readonly busy: number; readonly total: number } => {
  const f = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number)
  const total = f.reduce((a, b) => a + b, 0)
  return { busy: (total - (f[3] ?? 0) - (f[4] ?? 0)) / TICKS, total: total / TICKS }
}

/** One run: a fresh database, the processes of `layout`, JOBS jobs through the API; jobs per minute. */
const runOnce = async (layout: Layout): Promise<number> => {
  // The job child's bundle for the sources as they are now, built ahead (the Dockerfile's step), so that
  // no run builds it and starts its first children from the sources meanwhile.
  await Bun.spawn(["bun", join(import.meta.dir, "..", "src", "worker", "child", "jobChildBundle.ts")], { stdout: "ignore" }).exited
  const cleanups: Cleanups = []
  const procs: Array<ReturnType<typeof Bun.spawn>> = []
  try {
    const { url, secretText, rt, model, token, base, root } = await createDeployment({
      server: SERVER,
      prefix: "kintsugi_bench_roles",
      agent: AGENT,
      steps: Array.from({ length: JOBS }, () => ({ kind: "turn" as const, text: "done" })),
      apiKey: "sk-bench-roles",
      tools: [],
      cleanups
    })

    const roles: Array<string> = []
    const start = async (role: "all" | "api" | "worker", i: number, workers: number) => {
      const proc = Bun.spawn(["bun", CLI, "serve", "--role", role], {
        env: {
          ...process.env,
          DATABASE_URL: url,
          PORT: "0",
          HOST: "127.0.0.1",
          KINTSUGI_DATA_DIR: join(base, `data-${role}-${i}`),
          KINTSUGI_JOB_ROOTS: root,
          KINTSUGI_SECRET_KEY: secretText,
          KINTSUGI_WORKERS: String(workers),
          KINTSUGI_LOG_FORMAT: "json"
        },
        stdout: "pipe",
        stderr: "ignore"
      })
      procs.push(proc)
      roles.push(`${role}-${i}`)
      const { port, out } = await servingPort(proc.stdout)
      if (port === 0) throw new Error(`${role} ${i} did not start: ${out}`)
      return port
    }
    const perWorker = layout === "split4" ? WORKERS : WORKERS / 2
    const apiPort =
      layout === "all"
        ? await start("all", 0, WORKERS)
        : await Promise.all([start("api", 0, WORKERS), start("worker", 0, perWorker), start("worker", 1, perWorker)]).then(([api]) => api)
    const sql = (text: string) => rt.runPromise(Effect.flatMap(SqlClient, (s) => s.unsafe<Record<string, unknown>>(text)))
    const settled = async (n: number) => {
      for (;;) {
        const rows = await sql(`SELECT count(*)::int AS n FROM runtime.job WHERE status IN ('completed', 'failed')`)
        if (Number(rows[0]?.["n"]) === n) return
        await Bun.sleep(50)
      }
    }

    let next = 0
    let upTo = WARM
    const post = async () => {
      while (next < upTo) {
        const i = next++
        const r = await fetch(`http://127.0.0.1:${apiPort}/api/jobs`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({
            agent: AGENT,
            task: `Say done [job-${i}].`,
            workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
            limits: { timeoutSec: 300 }
          })
        })
        if (r.status !== 201) throw new Error(`POST /api/jobs: ${r.status} ${await r.text()}`)
      }
    }
    if (WARM > 0) {
      await Promise.all(Array.from({ length: CONCURRENT_POSTS }, post))
      await settled(WARM)
    }
    upTo = JOBS
    // The timed jobs' phases are read from their rows: those created from here on.
    const timedFrom = String((await sql(`SELECT now()::text AS at`))[0]?.["at"])
    const idle = procs.map((p) => cpuSeconds(p.pid))
    const postgresBefore = postgresSeconds()
    const machineBefore = machineSeconds()
    const began = performance.now()
    await Promise.all(Array.from({ length: CONCURRENT_POSTS }, post))
    await settled(JOBS)
    const ms = performance.now() - began
    const postgres = postgresSeconds() - postgresBefore
    const machineAfter = machineSeconds()

    const jobs = await sql(`SELECT status,
        (SELECT count(*)::int FROM runtime.job_event e WHERE e.job_id = j.id AND e.type = 'job.started') AS starts,
        (SELECT count(*)::int FROM runtime.job_event e WHERE e.job_id = j.id AND e.type IN ('job.completed', 'job.failed')) AS ends
      FROM runtime.job j`)
    const once = jobs.filter((j) => j["status"] === "completed" && Number(j["starts"]) === 1 && Number(j["ends"]) === 1).length
    const requests = model.requests.filter((r) => r.path.endsWith("/chat/completions")).length
    const perJob = new Set(model.requests.map((r) => /\[job-(\d+)\]/.exec(JSON.stringify(r.body))?.[1])).size
    if (once !== JOBS || requests !== JOBS || perJob !== JOBS) {
      const failed = await sql(`SELECT reason, split_part(message, E'\n', 1) AS message, count(*)::int AS n FROM runtime.job
        WHERE status <> 'completed' GROUP BY 1, 2`)
      throw new Error(
        `${layout}: ${once}/${JOBS} jobs completed once, ${requests} model requests for ${perJob} jobs; not completed: ${JSON.stringify(failed)}`
      )
    }
    // Where a job's time goes: queued until claimed; claimed until its first event (envelope, child
    // start); first to terminal event (the child's run); terminal event until settled. The first job's
    // claim shows how soon an idle worker heard of it.
    const [times] = await sql(`WITH t AS (
        SELECT j.created_at, j.started_at, j.finished_at,
          (SELECT (e.event->>'at')::timestamptz FROM runtime.job_event e WHERE e.job_id = j.id ORDER BY e.seq LIMIT 1) AS first_at,
          (SELECT (e.event->>'at')::timestamptz FROM runtime.job_event e WHERE e.job_id = j.id AND e.type IN ('job.completed', 'job.failed')) AS end_at
        FROM runtime.job j WHERE j.created_at >= '${timedFrom}'::timestamptz)
      SELECT
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)) AS wait,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM first_at - started_at)) AS boot,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM end_at - first_at)) AS run,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - end_at)) AS settle,
        (SELECT extract(epoch FROM started_at - created_at) FROM t ORDER BY created_at LIMIT 1) AS firstclaim,
        extract(epoch FROM max(created_at) - min(created_at)) AS posting
      FROM t`)
    const s = (key: string) => Number(times?.[key]).toFixed(2)
    const perMin = TIMED / (ms / 60_000)
    // From the first timed POST on (start-up and the warm jobs excluded).
    const cpu = procs.map((p, i) => {
      const now = cpuSeconds(p.pid)
      return { own: now.own - (idle[i]?.own ?? 0), children: now.children - (idle[i]?.children ?? 0) }
    })
    console.log(
      `${LABEL[layout]}  ${TIMED} jobs${WARM > 0 ? ` (after ${WARM} warm)` : ""} in ${(ms / 1000).toFixed(1)} s: ${perMin.toFixed(1)} jobs/min; every job completed once (posting ${Number(times?.["posting"]).toFixed(1)} s; first job claimed after ${s("firstclaim")} s; per job p50 queued ${s("wait")} s, claim to first event ${s("boot")} s, first to last event ${s("run")} s, last event to settled ${s("settle")} s)`
    )
    console.log(
      `    CPU s from the first POST (process + its reaped job children): ${procs.map((_, i) => `${roles[i]} ${cpu[i]?.own.toFixed(1)} + ${cpu[i]?.children.toFixed(1)}`).join(", ")}; postgres ${postgres.toFixed(1)}; the machine busy ${(machineAfter.busy - machineBefore.busy).toFixed(1)} of ${(machineAfter.total - machineBefore.total).toFixed(1)}`
    )
    return perMin
  } finally {
    for (const p of procs) p.kill("SIGTERM")
    await Promise.all(procs.map((p) => p.exited))
    for (const c of cleanups.reverse()) await c()
  }
}

console.log(`before: ${await uptime()}`)
const results: Record<Layout, Array<number>> = { split: [], all: [], split4: [] }
const ORDER: ReadonlyArray<Layout> = ["all", "split", "split4"]
for (let round = 0; round < ROUNDS; round++) {
  for (const layout of round % 2 === 0 ? ORDER : [...ORDER].reverse()) results[layout].push(await runOnce(layout))
}
const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
const all = mean(results.all)
console.log(
  `jobs/min: split ${mean(results.split).toFixed(1)} vs all ${all.toFixed(1)}; ratio split/all ${(mean(results.split) / all).toFixed(2)} (${ROUNDS} round(s))`
)
console.log(
  `extra row, 4 workers per process: split ${mean(results.split4).toFixed(1)} vs all ${all.toFixed(1)}; ratio ${(mean(results.split4) / all).toFixed(2)}`
)
console.log(`after: ${await uptime()}`)
process.exit(0)
