/**
 * `kintsugi --help` wall time (spawn → exit), median of RUNS, beside a bare `bun -e ''` (what any
 * Bun command costs here). With BEFORE=<another checkout>, its `src/cli.ts --help` is timed in
 * alternation, so all see the same machine load.
 */
import { join } from "node:path"

const RUNS = Number(process.env["RUNS"] ?? 10)
const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const entries: Array<[string, string]> = [["this checkout", join(import.meta.dir, "..", "src", "cli.ts")]]
const before = process.env["BEFORE"]
if (before !== undefined) entries.push([before, join(before, "src", "cli.ts")])
const times = new Map<string, Array<number>>(entries.map(([name]) => [name, []]))

const BARE = "bare bun -e ''"
entries.push([BARE, ""])
times.set(BARE, [])

const once = (cli: string): number => {
  const t0 = performance.now()
  const p = Bun.spawnSync(cli === "" ? ["bun", "-e", ""] : ["bun", cli, "--help"], { stdout: "pipe", stderr: "pipe" })
  const ms = performance.now() - t0
  if (p.exitCode !== 0) throw new Error(`${cli} --help exited ${p.exitCode}`)
  return ms
}
for (let i = 0; i < RUNS; i++) for (const [name, cli] of entries) times.get(name)?.push(once(cli))
for (const [name, xs] of times)
  console.log(`${name === BARE ? name : `kintsugi --help (${name})`}, median of ${RUNS}: ${median(xs).toFixed(1)} ms`)
