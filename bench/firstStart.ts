/**
 * `kintsugi serve` (what `bun start` runs) on the embedded database: spawn → first 200 from /healthz,
 * median of RUNS (default 5) each, interleaved: a first start on an empty data dir with no template
 * (initdb + every migration, as before templates), a first start on an empty data dir from the
 * data-dir template (dataDirTemplate.ts; built once beforehand, as at install), and a warm restart on
 * an existing data dir (the reference). `BASELINE=<another checkout>` (e.g. /work/main) times that
 * checkout's first start from the template and warm restart in the same rounds, so a change is
 * compared in one machine state; `COLD=0` leaves out the initdb row. Not a test: `bun bench/firstStart.ts`.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"

const RUNS = Number(process.env["RUNS"] ?? 5)
/** `COLD=0` leaves out the initdb row (seconds per round). */
const COLD = process.env["COLD"] !== "0"
const CLI = path.join(import.meta.dir, "..", "src", "cli.ts")
const BASELINE = process.env["BASELINE"] === undefined || process.env["BASELINE"] === "" ? undefined : path.resolve(process.env["BASELINE"])
const root = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-bench-start-"))
const templates = path.join(root, "templates")
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

const freePort = () => {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
  const port = s.port ?? 0
  void s.stop(true)
  return port
}

const baseEnv = (home: string, templatesSetting: string): Record<string, string> => ({
  PATH: process.env["PATH"] ?? "/usr/bin:/bin",
  HOME: process.env["HOME"] ?? os.homedir(),
  KINTSUGI_DATA_DIR: home,
  KINTSUGI_ADMIN_PASSWORD: "bench-admin-password",
  KINTSUGI_DB_TEMPLATES: templatesSetting,
  KINTSUGI_LOG_FORMAT: "json"
})

/** Spawns serve, polls /healthz every 5 ms, returns ms to the first 200, then stops it (SIGTERM). */
const startOnce = async (home: string, templatesSetting: string, cli: string = CLI): Promise<number> => {
  const port = freePort()
  const t0 = performance.now()
  const proc = Bun.spawn([process.execPath, cli, "serve"], {
    env: { ...baseEnv(home, templatesSetting), PORT: String(port), HOST: "127.0.0.1" },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe"
  })
  let ms = NaN
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`serve exited ${proc.exitCode}: ${await new Response(proc.stderr).text()}`)
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false
    )
    if (ok) {
      ms = performance.now() - t0
      break
    }
    await Bun.sleep(5)
  }
  proc.kill("SIGTERM")
  await proc.exited
  return ms
}

// The template, as `bun install` + the Docker image's build step make it (Db.buildDataDirTemplate).
for (const tree of [path.join(import.meta.dir, ".."), ...(BASELINE === undefined ? [] : [BASELINE])]) {
  const build = Bun.spawnSync(
    [
      process.execPath,
      "-e",
      `const { buildDataDirTemplate } = await import(${JSON.stringify(path.join(tree, "src", "db", "Db.ts"))}); console.log(await buildDataDirTemplate())`
    ],
    { env: baseEnv(path.join(root, "unused"), templates), stderr: "inherit", cwd: tree }
  )
  if (build.exitCode !== 0) throw new Error(`cannot build the data-dir template of ${tree}`)
}

const cold: Array<number> = []
const fromTemplate: Array<number> = []
const warm: Array<number> = []
const baseTemplate: Array<number> = []
const baseWarm: Array<number> = []
const warmHome = path.join(root, "warm")
const baseWarmHome = path.join(root, "baseline-warm")
const baseCli = BASELINE === undefined ? undefined : path.join(BASELINE, "src", "cli.ts")
await startOnce(warmHome, "off")
if (baseCli !== undefined) await startOnce(baseWarmHome, "off", baseCli)
for (let i = 0; i < RUNS; i++) {
  if (COLD) cold.push(await startOnce(path.join(root, `cold-${i}`), "off"))
  fromTemplate.push(await startOnce(path.join(root, `template-${i}`), templates))
  warm.push(await startOnce(warmHome, "off"))
  if (baseCli !== undefined) {
    baseTemplate.push(await startOnce(path.join(root, `baseline-template-${i}`), templates, baseCli))
    baseWarm.push(await startOnce(baseWarmHome, "off", baseCli))
  }
}
const row = (label: string, xs: ReadonlyArray<number>) =>
  console.log(
    `${label.padEnd(52)} ${median(xs).toFixed(0).padStart(6)} ms   ${(median(xs) / median(warm)).toFixed(2)}x warm` +
      `${baseWarm.length > 0 ? `   ${(median(xs) / median(baseWarm)).toFixed(2)}x baseline warm` : ""}   (${xs.map((x) => x.toFixed(0)).join(", ")})`
  )
console.log(
  `kintsugi serve → /healthz 200, embedded database, median of ${RUNS}; ${os.cpus().length} CPUs, load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`
)
if (COLD) row("first start, empty data dir, no template (initdb)", cold)
row("first start, empty data dir, from the template", fromTemplate)
row("warm restart (existing data dir; the reference)", warm)
if (BASELINE !== undefined) {
  row(`baseline ${BASELINE}: first start from the template`, baseTemplate)
  row(`baseline ${BASELINE}: warm restart`, baseWarm)
}
Bun.spawnSync(["chmod", "-R", "u+w", root])
fs.rmSync(root, { recursive: true, force: true })
