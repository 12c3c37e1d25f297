/**
 * After a completed job, commits the files it wrote when outDir is inside a git work tree whose top
 * level lies inside a job root (ADR-0019, ARCHITECTURE §10); otherwise leaves them in place. Returns what happened, for the job record. Git runs with hooks,
 * fsmonitor and signing off and no global or system config: the repository's own config cannot run code.
 */
import { realpath } from "node:fs/promises"
import { isAbsolute, join, relative } from "node:path"
import { SAFE_PATH } from "../tools/ProcessRunner.ts"
import { isInside } from "../tools/Workspace.ts"

const SAFE_CONFIG = [
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "commit.gpgsign=false",
  "user.name=Kintsugi Runtime",
  "user.email=kintsugi@localhost"
].flatMap((kv) => ["-c", kv])

const git = async (cwd: string, args: ReadonlyArray<string>): Promise<{ code: number; out: string }> => {
  const p = Bun.spawn(["git", ...SAFE_CONFIG, "--no-optional-locks", ...args], {
    cwd,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: SAFE_PATH, HOME: cwd, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_TERMINAL_PROMPT: "0", LANG: "C.UTF-8" }
  })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, out: (out + err).trim() }
}

export interface CommitRequest {
  readonly outDir: string
  /** The job's roots (canonical): a work tree whose top level is outside all of them is never committed to. */
  readonly jobRoots: ReadonlyArray<string>
  /** Paths relative to outDir, from the job's `output` events. */
  readonly paths: ReadonlyArray<string>
  readonly message: string
}

/** "committed <sha>", "no outputs", "not in a git work tree: left in place", or "not committed: <why>" (outside the job roots, too). */
export const commitOutputs = async (req: CommitRequest): Promise<string> => {
  const unique = [...new Set(req.paths)].filter((p) => p !== "" && !isAbsolute(p) && !p.split("/").includes(".."))
  if (unique.length === 0) return "no outputs"
  let outDir: string
  try {
    outDir = await realpath(req.outDir)
  } catch {
    return "not committed: the output directory is gone"
  }
  const top = await git(outDir, ["rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"])
  if (top.code !== 0) return "not in a git work tree: left in place"
  const [tree, gitDir, commonDir] = top.out.split("\n")
  const real = (p: string | undefined) => (p === undefined || p === "" ? Promise.resolve(undefined) : realpath(p).catch(() => undefined))
  const [repo, ...gitDirs] = await Promise.all([real(tree), real(gitDir), real(commonDir)])
  if (repo === undefined || gitDirs.includes(undefined)) return "not committed: the git work tree cannot be resolved (outputs left in place)"
  // A work tree (or a `.git` file pointing at a git dir) outside the job roots is someone else's
  // checkout, the server's own say: never commit there.
  const inRoots = (p: string | undefined) => p !== undefined && req.jobRoots.some((root) => isInside(p, root))
  if (!inRoots(repo) || !gitDirs.every(inRoots)) return "not committed: the git work tree is outside the job roots (outputs left in place)"
  const files = unique.map((p) => relative(repo, join(outDir, p)))
  const add = await git(repo, ["add", "--", ...files])
  if (add.code !== 0) return `not committed: git add failed (${add.out.split("\n")[0] ?? ""})`
  const commit = await git(repo, ["commit", "--no-verify", "-m", req.message, "--", ...files])
  if (commit.code !== 0) {
    return /nothing (added )?to commit|no changes added/i.test(commit.out) ? "not committed: the outputs are unchanged" : `not committed: git commit failed (${commit.out.split("\n")[0] ?? ""})`
  }
  const sha = await git(repo, ["rev-parse", "HEAD"])
  return `committed ${sha.out.slice(0, 12)}`
}
