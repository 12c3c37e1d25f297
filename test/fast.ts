/**
 * `bun run test:fast`: the suite's files that start no browser, no job child, no other process and
 * not the whole app (HTTP routes and worker loops), on the embedded database (DATABASE_URL is
 * dropped). A file is left out when it, or a test/support module it imports, mentions one of
 * EXCLUDED. Extra arguments go to `bun test` (e.g. a path filter).
 * `bun test/fast.ts --list` prints the selection instead.
 */
import { Glob } from "bun"
import { existsSync, readFileSync } from "node:fs"
import path from "node:path"

const TEST_ROOT = import.meta.dir
const REPO = path.join(TEST_ROOT, "..")

/**
 * What marks a file as slow: a browser; a job child or the serve process; a process of its own; the
 * whole app; a worker thread; QuickJS (codemode) or argon2id password hashes (Access) at every step.
 */
const EXCLUDED: ReadonlyArray<RegExp> = [
  /launchChromium|playwright/,
  /runJobChild|startJobChild|runAgent\(|jobChildEntryForTests|makeJobChildren|runJobProcess|spawnJobChild|run-job/,
  /startServe|runCli|serveProcess|edgeServer/,
  /Bun\.spawn|spawnSync|execFileSync|child_process/,
  /useApi|makeTestApp|useApp|testApp|startPortal|makeTestRuntime|servicesHarness|imageJob/,
  /startWorkerAhead|new Worker\(/,
  /codemode|AccessLive/
]

const read = (file: string): string => readFileSync(file, "utf8")

/** The test/support modules `file` imports (one level: support modules are checked by their own text). */
const supportImports = (file: string): Array<string> =>
  [...read(file).matchAll(/from "(\.{1,2}\/[^"]+)"/g)]
    .map((m) => path.resolve(path.dirname(file), m[1] ?? ""))
    .filter((p) => p.startsWith(path.join(TEST_ROOT, "support")) && existsSync(p))

const slow = (file: string): boolean =>
  [file, ...supportImports(file)].some((f) => {
    const text = read(f)
    return EXCLUDED.some((pattern) => pattern.test(text))
  })

const files: Array<string> = []
for await (const file of new Glob("**/*.test.ts").scan({ cwd: TEST_ROOT })) {
  const full = path.join(TEST_ROOT, file)
  if (!slow(full)) files.push(path.relative(REPO, full))
}
files.sort()

if (process.argv.includes("--list")) {
  console.log(files.join("\n"))
} else {
  const env = { ...process.env }
  delete env["DATABASE_URL"]
  const proc = Bun.spawn(["bun", "test", ...process.argv.slice(2), ...files.map((f) => `./${f}`)], {
    cwd: REPO,
    env,
    stdio: ["inherit", "inherit", "inherit"]
  })
  process.exit(await proc.exited)
}
