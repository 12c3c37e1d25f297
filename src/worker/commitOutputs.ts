/**
 * After a completed job, commits the files it wrote when outDir is inside a git work tree whose top
 * level lies inside a job root (ADR-0019, ARCHITECTURE §10); otherwise leaves them in place. Returns what happened, for the job record. Git runs
 * with the shared hardening (tools/gitHardening.ts: hooks, fsmonitor, signing off, no global or system config).
 * The job can write outDir (and, sandboxed, anything in it, `.git` included): a git dir there, or one
 * that appeared during the job, is never used — its config (a clean filter) would run on the host.
 */
import { realpath } from "node:fs/promises"
import { isAbsolute, join, relative } from "node:path"
import { gitHardeningEnvironment, hardenedGitPrefix } from "../tools/gitHardening.ts"
import { SAFE_PATH } from "../tools/ProcessRunner.ts"
import { isInside } from "../job/confinement.ts"

/** What commitOutputs adds to the shared hardening: an author (no global config supplies one). */
const AUTHOR_CONFIG = ["user.name=Kintsugi Runtime", "user.email=kintsugi@localhost"]

const spawnGit = (cwd: string, args: ReadonlyArray<string>, layout?: GitLayout) =>
  Bun.spawn([...hardenedGitPrefix(AUTHOR_CONFIG), ...args], {
    cwd,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: {
      PATH: SAFE_PATH,
      HOME: cwd,
      ...gitHardeningEnvironment(),
      LANG: "C.UTF-8",
      // Once checked, the repository is named explicitly: nothing planted in outDir takes part in discovery.
      ...(layout === undefined ? {} : { GIT_DIR: layout.gitDir, GIT_WORK_TREE: layout.top })
    }
  })

const git = async (cwd: string, args: ReadonlyArray<string>, layout?: GitLayout): Promise<{ code: number; out: string }> => {
  const p = spawnGit(cwd, args, layout)
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, out: (out + err).trim() }
}

/** stdout as bytes (a blob may be binary), or undefined when git fails. */
const gitBytes = async (cwd: string, args: ReadonlyArray<string>, layout: GitLayout): Promise<Uint8Array | undefined> => {
  const p = spawnGit(cwd, args, layout)
  const [out, , code] = await Promise.all([new Response(p.stdout).bytes(), new Response(p.stderr).text(), p.exited])
  return code === 0 ? out : undefined
}

/** Where outputs of outDir would be committed: canonical outDir, work tree top, git dir and common git dir. */
export interface GitLayout {
  readonly outDir: string
  readonly top: string
  readonly gitDir: string
  readonly commonDir: string
}

/**
 * The git layout of outDir, or why its outputs will not be committed ("not in a git work tree: …" or
 * "not committed: …"). Taken before the job runs, it is what the job found, not what it planted.
 */
export const gitLayout = async (outDirGiven: string, jobRoots: ReadonlyArray<string>): Promise<GitLayout | string> => {
  let outDir: string
  try {
    outDir = await realpath(outDirGiven)
  } catch {
    return "not committed: the output directory is gone"
  }
  const top = await git(outDir, ["rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"])
  if (top.code !== 0) return "not in a git work tree: left in place"
  const [tree, gitDir, commonDir] = top.out.split("\n")
  const real = (p: string | undefined) => (p === undefined || p === "" ? Promise.resolve(undefined) : realpath(p).catch(() => undefined))
  const [repo, dir, common] = await Promise.all([real(tree), real(gitDir), real(commonDir)])
  if (repo === undefined || dir === undefined || common === undefined)
    return "not committed: the git work tree cannot be resolved (outputs left in place)"
  // A work tree (or a `.git` file pointing at a git dir) outside the job roots is someone else's
  // checkout, the server's own say: never commit there.
  const inRoots = (p: string) => jobRoots.some((root) => isInside(p, root))
  if (!inRoots(repo) || !inRoots(dir) || !inRoots(common))
    return "not committed: the git work tree is outside the job roots (outputs left in place)"
  // The job writes outDir: a git dir there has a config the job chose.
  if (isInside(dir, outDir) || isInside(common, outDir))
    return "not committed: the git directory is inside the output directory, which the job can write (outputs left in place)"
  return { outDir, top: repo, gitDir: dir, commonDir: common }
}

export interface CommitRequest {
  readonly outDir: string
  /** The job's roots (canonical): a work tree whose top level is outside all of them is never committed to. */
  readonly jobRoots: ReadonlyArray<string>
  /** Paths relative to outDir, from the job's `output` events. */
  readonly paths: ReadonlyArray<string>
  readonly message: string
  /** `gitLayout` taken before the job ran: a layout that differs now (the job planted a repository) is not committed to. */
  readonly before?: GitLayout | string
}

const sameLayout = (a: GitLayout, b: GitLayout) =>
  a.outDir === b.outDir && a.top === b.top && a.gitDir === b.gitDir && a.commonDir === b.commonDir

/** "committed <sha>", "no outputs", "not in a git work tree: left in place", or "not committed: <why>" (outside the job roots, too). */
export const commitOutputs = async (req: CommitRequest): Promise<string> => {
  const unique = [...new Set(req.paths)].filter((p) => p !== "" && !isAbsolute(p) && !p.split("/").includes(".."))
  if (unique.length === 0) return "no outputs"
  const layout = await gitLayout(req.outDir, req.jobRoots)
  if (req.before !== undefined) {
    if (typeof req.before === "string") {
      return typeof layout === "string"
        ? req.before
        : "not committed: the output directory became part of a git work tree during the job (outputs left in place)"
    }
    if (typeof layout !== "string" && !sameLayout(layout, req.before))
      return "not committed: the git work tree changed during the job (outputs left in place)"
  }
  if (typeof layout === "string") return layout
  const files = unique.map((p) => relative(layout.top, join(layout.outDir, p)))
  const add = await git(layout.top, ["add", "--", ...files], layout)
  if (add.code !== 0) return `not committed: git add failed (${add.out.split("\n")[0] ?? ""})`
  const commit = await git(layout.top, ["commit", "--no-verify", "-m", req.message, "--", ...files], layout)
  if (commit.code !== 0) {
    return /nothing (added )?to commit|no changes added/i.test(commit.out)
      ? "not committed: the outputs are unchanged"
      : `not committed: git commit failed (${commit.out.split("\n")[0] ?? ""})`
  }
  const sha = await git(layout.top, ["rev-parse", "HEAD"], layout)
  return `committed ${sha.out.slice(0, 12)}`
}

/** The commit a job's record names (`outputs` = "committed <sha>"), or undefined when its outputs were not committed. */
export const committedSha = (outputs: string | null): string | undefined => /^committed ([0-9a-f]{7,40})$/.exec(outputs ?? "")?.[1]

export interface CommittedOutputRequest {
  readonly outDir: string
  readonly jobRoots: ReadonlyArray<string>
  /** From the job's record (`committedSha`). */
  readonly commit: string
  /** The job's id: the commit must be the one the worker made for it (its message names the job). */
  readonly jobId: string
  /** Relative to outDir, as the job's `output` events name it (checked by the caller). */
  readonly path: string
  readonly maxBytes: number
}

/**
 * One output file as the worker committed it for the job, whatever outDir holds now: found through the
 * same checked layout as the commit (a git dir inside outDir or outside the job roots is never used), the
 * commit must be the job's, the entry a regular file (mode 100644/100755, never a link or a submodule)
 * of at most `maxBytes`. Undefined otherwise. Git runs hardened; `cat-file` applies no filter.
 */
export const readCommittedOutput = async (req: CommittedOutputRequest): Promise<Uint8Array | undefined> => {
  const layout = await gitLayout(req.outDir, req.jobRoots)
  if (typeof layout === "string") return undefined
  const commit = await git(layout.top, ["rev-parse", "--verify", "--end-of-options", `${req.commit}^{commit}`], layout)
  if (commit.code !== 0 || !/^[0-9a-f]{40,64}$/.test(commit.out)) return undefined
  const message = await git(layout.top, ["log", "-1", "--format=%B", commit.out, "--"], layout)
  if (message.code !== 0 || !message.out.includes(`(job ${req.jobId})`)) return undefined
  const inRepo = relative(layout.top, join(layout.outDir, req.path))
  if (inRepo === "" || isAbsolute(inRepo) || inRepo.split("/").includes("..")) return undefined
  // `<mode> <type> <object>\t<path>`, NUL-terminated; -- so the path is never an option.
  const entry = await git(layout.top, ["ls-tree", "-z", "--full-tree", commit.out, "--", inRepo], layout)
  const m = /^(100644|100755) blob ([0-9a-f]{40,64})\t(.*)$/s.exec(entry.out.replace(/\0$/, ""))
  if (entry.code !== 0 || m === null || m[3] !== inRepo) return undefined
  const size = await git(layout.top, ["cat-file", "-s", m[2]!], layout)
  if (size.code !== 0 || Number(size.out) > req.maxBytes) return undefined
  return gitBytes(layout.top, ["cat-file", "blob", m[2]!], layout)
}
