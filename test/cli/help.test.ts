/**
 * Every command's `--help` and `-h` exit 0 with usage and no side effect: the data dir stays empty (no
 * database, no migration, no key file) and nothing listens. `--version` and `--completions` too.
 */
import { describe, expect, test } from "bun:test"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pkg from "../../package.json" with { type: "json" }

const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")
const dataDir = mkdtempSync(join(tmpdir(), "kintsugi-help-"))

const COMMANDS = [
  [],
  ["serve"],
  ["run"],
  ["run-job"],
  ["migrate"],
  ["users"],
  ["users", "list"],
  ["users", "add"],
  ["users", "grant"],
  ["users", "revoke"],
  ["users", "password"],
  ["users", "disable"],
  ["users", "enable"],
  ["users", "token"],
  ["users", "tokens"],
  ["users", "revoke-token"],
  ["agents"],
  ["agents", "validate"]
]

const kintsugi = (args: ReadonlyArray<string>) => {
  const env: Record<string, string | undefined> = { ...process.env, KINTSUGI_DATA_DIR: join(dataDir, "data"), KINTSUGI_ADMIN_PASSWORD: "", NO_COLOR: "1" }
  delete env["DATABASE_URL"]
  // A port nobody uses: `serve --help` that served would be found listening on it below.
  const p = Bun.spawnSync(["bun", CLI, ...args], { env: { ...env, PORT: "39517" }, stdin: "ignore" })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

describe("kintsugi --help", () => {
  for (const args of COMMANDS) {
    for (const flag of ["--help", "-h"]) {
      test(`kintsugi ${[...args, flag].join(" ")}: exit 0, usage, no side effect`, async () => {
        const r = kintsugi([...args, flag])
        expect(r.err).toBe("")
        expect(r.code).toBe(0)
        expect(r.out).toContain("USAGE")
        expect(r.out).toContain(args.length === 0 ? "kintsugi" : (args[args.length - 1] ?? ""))
        expect(readdirSync(dataDir)).toEqual([])
        await expect(fetch("http://127.0.0.1:39517/")).rejects.toThrow()
      })
    }
  }

  test("--version prints the package version", () => {
    const r = kintsugi(["--version"])
    expect(r.code).toBe(0)
    expect(r.out.trim()).toBe(pkg.version)
  })

  test("--completions bash prints a completion script", () => {
    const r = kintsugi(["--completions", "bash"])
    expect(r.code).toBe(0)
    expect(r.out).toContain("complete -F")
    expect(r.out).toContain("run-job")
  })

  test("usage errors exit 2 and say what is wrong, touching nothing", () => {
    const r = kintsugi(["run", "some-agent", "--task", "t"])
    expect(r.code).toBe(2)
    expect(r.err).toContain("--read")
    expect(kintsugi(["frobnicate"]).code).toBe(2)
    expect(readdirSync(dataDir)).toEqual([])
  })

  test("the README's forms parse: agent first, repeated --read, --flag=value", () => {
    for (const args of [
      ["run", "a", "--task", "t", "--read", "/x", "--read", "/y", "--out", "/o", "--timeout", "-1"],
      ["run", "a", "--task=t", "--read=/x", "--read=/y", "--out=/o", "--timeout=-1"],
      ["run", "--task", "t", "--read", "/x", "--out", "/o", "--timeout", "-1", "a"]
    ]) {
      const r = kintsugi(args)
      // Parsed through to the run's own check (before any database is opened).
      expect(r.err).toContain("--timeout must be a positive number of seconds")
      expect(r.code).toBe(2)
    }
    expect(readdirSync(dataDir)).toEqual([])
  })
})

process.on("exit", () => rmSync(dataDir, { recursive: true, force: true }))
