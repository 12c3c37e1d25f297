import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Exit } from "effect"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { checkGitArgs, makeGitTool } from "../../src/tools/git.ts"
import { createProcessRunner } from "../../src/tools/ProcessRunner.ts"
import type { ToolOutput } from "../../src/tools/Tool.ts"
import { createToolContext, type ToolContext } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const base = realpathSync(mkdtempSync(join(tmpdir(), "git-tool-")))
const repo = join(base, "repo")
const markers = join(base, "markers")
const runner = createProcessRunner()
const git = makeGitTool(runner)
const plainEnv = { PATH: "/usr/bin:/bin", HOME: base, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" }

/** Plain git, for building fixtures and for the control runs that show each trap is live. */
const plainGit = (args: ReadonlyArray<string>, stdin?: string) => {
  const r = Bun.spawnSync(["git", ...args], { cwd: repo, env: plainEnv, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin) })
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() }
}
const fired = () => readdirSync(markers).sort()
const clearMarkers = () => {
  for (const m of readdirSync(markers)) rmSync(join(markers, m))
}

/**
 * A repository whose own config runs a script for every hook git offers read commands: fsmonitor,
 * external diff, diff driver command and textconv, clean/smudge filters (one defined through an
 * included file), gpg for a signed commit, pagers, hooks and an alias shadowing a builtin.
 */
const createHostileRepo = () => {
  mkdirSync(markers)
  mkdirSync(join(base, "bin"))
  const trap = (name: string, tail = 'exec cat "$@"') => {
    const path = join(base, "bin", name)
    writeFileSync(path, `#!/bin/sh\ntouch '${join(markers, name)}'\n${tail}\n`)
    chmodSync(path, 0o755)
    return path
  }
  mkdirSync(repo)
  plainGit(["init", "-q"])
  writeFileSync(join(repo, "a.txt"), "hello\n")
  writeFileSync(join(repo, "b.txt"), "bee\n")
  writeFileSync(join(repo, ".gitattributes"), "a.txt diff=evil filter=evil\nb.txt filter=evil2\n")
  plainGit(["add", "."])
  plainGit(["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init"])
  const tree = plainGit(["rev-parse", "HEAD^{tree}"]).out.trim()
  const parent = plainGit(["rev-parse", "HEAD"]).out.trim()
  const signed =
    `tree ${tree}\nparent ${parent}\nauthor a <a@b> 1700000000 +0000\ncommitter a <a@b> 1700000000 +0000\n` +
    "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n"
  const sha = plainGit(["hash-object", "-t", "commit", "-w", "--stdin"], signed).out.trim()
  plainGit(["update-ref", "refs/heads/master", sha])
  plainGit(["tag", "v1"])
  writeFileSync(join(repo, "a.txt"), "hello\nchanged\n")
  writeFileSync(join(repo, "b.txt"), "bee\nchanged\n")
  writeFileSync(join(base, "included.cfg"), `[filter "evil2"]\n\tclean = ${trap("clean2")}\n`)
  const hooks = join(base, "hooks")
  mkdirSync(hooks)
  for (const h of ["reference-transaction", "post-index-change", "pre-auto-gc"]) trap(`hook-${h}`, "exit 0")
  const config: Array<[string, string]> = [
    ["core.fsmonitor", trap("fsmonitor", "exit 1")],
    ["core.pager", trap("pager")],
    ["core.hooksPath", hooks],
    ["pager.log", trap("pager-log")],
    ["diff.external", trap("external", "exit 0")],
    ["diff.evil.command", trap("diff-command", "exit 0")],
    ["diff.evil.textconv", trap("textconv")],
    ["filter.evil.clean", trap("clean")],
    ["filter.evil.smudge", trap("smudge")],
    ["include.path", join(base, "included.cfg")],
    ["log.showSignature", "true"],
    ["gpg.program", trap("gpg", "exit 1")],
    ["alias.status", `!${trap("alias")}`]
  ]
  for (const [k, v] of config) plainGit(["config", k, v])
}

beforeAll(createHostileRepo)
afterAll(async () => {
  await Effect.runPromise(runner.killAll)
  rmSync(base, { recursive: true, force: true })
})

const createContext = (root = repo): ToolContext => createToolContext({ root, readOnly: [root], outDir: join(base, "out") }).ctx
const exec = (args: ReadonlyArray<string>, root = repo) => Effect.runPromiseExit(Effect.provide(git.execute({ args }), createContext(root)))
const text = async (args: ReadonlyArray<string>, root = repo): Promise<string> => {
  const exit = await exec(args, root)
  if (Exit.isFailure(exit)) throw new Error(`git ${args.join(" ")} failed: ${JSON.stringify(exit.cause)}`)
  return (exit.value as ToolOutput).text
}
const refusal = async (args: ReadonlyArray<string>): Promise<string> => {
  const exit = await exec(args)
  if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") throw new Error(`git ${args.join(" ")} was not refused`)
  return exit.cause.error.message
}

describe("git tool: the repository's config never runs code", () => {
  test("control: plain git runs the traps", () => {
    clearMarkers()
    plainGit(["status"])
    plainGit(["diff"])
    plainGit(["log", "-p", "-2"])
    expect(fired()).toEqual(expect.arrayContaining(["fsmonitor", "clean", "clean2", "external", "textconv", "gpg"]))
  })

  test.each([
    [["status"], "a.txt"],
    [["status", "--short"], " M a.txt"],
    [["diff"], "+changed"],
    [["diff", "--stat"], "a.txt"],
    [["log", "-p", "-2"], "signed"],
    [["log", "--show-signature", "-1"], "signed"],
    [["show", "HEAD~1"], "+hello"],
    [["diff-tree", "-p", "HEAD~1", "HEAD"], ""],
    [["blame", "a.txt"], "hello"],
    [["grep", "-n", "hello"], "a.txt:1:hello"],
    [["ls-files"], "b.txt"],
    [["cat-file", "-p", "HEAD:a.txt"], "hello"],
    [["branch", "-v"], "master"],
    [["tag"], "v1"],
    [["describe", "--tags", "--dirty"], "v1"],
    [["shortlog", "-s", "HEAD"], "2"],
    [["rev-parse", "HEAD"], ""],
    [["check-attr", "filter", "a.txt"], "evil"]
  ])("git %p: works, no trap fires", async (args, expected) => {
    clearMarkers()
    const out = await text(args)
    expect(out).toStartWith("exit code: 0\n")
    expect(out).toContain(expected)
    expect(fired()).toEqual([])
  })
})

describe("git tool: argument policy", () => {
  test.each([
    [["-c", "core.pager=x", "log"]],
    [["-C", "/", "status"]],
    [["--git-dir=/x", "status"]],
    [["commit", "-m", "x"]],
    [["config", "core.fsmonitor", "x"]],
    [["push"]],
    [["fetch"]],
    [["log", "-c"]],
    [["grep", "-C3", "x"]],
    [["log", "--git-dir=/tmp"]],
    [["log", "--work-tree", "/"]],
    [["log", "--exec-path=/tmp"]],
    [["log", "--exec"]],
    [["diff", "--output=/tmp/x"]],
    [["diff", "--out=/tmp/x"]],
    [["log", "--upload-pack=x"]],
    [["log", "--upload"]],
    [["diff", "--ext-diff"]],
    [["diff", "--ext"]],
    [["log", "-p", "--textconv"]],
    [["cat-file", "--filters", "HEAD:a.txt"]],
    [["diff", "--no-index", "/etc/hostname", "/dev/null"]],
    [["diff", "/etc/hostname", "/dev/null"]],
    [["diff", "../x", "a.txt"]],
    [["grep", "-O", "hello"]],
    [["grep", "-nOvi", "hello"]],
    [["grep", "--open-files-in-pager=vi", "hello"]],
    [["blame", "--contents", "/etc/hostname", "a.txt"]],
    [["status", "--ignore-submodules=none"]],
    [["grep", "-f", "/etc/passwd"]],
    [["grep", "--file=/etc/passwd"]],
    [["ls-files", "--pathspec-from-file=/etc/passwd"]],
    [["ls-files", "-i", "-o", "-X", "/etc/passwd"]],
    [["ls-files", "--exclude-from=/etc/passwd"]],
    [["blame", "--ignore-revs-file", "/etc/passwd", "a.txt"]]
  ])("refuses git %p", async (args) => {
    expect(checkGitArgs(args)).toBeString()
    expect(await refusal(args)).toBe(checkGitArgs(args) as string)
  })

  test("branch and tag only list, whatever the arguments say", async () => {
    await text(["branch", "newbranch"])
    await text(["branch", "-d", "master"])
    await text(["tag", "v9"])
    await text(["tag", "-d", "v1"])
    expect(existsSync(join(repo, ".git", "refs", "heads", "newbranch"))).toBe(false)
    expect(plainGit(["branch", "--list"]).out).toContain("master")
    expect(plainGit(["tag", "--list"]).out.trim()).toBe("v1")
    expect(await text(["branch", "--show-current"])).toBe("exit code: 0\nmaster\n")
  })

  test("an empty argument list is invalid", async () => {
    const exit = await exec([])
    expect(Exit.isFailure(exit)).toBe(true)
  })

  test("never discovers a repository above the workspace root", async () => {
    const nested = join(repo, "nested")
    mkdirSync(nested, { recursive: true })
    const out = await text(["status"], nested).catch((e: Error) => e.message)
    expect(out).toContain("not a git repository")
    expect(await exec(["diff"], nested).then((e) => Exit.isFailure(e))).toBe(true)
  })

  test("commandOf is git plus the arguments joined with spaces", () => {
    expect(git.commandOf?.({ args: ["log", "--oneline", "-n", "5"] })).toBe("git log --oneline -n 5")
  })
})
