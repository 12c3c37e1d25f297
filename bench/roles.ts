/**
 * Jobs per minute of a split deployment against one process: 200 one-turn jobs (a scripted model that
 * answers at once) queued through the API of 1 `--role api` + 2 `--role worker` processes
 * (KINTSUGI_WORKERS=2 each), and of one `--role all` process (KINTSUGI_WORKERS=4: the same workers), each
 * on a fresh PostgreSQL database; rounds alternate. Timed from the first POST to the last job settled;
 * every job must have settled completed, started and ended once, with one model request. Prints each
 * figure with where a job's time went (p50 of each phase) and each process's CPU seconds, the ratio
 * split/all and the load (`uptime`) before and after. Needs DATABASE_URL.
 *
 *   DATABASE_URL=postgres://… bun bench/roles.ts [rounds=1] [jobs=200]
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { type Cleanups, createDeployment, servingPort } from "../test/support/deployment.ts"

const SERVER = process.env["DATABASE_URL"] ?? ""
if (SERVER === "") {
  console.error("bench/roles.ts needs DATABASE_URL (a PostgreSQL server): the embedded database runs one process")
  process.exit(2)
}
const ROUNDS = Number(process.argv[2] ?? 1)
const JOBS = Number(process.argv[3] ?? 200)
const WORKERS = 4
const AGENT = "roles-bench"
const CLI = join(import.meta.dir, "..", "src", "cli.ts")
const CONCURRENT_POSTS = 8

const uptime = async () => (await new Response(Bun.spawn(["uptime"], { stdout: "pipe" }).stdout).text()).trim()

type Layout = "split" | "all"

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
    const apiPort =
      layout === "all"
        ? await start("all", 0, WORKERS)
        : await Promise.all([start("api", 0, WORKERS), start("worker", 0, WORKERS / 2), start("worker", 1, WORKERS / 2)]).then(
            ([api]) => api
          )
    const sql = (text: string) => rt.runPromise(Effect.flatMap(SqlClient, (s) => s.unsafe<Record<string, unknown>>(text)))

    const idle = procs.map((p) => cpuSeconds(p.pid))
    const began = performance.now()
    let next = 0
    const post = async () => {
      while (next < JOBS) {
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
    await Promise.all(Array.from({ length: CONCURRENT_POSTS }, post))
    for (;;) {
      const rows = await sql(`SELECT count(*)::int AS n FROM runtime.job WHERE status IN ('completed', 'failed')`)
      if (Number(rows[0]?.["n"]) === JOBS) break
      await Bun.sleep(50)
    }
    const ms = performance.now() - began

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
        FROM runtime.job j)
      SELECT
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)) AS wait,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM first_at - started_at)) AS boot,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM end_at - first_at)) AS run,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - end_at)) AS settle,
        (SELECT extract(epoch FROM started_at - created_at) FROM t ORDER BY created_at LIMIT 1) AS firstclaim,
        extract(epoch FROM max(created_at) - min(created_at)) AS posting
      FROM t`)
    const s = (key: string) => Number(times?.[key]).toFixed(2)
    const perMin = JOBS / (ms / 60_000)
    // From the first POST on (start-up excluded).
    const cpu = procs.map((p, i) => {
      const now = cpuSeconds(p.pid)
      return { own: now.own - (idle[i]?.own ?? 0), children: now.children - (idle[i]?.children ?? 0) }
    })
    console.log(
      `${layout === "all" ? "1 all (4 workers)        " : "1 api + 2 worker (2 each)"}  ${JOBS} jobs in ${(ms / 1000).toFixed(1)} s: ${perMin.toFixed(1)} jobs/min; every job completed once (posting ${Number(times?.["posting"]).toFixed(1)} s; first job claimed after ${s("firstclaim")} s; per job p50 queued ${s("wait")} s, claim to first event ${s("boot")} s, first to last event ${s("run")} s, last event to settled ${s("settle")} s)`
    )
    console.log(
      `    CPU s from the first POST (process + its reaped job children): ${procs.map((_, i) => `${roles[i]} ${cpu[i]?.own.toFixed(1)} + ${cpu[i]?.children.toFixed(1)}`).join(", ")}`
    )
    return perMin
  } finally {
    for (const p of procs) p.kill("SIGTERM")
    await Promise.all(procs.map((p) => p.exited))
    for (const c of cleanups.reverse()) await c()
  }
}

console.log(`before: ${await uptime()}`)
const results: Record<Layout, Array<number>> = { split: [], all: [] }
for (let round = 0; round < ROUNDS; round++) {
  for (const layout of round % 2 === 0 ? (["all", "split"] as const) : (["split", "all"] as const))
    results[layout].push(await runOnce(layout))
}
const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
console.log(
  `jobs/min: split ${mean(results.split).toFixed(1)} vs all ${mean(results.all).toFixed(1)}; ratio split/all ${(mean(results.split) / mean(results.all)).toFixed(2)} (${ROUNDS} round(s))`
)
console.log(`after: ${await uptime()}`)
process.exit(0)
