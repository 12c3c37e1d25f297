/**
 * commitOutputs runs git on the host, outside the sandbox, in a directory the job could write: a git
 * dir the job planted there (with only the write tool: outDir as a bare repository; sandboxed shell: a
 * `.git` in outDir) must never be used, or its config's clean filter runs a command of the job's choice.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { commitOutputs, gitLayout } from "../../src/worker/commitOutputs.ts"

setDefaultTimeout(30_000)

const base = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-planted-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let n = 0
const fresh = () => {
  const root = join(base, `root-${++n}`)
  mkdirSync(join(root, "ws", "out"), { recursive: true })
  return { root, out: join(root, "ws", "out"), pwned: join(root, "PWNED") }
}

const git = (cwd: string, ...args: Array<string>) => {
  const r = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, env: { PATH: "/usr/bin:/bin", HOME: cwd } })
  return new TextDecoder().decode(r.stdout).trim()
}

/** A git config whose clean filter touches `pwned`, applied to every file. */
const evilConfig = (worktree: string, pwned: string) =>
  `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ${worktree}\n[filter "x"]\n\tclean = "sh -c 'touch ${pwned}; cat'"\n`

/** What the write tool alone can make of outDir: a bare repository (HEAD, objects/, refs/, config, info/attributes). */
const plantBare = (out: string, pwned: string) => {
  mkdirSync(join(out, "objects", "info"), { recursive: true })
  mkdirSync(join(out, "refs", "heads"), { recursive: true })
  mkdirSync(join(out, "info"), { recursive: true })
  writeFileSync(join(out, "HEAD"), "ref: refs/heads/master\n")
  writeFileSync(join(out, "config"), evilConfig(out, pwned))
  writeFileSync(join(out, "info", "attributes"), "* filter=x\n")
  writeFileSync(join(out, "result.txt"), "answer\n")
}

describe("commitOutputs never uses a git dir the job could write", () => {
  test("outDir made into a bare repository with plain files → not committed, nothing run", async () => {
    const { root, out, pwned } = fresh()
    plantBare(out, pwned)
    const paths = ["HEAD", "config", "info/attributes", "result.txt"]
    expect(await commitOutputs({ outDir: out, jobRoots: [root], paths, message: "job" })).toBe("not in a git work tree: left in place")
    expect(existsSync(pwned)).toBe(false)
  })

  test("a .git directory in outDir (sandboxed shell can make one) → not committed, nothing run", async () => {
    const { root, out, pwned } = fresh()
    git(out, "init", "-q")
    writeFileSync(join(out, ".git", "config"), evilConfig(out, pwned))
    writeFileSync(join(out, ".gitattributes"), "* filter=x\n")
    writeFileSync(join(out, "result.txt"), "answer\n")
    const result = await commitOutputs({ outDir: out, jobRoots: [root], paths: ["result.txt"], message: "job" })
    expect(result).toBe("not committed: the git directory is inside the output directory, which the job can write (outputs left in place)")
    expect(existsSync(pwned)).toBe(false)
  })

  test("a repository that appeared, or changed, during the job is not committed to", async () => {
    const { root, out, pwned } = fresh()
    // Before the job: the workspace is a repository (outDir inside it) — the normal case.
    const ws = join(root, "ws")
    writeFileSync(join(ws, "README"), "ws\n")
    git(ws, "init", "-q")
    git(ws, "add", "README")
    git(ws, "commit", "-qm", "init")
    const before = await gitLayout(out, [root])
    expect(typeof before).toBe("object")
    // During the job: a `.git` file in outDir redirects to another repository in the job roots.
    const other = join(root, "other")
    mkdirSync(other)
    git(other, "init", "-q")
    writeFileSync(join(out, ".git"), `gitdir: ${join(other, ".git")}\n`)
    writeFileSync(join(out, "result.txt"), "answer\n")
    expect(await commitOutputs({ outDir: out, jobRoots: [root], paths: ["result.txt"], message: "job", before })).toBe(
      "not committed: the git work tree changed during the job (outputs left in place)"
    )
    expect(git(other, "log", "--oneline")).toBe("")
    // Not a repository before the job, one after: not committed either.
    const fresh2 = fresh()
    const notRepo = await gitLayout(fresh2.out, [fresh2.root, root])
    expect(notRepo).toBe("not in a git work tree: left in place")
    writeFileSync(join(fresh2.out, ".git"), `gitdir: ${join(other, ".git")}\n`)
    writeFileSync(join(fresh2.out, "result.txt"), "answer\n")
    expect(
      await commitOutputs({ outDir: fresh2.out, jobRoots: [fresh2.root, root], paths: ["result.txt"], message: "job", before: notRepo })
    ).toBe("not committed: the output directory became part of a git work tree during the job (outputs left in place)")
    expect(existsSync(pwned)).toBe(false)
  })

  test("the normal case still commits, through the layout taken before the job", async () => {
    const { root, out } = fresh()
    const ws = join(root, "ws")
    writeFileSync(join(ws, "README"), "ws\n")
    git(ws, "init", "-q")
    git(ws, "add", "README")
    git(ws, "commit", "-qm", "init")
    const before = await gitLayout(out, [root])
    writeFileSync(join(out, "report.md"), "# Report\n")
    expect(await commitOutputs({ outDir: out, jobRoots: [root], paths: ["report.md"], message: "job", before })).toMatch(
      /^committed [0-9a-f]{12}$/
    )
    expect(git(ws, "log", "--format=%s")).toBe("job\ninit")
  })
})
