/**
 * When the git tool may reuse its last check of the repository's configuration instead of running
 * `git config --list` again: a key over the state of every file that configuration can come from.
 *
 * git runs with GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null and GIT_CEILING_DIRECTORIES at
 * the workspace root's parent, so the only configuration besides our own `-c` is the repository's:
 * `<root>/.git/config`, and `<root>/.git/config.worktree` when extensions.worktreeConfig says so.
 * A check is reused only when that is all there is (no include, no `.git` file or commondir pointing
 * elsewhere; see git.ts) and the key is unchanged: same root owner, same `.git` directory (an entry
 * added or removed changes its ctime), the same HEAD and config files (device, inode, size, mtime
 * and ctime in nanoseconds: every write, rename or replacement changes them; ctime cannot be set back).
 */
import { type BigIntStats, lstatSync } from "node:fs"
import { join } from "node:path"

/** Paths under the root, and whether only their identity and owner count (the root: its times move with every file written in it). */
const KEYED: ReadonlyArray<readonly [string, "identity" | "state"]> = [
  ["", "identity"],
  [".git", "state"],
  // Its content decides whether git takes `.git` for a repository at all (and so whether `diff` runs inside a work tree).
  [".git/HEAD", "state"],
  [".git/config", "state"],
  [".git/config.worktree", "state"],
  [".git/commondir", "state"]
]

const fingerprint = (st: BigIntStats, what: "identity" | "state"): string =>
  what === "identity"
    ? `${st.dev}:${st.ino}:${st.mode}:${st.uid}`
    : `${st.dev}:${st.ino}:${st.mode}:${st.uid}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`

/**
 * The key of the repository configuration git would read in `root`, looked at through `view` (what
 * the runner's processes see: in the sandbox, through the workspace's mount handles). Undefined when
 * no key can be trusted and the configuration must be checked on every call: `.git` is a file or a
 * symlink (a linked worktree or submodule: the config lives elsewhere), a config file is a symlink
 * or not a regular file, a commondir exists, or a file cannot be examined.
 */
export const repositoryConfigKey = (root: string, view: (path: string) => string | undefined): string | undefined => {
  const parts: Array<string> = []
  for (const [rel, what] of KEYED) {
    const at = view(rel === "" ? root : join(root, rel))
    if (at === undefined) {
      // Not shown in the sandbox: git cannot read it there, whatever the host has at that path.
      parts.push("unseen")
      continue
    }
    let st: BigIntStats | undefined
    try {
      st = lstatSync(at, { bigint: true, throwIfNoEntry: false })
    } catch {
      return undefined
    }
    if (st === undefined) {
      parts.push("absent")
      continue
    }
    const kindOk = rel === "" || rel === ".git" ? st.isDirectory() : st.isFile()
    if (!kindOk || rel === ".git/commondir") return undefined
    parts.push(fingerprint(st, what))
  }
  return parts.join("|")
}

/** Whether the configuration git listed pulls in other files (`include.path`, `includeIf.<cond>.path`). */
export const listsIncludes = (keys: ReadonlyArray<string>): boolean =>
  keys.some((k) => k.startsWith("include.") || k.startsWith("includeif."))
