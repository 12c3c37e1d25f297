/**
 * The job page reads a committed job's output files from the commit the worker made: what
 * was committed is served whatever the folder holds later; only a regular file of that job's commit,
 * inside outDir, within the size cap — never a symbolic link, a path outside outDir, another job's
 * commit, or a repository whose git dir the job could write.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { commitOutputs, committedSha, readCommittedOutput } from "../../src/worker/commitOutputs.ts"

setDefaultTimeout(30_000)

const base = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-committed-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let n = 0

const git = (cwd: string, ...args: Array<string>) => {
  const r = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, env: { PATH: "/usr/bin:/bin", HOME: cwd } })
  return new TextDecoder().decode(r.stdout).trim()
}

/** A job root holding a repository whose `ws/out` the job wrote `files` into, committed by the worker as job `jobId`. */
const committedJob = async (jobId: string, files: Record<string, string>, links: Record<string, string> = {}) => {
  const root = join(base, `root-${++n}`)
  const out = join(root, "ws", "out")
  mkdirSync(out, { recursive: true })
  git(root, "init", "-q")
  for (const [p, text] of Object.entries(files)) writeFileSync(join(out, p), text)
  for (const [p, target] of Object.entries(links)) symlinkSync(target, join(out, p))
  const result = await commitOutputs({
    outDir: out,
    jobRoots: [root],
    paths: [...Object.keys(files), ...Object.keys(links)],
    message: `kintsugi: a v1 (job ${jobId})`
  })
  const commit = committedSha(result)
  if (commit === undefined) throw new Error(`not committed: ${result}`)
  const read = (path: string, overrides: { jobId?: string; maxBytes?: number; jobRoots?: ReadonlyArray<string> } = {}) =>
    readCommittedOutput({
      outDir: out,
      jobRoots: overrides.jobRoots ?? [root],
      commit,
      jobId: overrides.jobId ?? jobId,
      path,
      maxBytes: overrides.maxBytes ?? 1024
    })
  return { root, out, commit, read }
}
const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b))

describe("outputs read from the commit", () => {
  test("the committed content, though the folder changed later (rewritten, deleted, replaced by a link to a host file)", async () => {
    const job = await committedJob("job-1", { "report.md": "# As committed\n", "data.json": "{}\n" })
    writeFileSync(join(job.out, "report.md"), "changed after the job\n")
    expect(text(await job.read("report.md"))).toBe("# As committed\n")
    rmSync(join(job.out, "report.md"))
    symlinkSync("/etc/passwd", join(job.out, "report.md"))
    expect(text(await job.read("report.md"))).toBe("# As committed\n")
    rmSync(join(job.out, "data.json"))
    expect(text(await job.read("data.json"))).toBe("{}\n")
  })

  test("never a symbolic link the job committed, a path outside outDir, a file not committed, or over the cap", async () => {
    const fresh = await committedJob("job-2", { "ok.md": "fine\n", "big.txt": "x".repeat(2000) }, { "passwd.md": "/etc/passwd" })
    // A file beside outDir, committed in the same repository: not an output of the job.
    writeFileSync(join(fresh.root, "ws", "outside.md"), "not an output\n")
    git(fresh.root, "add", "ws/outside.md")
    git(fresh.root, "commit", "-q", "-m", "later (job job-2)")
    expect(text(await fresh.read("ok.md"))).toBe("fine\n")
    expect(await fresh.read("passwd.md")).toBeUndefined()
    for (const path of ["../outside.md", "../../ws/out/ok.md/../../outside.md", "never-written.md", "."])
      expect(await fresh.read(path)).toBeUndefined()
    expect(await fresh.read("big.txt", { maxBytes: 1000 })).toBeUndefined()
    expect(text(await fresh.read("big.txt", { maxBytes: 2000 }))?.length).toBe(2000)
  })

  test("only that job's commit, in a repository inside the job roots whose git dir the job cannot write", async () => {
    const job = await committedJob("job-4", { "a.md": "A\n" })
    expect(await job.read("a.md", { jobId: "job-5" })).toBeUndefined()
    expect(await job.read("a.md", { jobRoots: [join(base, "elsewhere")] })).toBeUndefined()
    // A repository planted in outDir after the job (its .git is the job's to write) is never read.
    git(job.out, "init", "-q")
    expect(await job.read("a.md")).toBeUndefined()
  })

  test("committedSha reads only a job record's `committed <sha>`", () => {
    expect(committedSha("committed 0123456789ab")).toBe("0123456789ab")
    for (const other of [
      null,
      "no outputs",
      "not committed: the outputs are unchanged",
      "committed --output=x",
      "committed 0123456789ab extra"
    ])
      expect(committedSha(other)).toBeUndefined()
  })
})
