/**
 * Turns a plain `bun test` into `bun test --parallel=<KINTSUGI_TEST_WORKERS, 3> --timings=test/timings.json`
 * with the same arguments, and exits with its status before any test file loads. Most files wait on
 * child processes and servers, so three workers keep two cores busy. A run that already chose
 * (`--parallel`, a worker of one) or `KINTSUGI_TEST_WORKERS=1` runs as it is.
 */
import { existsSync, readFileSync } from "node:fs"
import path from "node:path"

const REPO = path.join(import.meta.dir, "..", "..")
const TIMINGS = path.join(REPO, "test", "timings.json")
const DEFAULT_WORKERS = "3"

/** bun's own argv: `process.argv` in a test process holds neither `test` nor its flags. */
const commandLine = (): Array<string> =>
  readFileSync("/proc/self/cmdline", "latin1")
    .split("\0")
    .filter((a) => a !== "")

export const runInParallel = async (): Promise<void> => {
  if (process.env["BUN_TEST_WORKER_ID"] !== undefined || process.platform !== "linux") return
  const workers = process.env["KINTSUGI_TEST_WORKERS"] ?? DEFAULT_WORKERS
  if (workers === "1" || workers === "0") return
  const argv = commandLine()
  const at = argv.indexOf("test")
  if (at < 0 || argv.some((a) => a.startsWith("--parallel") || a === "--test-worker" || a.startsWith("--shard"))) return
  const args = [...argv.slice(at + 1)]
  if (!args.some((a) => a.startsWith("--timings")) && existsSync(TIMINGS)) args.unshift(`--timings=${TIMINGS}`)
  const proc = Bun.spawn([process.execPath, "test", `--parallel=${workers}`, ...args], { stdio: ["inherit", "inherit", "inherit"] })
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => proc.kill(signal))
  process.exit(await proc.exited)
}
