import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Exit } from "effect"
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { checkGitArgs, makeGitTool } from "../../src/tools/git.ts"
import { createProcessRunner, type RunRequest } from "../../src/tools/ProcessRunner.ts"
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

describe("git tool: the configuration check is reused only while the config files are unchanged", () => {
  // A repository without includes whose attributes name drivers its config does not define yet: what
  // a job can do between two calls is define them (it can write .git/config when the repository is
  // in its outDir, or with the shell tool).
  const fresh = join(base, "fresh")
  const freshMarkers = join(base, "fresh-markers")
  let spawned = 0
  const counting = { ...runner, run: (req: RunRequest) => (spawned++, runner.run(req)) }
  const freshGit = makeGitTool(counting)
  /** Plain git that writes nothing into .git (no index refresh), so only the edits under test change it. */
  const inFresh = (args: ReadonlyArray<string>) =>
    Bun.spawnSync(["git", ...args], { cwd: fresh, env: { ...plainEnv, GIT_OPTIONAL_LOCKS: "0" } })
  const trap = (name: string, tail = 'exec cat "$@"') => {
    const path = join(base, "bin", `fresh-${name}`)
    writeFileSync(path, `#!/bin/sh\ntouch '${join(freshMarkers, name)}'\n${tail}\n`)
    chmodSync(path, 0o755)
    return path
  }
  const freshFired = () => readdirSync(freshMarkers).sort()
  const clearFresh = () => {
    for (const m of readdirSync(freshMarkers)) rmSync(join(freshMarkers, m))
  }
  /** One tool call: its text and how many processes it ran. */
  const call = async (args: ReadonlyArray<string>): Promise<{ out: string; processes: number }> => {
    const before = spawned
    const exit = await Effect.runPromiseExit(Effect.provide(freshGit.execute({ args }), createContext(fresh)))
    if (Exit.isFailure(exit)) throw new Error(`git ${args.join(" ")} failed: ${JSON.stringify(exit.cause)}`)
    return { out: (exit.value as ToolOutput).text, processes: spawned - before }
  }
  const configFile = join(fresh, ".git", "config")
  const fixedTime = new Date(1_700_000_000_000)
  let pristine = ""

  beforeAll(() => {
    mkdirSync(fresh)
    mkdirSync(freshMarkers)
    inFresh(["init", "-q"])
    writeFileSync(join(fresh, "a.txt"), "hello\n")
    writeFileSync(join(fresh, ".gitattributes"), "a.txt diff=late filter=late\n")
    inFresh(["add", "."])
    inFresh(["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init"])
    writeFileSync(join(fresh, "a.txt"), "hello\nchanged\n")
    // Index stat data up to date, so plain status below does not want to write the index.
    Bun.spawnSync(["git", "update-index", "--refresh"], { cwd: fresh, env: plainEnv })
    pristine = readFileSync(configFile, "utf8")
  })

  /** Puts `content` in place (same inode) with a whole-second mtime, then lets the tool check it and reuse the check. */
  const settle = async (content = pristine) => {
    writeFileSync(configFile, content)
    utimesSync(configFile, fixedTime, fixedTime)
    clearFresh()
    await call(["status"])
    expect((await call(["status"])).processes).toBe(1)
  }
  /** After an edit: the tool's diff and status fire nothing; plain git, run after them, fires `marker` (the trap is live). */
  const neutralised = async (marker: string) => {
    const diff = await call(["diff"])
    expect(diff.out).toStartWith("exit code: 0\n")
    expect(diff.out).toContain("+changed")
    expect((await call(["status"])).out).toContain("a.txt")
    expect(freshFired()).toEqual([])
    inFresh(["diff"])
    inFresh(["status"])
    expect(freshFired()).toContain(marker)
    return diff
  }

  test("an unchanged configuration is checked once: later calls run one git process, diff included", async () => {
    await settle()
    expect((await call(["log", "--oneline"])).processes).toBe(1)
    // diff asks once whether the root is in a work tree; the answer is reused with the check.
    expect((await call(["diff"])).processes).toBe(2)
    expect((await call(["diff"])).processes).toBe(1)
  })

  test("a textconv and a clean filter appended to .git/config in place between two calls are blanked", async () => {
    await settle()
    appendFileSync(configFile, `[diff "late"]\n\ttextconv = ${trap("textconv")}\n[filter "late"]\n\tclean = ${trap("appended-clean")}\n`)
    const diff = await neutralised("appended-clean")
    expect(freshFired()).toContain("textconv")
    // The edit was seen: the configuration was checked again (diff's work-tree check and the list, then diff).
    expect(diff.processes).toBe(3)
  })

  test("a same-size rewrite in place with the old mtime put back is still seen (its ctime moved)", async () => {
    const section = `[filter "late"]\n\tclean = ${trap("clean")}\n`
    // A comment as long as the section: swapping one for the other keeps the size.
    await settle(`${pristine}#${"x".repeat(section.length - 2)}\n`)
    const before = statSync(configFile, { bigint: true })
    writeFileSync(configFile, `${pristine}${section}`)
    utimesSync(configFile, fixedTime, fixedTime)
    const after = statSync(configFile, { bigint: true })
    expect([after.ino, after.size, after.mtimeNs]).toEqual([before.ino, before.size, before.mtimeNs])
    await neutralised("clean")
  })

  test("a config renamed over .git/config (a new inode) is seen", async () => {
    await settle()
    const next = join(fresh, ".git", "config.next")
    writeFileSync(next, `${pristine}[filter "late"]\n\tclean = ${trap("renamed-clean")}\n`)
    renameSync(next, configFile)
    await neutralised("renamed-clean")
  })

  test("with an include the check is never reused: a driver added to the included file later is blanked", async () => {
    const included = join(base, "fresh-included.cfg")
    writeFileSync(included, "[core]\n\tquotePath = true\n")
    await settle()
    appendFileSync(configFile, `[include]\n\tpath = ${included}\n`)
    await call(["status"])
    expect((await call(["status"])).processes).toBe(2)
    writeFileSync(included, `[filter "late"]\n\tclean = ${trap("included-clean")}\n`)
    await neutralised("included-clean")
  })
})
