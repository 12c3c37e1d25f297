/**
 * Issue 29's Goals, each figure beside its reference measured in the same run: runs the benches below
 * as child processes, reads their `ROW <id> key=value …` lines, and prints one table (measure | figure |
 * reference | ratio | goal | met? | load average at the row's start and end). Rows and their benches:
 *   events       bench/events.ts: events stored/s, 4 firehose jobs, 32 readers vs none, on the embedded
 *                database and on PostgreSQL; then the same bench in BEFORE (its readers round) for "main before"
 *   sse-queries  bench/sse.ts: queries/s with 200 idle SSE subscribers vs 0
 *   sse-lag      bench/sse.ts: live lag p99 at 200 subscribers vs 20
 *   session      bench/requestPath.ts: GET /api/session p50 while 4 jobs run vs idle
 *   catalog      bench/requestPath.ts: the signed-in catalog page at 32 clients vs /healthz req/s; its p99
 *   grep         bench/grep.ts: the first grep call of a fresh job vs rg, per pattern
 *   shell        bench/shell.ts: `shell true` unconfined vs a bare spawn
 *   roles        bench/roles.ts: jobs/min of 1 API + 2 worker processes vs one `all` process (PostgreSQL)
 *
 *   bun bench/load.ts [--quick] [--only <row>[,<row>…]] [--db both|embedded|postgres] [--verbose]
 *   DATABASE_URL=postgres://…/test   PostgreSQL for every row but events, which runs on both
 *   BEFORE=<checkout>                the events row's "main before" reference: a worktree of main before the
 *                                    batched events (git worktree add /tmp/load-before baf1492^) or before the
 *                                    per-topic caches and one reader per process too (fcec409^); the bench
 *                                    is copied into its bench/. Without a node_modules there, one is made of
 *                                    links to this one's entries: its own .cache, since a job-child bundle built
 *                                    into a shared cache removes the other checkout's bundle under running jobs
 *
 * --quick: fewer deltas, shorter windows, fewer rounds and jobs (about 10 minutes); the default is the
 * benches' own sizes. --db both runs every row on both databases. --verbose echoes each bench's output.
 * Each bench is bounded in time (15 minutes quick, 60 full) and killed with its process group after.
 */
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"

type Db = "embedded" | "postgres"
type Fields = Readonly<Record<string, string>>

interface Line {
  readonly measure: string
  readonly figure: string
  readonly reference: string
  readonly ratio: string
  readonly goal: string
  readonly met: string
  readonly load: string
}

interface Run {
  readonly code: number
  readonly rows: ReadonlyMap<string, Fields>
  readonly out: ReadonlyArray<string>
  readonly err: string
  readonly seconds: number
}

const args = process.argv.slice(2)
const flag = (name: string) => args.includes(name)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const QUICK = flag("--quick")
const VERBOSE = flag("--verbose")
const ROW_IDS = ["events", "sse-queries", "sse-lag", "session", "catalog", "grep", "shell", "roles"] as const
const only = option("--only")
  ?.split(",")
  .map((s) => s.trim())
  .filter((s) => s.length > 0)
const unknown = (only ?? []).filter((id) => !(ROW_IDS as ReadonlyArray<string>).includes(id))
if (unknown.length > 0) {
  console.error(`unknown row(s): ${unknown.join(", ")}; rows: ${ROW_IDS.join(", ")}`)
  process.exit(2)
}
const wanted = (id: (typeof ROW_IDS)[number]) => only === undefined || only.includes(id)
const SERVER = process.env["DATABASE_URL"]
const dbOption = option("--db")
if (dbOption !== undefined && !["both", "embedded", "postgres"].includes(dbOption)) {
  console.error("--db takes both, embedded or postgres")
  process.exit(2)
}
if (dbOption !== undefined && dbOption !== "embedded" && SERVER === undefined) {
  console.error(`--db ${dbOption} needs DATABASE_URL`)
  process.exit(2)
}
/** The databases of a row measured on one: PostgreSQL when DATABASE_URL is set, unless --db says otherwise. */
const oneDb: ReadonlyArray<Db> =
  dbOption === "both" ? ["embedded", "postgres"] : dbOption === "embedded" || SERVER === undefined ? ["embedded"] : ["postgres"]
/** The databases of a row the goal names both of. */
const bothDbs: ReadonlyArray<Db> = SERVER === undefined || dbOption === "embedded" ? ["embedded"] : ["embedded", "postgres"]
const BEFORE = process.env["BEFORE"]
const BEFORE_COMMIT =
  BEFORE === undefined
    ? undefined
    : Bun.spawnSync(["git", "-C", BEFORE, "rev-parse", "--short", "HEAD"], { stderr: "ignore" }).stdout.toString().trim() || undefined
const BENCH = import.meta.dir
const LIMIT_MS = (QUICK ? 15 : 60) * 60_000

const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")
const dbName = (db: Db) => (db === "embedded" ? "embedded" : "PostgreSQL")
const envFor = (db: Db, extra: Record<string, string>): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v
  if (db === "embedded") delete env["DATABASE_URL"]
  // BEFORE is this file's option for the events row; grep.ts and shell.ts read one of their own.
  delete env["BEFORE"]
  return { ...env, ...extra }
}

/** `ROW <id> key=value …` lines of a bench's output, by id. */
const parseRows = (lines: ReadonlyArray<string>): Map<string, Fields> => {
  const rows = new Map<string, Fields>()
  for (const line of lines) {
    const [tag, id, ...pairs] = line.trim().split(/\s+/)
    if (tag !== "ROW" || id === undefined) continue
    const fields: Record<string, string> = {}
    for (const pair of pairs) {
      const eq = pair.indexOf("=")
      if (eq > 0) fields[pair.slice(0, eq)] = pair.slice(eq + 1)
    }
    rows.set(id, fields)
  }
  return rows
}

const readLines = async (stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) => {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true })
    const lines = buffer.split("\n")
    buffer = lines.pop() ?? ""
    for (const line of lines) onLine(line)
  }
  if (buffer.length > 0) onLine(buffer)
}

/** One bench as a child in its own process group, bounded by LIMIT_MS; its output's lines and `ROW`s. */
const runBench = async (argv: ReadonlyArray<string>, env: Record<string, string>, cwd = join(BENCH, "..")): Promise<Run> => {
  const started = performance.now()
  const child = Bun.spawn(["bun", ...argv], { cwd, env, stdout: "pipe", stderr: "pipe", stdin: "ignore", detached: true })
  const out: Array<string> = []
  const errLines: Array<string> = []
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    try {
      process.kill(-child.pid, "SIGKILL")
    } catch {
      child.kill("SIGKILL")
    }
  }, LIMIT_MS)
  await Promise.all([
    readLines(child.stdout, (line) => {
      out.push(line)
      if (VERBOSE) console.log(`    ${line}`)
    }),
    readLines(child.stderr, (line) => {
      errLines.push(line)
      if (VERBOSE) console.log(`    ! ${line}`)
    }),
    child.exited
  ])
  clearTimeout(timer)
  const said = errLines.map((l) => l.trim()).filter((l) => l.length > 0)
  const lastErr = said.findLast((l) => /^error\b/i.test(l)) ?? said.at(-1) ?? ""
  return {
    code: timedOut ? -1 : (child.exitCode ?? -1),
    rows: parseRows(out),
    out,
    err: timedOut ? `stopped after ${LIMIT_MS / 60_000} min` : lastErr.trim().slice(0, 160),
    seconds: (performance.now() - started) / 1000
  }
}

const num = (fields: Fields | undefined, key: string): number => Number(fields?.[key] ?? Number.NaN)
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "—")
const times = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : "—")
const met = (...checks: ReadonlyArray<boolean | undefined>): string =>
  checks.some((c) => c === undefined) ? "—" : checks.every((c) => c === true) ? "yes" : "no"
/** A comparison that cannot be judged (a figure missing) is undefined. */
const atMost = (x: number, limit: number) => (Number.isFinite(x) ? x <= limit : undefined)
const atLeast = (x: number, limit: number) => (Number.isFinite(x) ? x >= limit : undefined)

const table: Array<Line> = []
const failedLine = (measure: string, run: Run | undefined, goal: string, reason?: string): Line => ({
  measure,
  figure: reason ?? (run === undefined ? "not run" : `failed (exit ${run.code})${run.err === "" ? "" : `: ${run.err}`}`),
  reference: "",
  ratio: "",
  goal,
  met: "—",
  load: ""
})

/** Runs `measure` between two load readings; each line it returns carries them. */
const row = async (label: string, measure: () => Promise<ReadonlyArray<Omit<Line, "load">>>) => {
  const start = loadavg()
  const began = performance.now()
  console.log(`${label}: running (load average ${start})`)
  const lines = await measure()
  const end = loadavg()
  console.log(`${label}: ${((performance.now() - began) / 1000).toFixed(0)} s (load average ${end})`)
  for (const line of lines) table.push({ ...line, load: `${start} → ${end}` })
}

const eventsBench = async (db: Db): Promise<ReadonlyArray<Omit<Line, "load">>> => {
  const deltas = QUICK ? "2000" : "20000"
  const ours = await runBench(["bench/events.ts"], envFor(db, { DELTAS: deltas }))
  const r = ours.rows.get(`events-${db}`)
  const measure = `events stored/s, 4 firehose jobs × ${deltas} deltas, 32 readers (${dbName(db)})`
  if (r === undefined) return [failedLine(measure, ours, "≥ 0.5× without readers; ≥ 10× main before")]
  const rate = num(r, "readersRate")
  const lines: Array<Omit<Line, "load">> = [
    {
      measure: `${measure}; ${r["readersStored"]} stored, ${r["readersFailed"]} jobs failed`,
      figure: fmt(rate, 0),
      reference: `no readers: ${fmt(num(r, "aloneRate"), 0)} (${r["aloneStored"]} stored, ${r["aloneFailed"]} failed)`,
      ratio: times(num(r, "ratio")),
      goal: "≥ 0.5×",
      met: met(atLeast(num(r, "ratio"), 0.5), r["readersFailed"] === "0" && r["aloneFailed"] === "0")
    }
  ]
  const vsMain = `the same vs main before (${BEFORE_COMMIT === undefined ? "BEFORE" : `BEFORE at ${BEFORE_COMMIT}`}; ${dbName(db)})`
  if (BEFORE === undefined) {
    lines.push({ measure: vsMain, figure: fmt(rate, 0), reference: "not run (set BEFORE=<checkout>)", ratio: "", goal: "≥ 10×", met: "—" })
    return lines
  }
  // This file's bench in the other checkout (under names of its own), its readers round only.
  copyFileSync(join(BENCH, "events.ts"), join(BEFORE, "bench", "loadEvents.ts"))
  copyFileSync(join(BENCH, "sseClients.ts"), join(BEFORE, "bench", "loadSseClients.ts"))
  const before = await runBench(
    ["bench/loadEvents.ts"],
    envFor(db, { DELTAS: deltas, EVENTS_ROUNDS: "readers", EVENTS_CLIENTS: "loadSseClients.ts" }),
    BEFORE
  )
  const b = before.rows.get(`events-${db}`)
  if (b === undefined) {
    lines.push({ ...failedLine(vsMain, before, "≥ 10×"), figure: fmt(rate, 0), reference: failedLine(vsMain, before, "").figure })
    return lines
  }
  const ratio = rate / num(b, "readersRate")
  lines.push({
    measure: vsMain,
    figure: fmt(rate, 0),
    reference: `main before: ${fmt(num(b, "readersRate"), 0)} (${b["readersStored"]} stored, ${b["readersFailed"]} failed)`,
    ratio: times(ratio),
    goal: "≥ 10×",
    met: met(atLeast(ratio, 10))
  })
  return lines
}

const sseBench = async (db: Db): Promise<ReadonlyArray<Omit<Line, "load">>> => {
  const parts = [wanted("sse-queries") ? "queries" : "", wanted("sse-lag") ? "lag" : ""].filter((p) => p !== "").join(",")
  const run = await runBench(
    ["bench/sse.ts"],
    envFor(db, { SSE_PARTS: parts, ...(QUICK ? { SSE_WINDOW_MS: "10000", SSE_LAG_MS: "6000" } : {}) })
  )
  const lines: Array<Omit<Line, "load">> = []
  if (parts.includes("queries")) {
    const kinds = db === "postgres" ? (["statements", "commits"] as const) : (["statements"] as const)
    for (const kind of kinds) {
      const measure = `queries/s, 200 idle SSE subscribers (${kind === "statements" ? "the process's statements" : "xact_commit, every connection"}; ${dbName(db)})`
      const r = run.rows.get(`sse-${kind}-${db}`)
      if (r === undefined) lines.push(failedLine(measure, run, "≤ 2×"))
      else
        lines.push({
          measure,
          figure: fmt(num(r, "at200"), 1),
          reference: `0 subscribers: ${fmt(num(r, "at0"), 1)}`,
          ratio: times(num(r, "ratio")),
          goal: "≤ 2×",
          met: met(atMost(num(r, "ratio"), 2))
        })
    }
  }
  if (parts.includes("lag")) {
    const r = run.rows.get(`sse-lag-${db}`)
    const measure = `live lag p99, 200 subscribers (${dbName(db)}; ${r?.["deliveries200"] ?? "?"} deliveries; p50 ${fmt(num(r, "p50at200"), 0)} ms vs ${fmt(num(r, "p50at20"), 0)} ms)`
    if (r === undefined) lines.push(failedLine("live lag p99, 200 subscribers", run, "≤ 2× and ≤ 1000 ms"))
    else
      lines.push({
        measure,
        figure: `${fmt(num(r, "p99at200"), 0)} ms`,
        reference: `20 subscribers: ${fmt(num(r, "p99at20"), 0)} ms (${r["deliveries20"]} deliveries)`,
        ratio: times(num(r, "ratio")),
        goal: "≤ 2× and ≤ 1000 ms",
        met: met(atMost(num(r, "ratio"), 2), atMost(num(r, "p99at200"), 1000))
      })
  }
  return lines
}

const requestPathBench = async (db: Db): Promise<ReadonlyArray<Omit<Line, "load">>> => {
  const sessionMeasure = `GET /api/session p50 while 4 jobs run (${dbName(db)})`
  const catalogMeasure = `signed-in catalog page, 32 clients, req/s (${dbName(db)})`
  const rows = [wanted("session") ? "session" : "", wanted("catalog") ? "catalog" : ""]
  if (!existsSync(join(BENCH, "requestPath.ts")))
    return [
      ...(rows.includes("session") ? [failedLine(sessionMeasure, undefined, "≤ 1.5×", "not measured (bench/requestPath.ts missing)")] : []),
      ...(rows.includes("catalog")
        ? [failedLine(catalogMeasure, undefined, "≥ 0.5×; p99 ≤ 25 ms", "not measured (bench/requestPath.ts missing)")]
        : [])
    ]
  const run = await runBench(["bench/requestPath.ts", ...(QUICK ? ["--quick"] : [])], envFor(db, {}))
  const lines: Array<Omit<Line, "load">> = []
  if (rows.includes("session")) {
    const r = run.rows.get("session-jobs")
    if (r === undefined) lines.push(failedLine(sessionMeasure, run, "≤ 1.5×"))
    else
      lines.push({
        measure: sessionMeasure,
        figure: `${fmt(num(r, "busyP50ms"), 2)} ms`,
        reference: `idle: ${fmt(num(r, "idleP50ms"), 2)} ms`,
        ratio: times(num(r, "ratio")),
        goal: "≤ 1.5×",
        met: met(atMost(num(r, "ratio"), 1.5))
      })
  }
  if (rows.includes("catalog")) {
    const r = run.rows.get("catalog-vs-healthz")
    if (r === undefined) lines.push(failedLine(catalogMeasure, run, "≥ 0.5×; p99 ≤ 25 ms"))
    else
      lines.push({
        measure: `${catalogMeasure}; its p99 ${fmt(num(r, "p99ms"), 1)} ms`,
        figure: fmt(num(r, "catalogRps"), 0),
        reference: `/healthz: ${fmt(num(r, "healthzRps"), 0)} req/s (this host's ceiling for the page's bytes: a bare Bun.serve answering them from memory reaches ${fmt(num(r, "bareRatio"), 2)}× its own /healthz; the app's CPU per request ${fmt(num(r, "catalogCpuUs"), 1)} µs vs ${fmt(num(r, "healthzCpuUs"), 1)} µs)`,
        ratio: times(num(r, "ratio")),
        goal: "≥ 0.5×; p99 ≤ 25 ms",
        met: met(atLeast(num(r, "ratio"), 0.5), atMost(num(r, "p99ms"), 25))
      })
  }
  return lines
}

const grepBench = async (): Promise<ReadonlyArray<Omit<Line, "load">>> => {
  const runs = QUICK ? "3" : "5"
  const run = await runBench(["bench/grep.ts"], envFor("embedded", { WARM: "0", FRESH_RUNS: runs }))
  const found = [...run.rows.entries()].filter(([id]) => id.startsWith("grep-first-call-"))
  if (found.length === 0) return [failedLine("grep, first call of a fresh job", run, "≤ 1.5×")]
  return found.map(([, r]) => ({
    measure: `grep, first call of a fresh job: ${(r["case"] ?? "").replaceAll("_", " ")} (median of ${runs})`,
    figure: `${fmt(num(r, "ms"), 0)} ms`,
    reference: r["rgMs"] === undefined ? "rg not installed" : `rg: ${fmt(num(r, "rgMs"), 0)} ms`,
    ratio: times(num(r, "ratio")),
    goal: "≤ 1.5×",
    met: met(atMost(num(r, "ratio"), 1.5))
  }))
}

const shellBench = async (): Promise<ReadonlyArray<Omit<Line, "load">>> => {
  const runs = QUICK ? "30" : "100"
  const run = await runBench(["bench/shell.ts"], envFor("embedded", { SHELL_ONLY: "unconfined", RUNS: runs, FLOOD: "0" }))
  const r = run.rows.get("shell-true")
  const measure = `shell true unconfined (median of ${runs} interleaved rounds)`
  if (r === undefined) return [failedLine(measure, run, "≤ 1.5×")]
  return [
    {
      measure: `${measure}; the spawn in a new session ${fmt(num(r, "detachedMs"), 2)} ms`,
      figure: `${fmt(num(r, "ms"), 2)} ms`,
      reference: `bare spawn: ${fmt(num(r, "bareMs"), 2)} ms`,
      ratio: times(num(r, "ratio")),
      goal: "≤ 1.5×",
      met: met(atMost(num(r, "ratio"), 1.5))
    }
  ]
}

const rolesBench = async (): Promise<ReadonlyArray<Omit<Line, "load">>> => {
  const jobs = QUICK ? "60" : "200"
  const measure = `jobs/min, 1 API + 2 worker processes, ${jobs} jobs (PostgreSQL)`
  if (SERVER === undefined) return [failedLine(measure, undefined, "≥ 1.3×; every job once", "not measured (needs DATABASE_URL)")]
  const run = await runBench(["bench/roles.ts", "1", jobs], envFor("postgres", {}))
  const text = run.out.join("\n")
  const m = /split ([\d.]+) vs all ([\d.]+)/.exec(text)
  if (m === null || run.code !== 0) return [failedLine(measure, run, "≥ 1.3×; every job once")]
  const [split, all] = [Number(m[1]), Number(m[2])]
  const once = /every job completed once/.exec(text) !== null
  return [
    {
      measure: `${measure}; ${once ? "every job completed once" : "jobs not checked once"}`,
      figure: fmt(split, 1),
      reference: `one all process: ${fmt(all, 1)}`,
      ratio: times(split / all),
      goal: "≥ 1.3×; every job once",
      met: met(atLeast(split / all, 1.3), once)
    }
  ]
}

const loadAtStart = loadavg()
console.log(
  `bench/load.ts${QUICK ? " --quick" : ""}: ${os.cpus().length} cores, Bun ${Bun.version}, databases: ${bothDbs.map(dbName).join(" and ")} for events, ${oneDb.map(dbName).join(" and ")} for the rest; load average ${loadAtStart}`
)
if (BEFORE !== undefined && !existsSync(join(BEFORE, "src"))) {
  console.error("BEFORE names no checkout (no src/ in it)")
  process.exit(2)
}
if (BEFORE !== undefined) {
  const modules = join(BEFORE, "node_modules")
  if (!existsSync(modules)) {
    mkdirSync(modules)
    const ours = join(BENCH, "..", "node_modules")
    for (const name of readdirSync(ours)) if (name !== ".cache") symlinkSync(join(ours, name), join(modules, name))
  } else if (lstatSync(modules).isSymbolicLink()) {
    console.error("BEFORE's node_modules is a link: make it a directory of links (the job-child bundle cache is node_modules/.cache)")
    process.exit(2)
  }
}

if (wanted("events")) for (const db of bothDbs) await row(`events (${dbName(db)})`, () => eventsBench(db))
if (wanted("sse-queries") || wanted("sse-lag")) for (const db of oneDb) await row(`sse (${dbName(db)})`, () => sseBench(db))
if (wanted("session") || wanted("catalog")) for (const db of oneDb) await row(`request path (${dbName(db)})`, () => requestPathBench(db))
if (wanted("grep")) await row("grep", grepBench)
if (wanted("shell")) await row("shell", shellBench)
if (wanted("roles")) await row("roles", rolesBench)

console.log("")
console.log("| measure | figure | reference | ratio | goal | met? | load average (1, 5, 15 min) at the row's start → end |")
console.log("|---|---|---|---|---|---|---|")
for (const l of table) console.log(`| ${l.measure} | ${l.figure} | ${l.reference} | ${l.ratio} | ${l.goal} | ${l.met} | ${l.load} |`)
console.log("")
console.log(`load average at start ${loadAtStart}, at end ${loadavg()}`)
