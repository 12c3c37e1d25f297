/**
 * The packed package (`bun pm pack`, as a consumer's `bun add` gets it) holds the runtime's sources,
 * migrations, built-ins, views and docs, and nothing else: no test, no repository metadata, no data
 * dir or key, no benches, no installed packages, no CI scripts.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ROOT } from "../architecture/importGraph.ts"

// Packing reads every file of the package: generous on a loaded machine.
setDefaultTimeout(120_000)

const out = mkdtempSync(join(tmpdir(), "kintsugi-pack-"))
afterAll(() => rmSync(out, { recursive: true, force: true }))

/** Packs the repository into `out` and lists the tarball's files (without the `package/` prefix). */
const pack = async (): Promise<ReadonlyArray<string>> => {
  const packed = Bun.spawnSync(["bun", "pm", "pack", "--destination", out, "--quiet"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
  if (packed.exitCode !== 0) throw new Error(`bun pm pack failed: ${packed.stderr.toString()}`)
  const tarball = readdirSync(out).find((f) => f.endsWith(".tgz"))
  if (tarball === undefined) throw new Error(`bun pm pack wrote no tarball into ${out}`)
  const listed = Bun.spawnSync(["tar", "-tzf", join(out, tarball)], { stdout: "pipe", stderr: "pipe" })
  if (listed.exitCode !== 0) throw new Error(`tar -tzf failed: ${listed.stderr.toString()}`)
  return listed.stdout
    .toString()
    .split("\n")
    .filter((line) => line !== "" && !line.endsWith("/"))
    .map((line) => line.replace(/^package\//, ""))
}

/** What must never be in the package, each with why a path matched. */
const FORBIDDEN: ReadonlyArray<readonly [RegExp, string]> = [
  [/\.test\.ts$/, "a test file"],
  [/^test\//, "the test tree"],
  [/(^|\/)\.git(\/|$)/, "repository metadata"],
  [/(^|\/)\.kintsugi(\/|$)/, "a data dir"],
  [/(^|\/)secret\.key$|\.(key|pem|p12|pfx)$/, "a key file"],
  [/(^|\/)\.env(\.|$)/, "an environment file"],
  [/^bench\//, "the benches"],
  [/(^|\/)node_modules\//, "installed packages"],
  [/^\.ci\//, "the CI scripts"],
  [/^\.prof\/|(^|\/)scratch\/|(^|\/)test-artifacts\//, "a working folder"]
]

/** What the package is for: one file of each part a consumer or an installation reads. */
const REQUIRED = [
  "package.json",
  "README.md",
  "CHANGELOG.md",
  "src/contract/index.ts",
  "src/kernel/index.ts",
  "src/testing/index.ts",
  "src/jobChild/entry.ts",
  "src/cli.ts",
  "migrations/001_schemas.sql",
  "builtin-agents/codebase-inventory/codebase-inventory.md",
  "views/layout.ts",
  "docs/kernel.md",
  "docs/testing.md"
]

test("the packed package holds the runtime's files and nothing a consumer must not get", async () => {
  const files = await pack()
  const bad = files.flatMap((file) => FORBIDDEN.filter(([pattern]) => pattern.test(file)).map(([, what]) => `${file} (${what})`))
  expect(bad).toEqual([])
  expect(REQUIRED.filter((file) => !files.includes(file))).toEqual([])
  // Only the top-level entries the files list names (and the manifest, README and CHANGELOG).
  const top = [...new Set(files.map((file) => file.split("/")[0]))].sort()
  expect(top).toEqual([
    "CHANGELOG.md",
    "README.md",
    "builtin-agents",
    "builtin-skills",
    "docs",
    "migrations",
    "package.json",
    "src",
    "views"
  ])
})
