/**
 * Every command's `--help` and `-h` exit 0 with usage and no side effect: the data dir stays empty (no
 * database, no migration, no key file) and nothing listens. `--version` and `--completions` too. Each
 * help fits a screen (the built-in options only in `kintsugi --help`); no escape codes unless stdout
 * is a terminal and NO_COLOR is unset; the short flags parse.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pkg from "../../package.json" with { type: "json" }

// Each case starts a Bun process; on a loaded machine that alone can pass bun test's 5 s default.
setDefaultTimeout(60_000)

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
  ["agents", "validate"],
  ["agents", "eval"]
]

const kintsugi = (args: ReadonlyArray<string>, extra: Record<string, string> = { NO_COLOR: "1" }) => {
  const env: Record<string, string | undefined> = {
    ...process.env,
    KINTSUGI_DATA_DIR: join(dataDir, "data"),
    KINTSUGI_ADMIN_PASSWORD: "",
    ...extra
  }
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
        // The screen of the command named, whatever words come after it.
        expect(r.out.split("\n")[0]).toStartWith(args.length === 0 ? "kintsugi " : `kintsugi ${args.join(" ")}: `)
        expect(readdirSync(dataDir)).toEqual([])
        await expect(fetch("http://127.0.0.1:39517/")).rejects.toThrow()
      })
    }
  }

  test("each command's help fits a screen: at most 40 lines, one row per option, the built-in options once (in kintsugi --help)", () => {
    const builtIns = ["--completions", "--log-level", "--wizard"]
    for (const args of COMMANDS) {
      const r = kintsugi([...args, "--help"])
      const lines = r.out.trimEnd().split("\n")
      expect({ command: args.join(" "), lines: lines.length <= 40 }).toEqual({ command: args.join(" "), lines: true })
      expect(r.out).not.toContain("A user-defined piece of text")
      expect(r.out).not.toContain("This setting is optional")
      for (const b of builtIns) expect(r.out.split(b).length - 1).toBe(args.length === 0 ? 1 : 0)
      if (args.length > 0) expect(r.out).toContain("Built-in options")
    }
    const run = kintsugi(["run", "--help"]).out
    expect(run).toContain("  -t, --task text ")
    expect(run).toContain("  -j, --json ")
    expect(kintsugi(["serve", "-h"]).out).toContain("  -H, --host text ")
  }, 60_000)

  test("no escape codes into a pipe, whatever NO_COLOR says: help, errors, version", () => {
    for (const extra of [{}, { NO_COLOR: "1" }] as Array<Record<string, string>>) {
      for (const args of [
        ["--help"],
        ["run", "--help"],
        ["frobnicate"],
        ["run", "a", "-t", "x", "-r", "/y", "-o", "/z", "--timeout", "abc"],
        ["--version"]
      ]) {
        const r = kintsugi(args, extra)
        expect(r.out + r.err).not.toContain("\u001b")
      }
    }
  }, 30_000)

  // `script` gives the command a terminal: colour there, unless NO_COLOR is set.
  test.skipIf(Bun.which("script") === null)(
    "on a terminal: bold headings and red errors, none with NO_COLOR set",
    () => {
      const onTerminal = (command: string, noColor: string) => {
        const p = Bun.spawnSync(["script", "-qec", `bun ${CLI} ${command}`, "/dev/null"], {
          env: { ...process.env, KINTSUGI_DATA_DIR: join(dataDir, "data"), NO_COLOR: noColor },
          stdin: "ignore"
        })
        return p.stdout.toString()
      }
      expect(onTerminal("run --help", "")).toContain("\u001b[1mUSAGE")
      expect(onTerminal("frobnicate", "")).toContain("\u001b[")
      expect(onTerminal("run --help", "1")).not.toContain("\u001b")
      expect(onTerminal("frobnicate", "1")).not.toContain("\u001b")
      expect(onTerminal("frobnicate", "1")).toContain("Invalid subcommand for kintsugi")
    },
    30_000
  )

  test("short flags: -t -r -o for run; -p and -H for serve (-H is not -h)", () => {
    const r = kintsugi(["run", "a", "-t", "t", "-r", "/x", "-r", "/y", "-o", "/o", "--timeout", "-1"])
    expect(r.err).toContain("--timeout must be a positive number of seconds")
    expect(r.code).toBe(2)
    const port = kintsugi(["serve", "-p", "not-a-port"])
    expect(port.code).toBe(2)
    expect(port.err).toContain("not-a-port")
    // A missing value for -H is a usage error, not a help request.
    const host = kintsugi(["serve", "-H"])
    expect(host.code).toBe(2)
    expect(host.out).not.toContain("USAGE")
    expect(readdirSync(dataDir)).toEqual([])
  }, 30_000)

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
    const unknown = kintsugi(["run", "a", "-t", "t", "-r", "/x", "-o", "/o", "--frob", "x"])
    expect(unknown.code).toBe(2)
    expect(unknown.err).toContain("'--frob'")
    expect(kintsugi(["users", "grant", "erin", "superuser"]).code).toBe(2)
    expect(kintsugi(["users", "token", "erin", "--expires-days", "never"]).code).toBe(2)
    expect(kintsugi(["agents", "validate"]).code).toBe(2)
    expect(kintsugi(["agents", "validate", "a.md", "b.md"]).code).toBe(2)
    expect(readdirSync(dataDir)).toEqual([])
  }, 60_000)

  test("docs/cli.md's forms parse: agent first, repeated --read, --flag=value for single options", () => {
    for (const args of [
      ["run", "a", "--task", "t", "--read", "/x", "--read", "/y", "--out", "/o", "--timeout", "-1"],
      ["run", "a", "--task=t", "--read", "/x", "--read", "/y", "--out=/o", "--timeout=-1"],
      ["run", "--task", "t", "--read", "/x", "--out", "/o", "--timeout", "-1", "a"]
    ]) {
      const r = kintsugi(args)
      // Parsed through to the check of --timeout's value (before any database is opened).
      expect(r.err).toContain("--timeout must be a positive number of seconds")
      expect(r.code).toBe(2)
    }
    expect(readdirSync(dataDir)).toEqual([])
  }, 30_000)
})

process.on("exit", () => rmSync(dataDir, { recursive: true, force: true }))
