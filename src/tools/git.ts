/**
 * The `git` kernel tool: one read-mostly git command per call, argv only, hardened so that neither
 * the model's arguments nor the repository's own config (`.git/config`) can run code or write.
 */
import { Effect, Schema } from "effect"
import { dirname } from "node:path"
import type { ProcessRunnerShape } from "./ProcessRunner.ts"
import { effectiveTimeoutMs, formatRunResult, TimeoutSec } from "./shell.ts"
import { Limits } from "../job/Limits.ts"
import { defineTool, type KernelTool, ToolError } from "./Tool.ts"
import { listsIncludes, repositoryConfigKey } from "./gitConfigKey.ts"
import { gitHardeningEnvironment, hardenedGitPrefix } from "./gitHardening.ts"
import { Workspace } from "../job/Workspace.ts"

/** Where one call runs and whom it tells about output. */
interface GitCall {
  readonly root: string
  readonly progress: () => void
}

const NO_EXT = ["--no-ext-diff", "--no-textconv"] as const

/**
 * Allowed subcommands → flags inserted right after the subcommand. Only inspection commands: nothing
 * that fetches, writes refs or the index, or edits. `branch` and `tag` always run in list mode (git
 * refuses `--list` together with -d/-m/-c/--set-upstream-to, so those cannot mutate).
 */
const GIT_SUBCOMMANDS: Readonly<Record<string, ReadonlyArray<string>>> = {
  status: [],
  log: NO_EXT,
  show: NO_EXT,
  diff: NO_EXT,
  "diff-tree": NO_EXT,
  blame: ["--no-textconv"],
  grep: ["--no-textconv"],
  "ls-files": [],
  "ls-tree": [],
  "cat-file": [],
  "rev-parse": [],
  "rev-list": [],
  describe: [],
  shortlog: [],
  branch: ["--list"],
  tag: ["--list"],
  "show-ref": [],
  "for-each-ref": [],
  "name-rev": [],
  "merge-base": [],
  "check-ignore": [],
  "check-attr": [],
  "count-objects": [],
  version: []
}

/**
 * Long options refused in any spelling git accepts: exact, `--name=value`, or an abbreviation (git
 * takes any unambiguous prefix, so every prefix of these names is refused, e.g. `--exec`, `--upload`).
 */
const GIT_DENIED_LONG = [
  "git-dir",
  "work-tree",
  "exec-path",
  "namespace",
  "super-prefix",
  "config-env", // global repo/exec selection
  "output",
  "upload-pack",
  "receive-pack",
  "ext-diff",
  "textconv",
  "filters", // write files or run commands
  "open-files-in-pager",
  "no-index",
  "contents", // run a pager / read files outside the repository
  "pathspec-from-file",
  "exclude-from",
  "ignore-revs-file",
  "file", // read a file, echo its lines in errors
  "ignore-submodules" // would let status/diff recurse into submodules whose config we did not vet
] as const
/** Short options refused as `-x` or `-xvalue` (-c/-C select config and directory when global). */
const DENIED_SHORT = ["c", "C"] as const
/**
 * Letters refused anywhere in a short-option cluster of one subcommand (`-nO<pager>` is -n -O):
 * grep -O runs a pager, grep -f / blame -S / ls-files -X read a file named by the model.
 */
const DENIED_IN_CLUSTER: Readonly<Record<string, string>> = { grep: "Of", blame: "S", "ls-files": "X" }

/** Config keys naming a command through a driver name we cannot know in advance: neutralized per call. */
const DRIVER_COMMAND_KEY = /^(?:filter\..*\.(?:clean|smudge|process)|diff\..*\.(?:command|textconv)|merge\..*\.driver)$/s

/** The environment git runs with, on top of the runner's allowlist: the shared hardening, scoped to the workspace. */
const gitEnvironment = (root: string): Record<string, string> => ({
  ...gitHardeningEnvironment(),
  // Never discover a repository above the workspace root.
  GIT_CEILING_DIRECTORIES: dirname(root)
})

/** Why `args` are refused, or undefined when they may run. */
export const checkGitArgs = (args: ReadonlyArray<string>): string | undefined => {
  const sub = args[0]
  if (sub === undefined) return 'Give a subcommand, e.g. ["status"].'
  if (!Object.hasOwn(GIT_SUBCOMMANDS, sub)) {
    return `git ${sub.startsWith("-") ? "global options are" : `"${sub}" is`} not allowed; allowed subcommands: ${Object.keys(GIT_SUBCOMMANDS).join(", ")}.`
  }
  for (const arg of args.slice(1)) {
    if (arg.includes("\0")) return "Arguments must not contain NUL characters."
    if (arg.startsWith("--") && arg.length > 2) {
      const name = arg.slice(2).split("=")[0] ?? ""
      const hit = GIT_DENIED_LONG.find((d) => d.startsWith(name))
      if (hit !== undefined) return `The option ${arg.split("=")[0]} (--${hit}) is not allowed in this tool.`
    } else if (arg.startsWith("-") && arg.length > 1) {
      const short = DENIED_SHORT.find((s) => arg.startsWith(`-${s}`))
      if (short !== undefined) return `The option -${short} is not allowed in this tool.`
      const letters = DENIED_IN_CLUSTER[sub]
      if (letters !== undefined && [...letters].some((l) => arg.includes(l))) {
        return `The options ${[...letters].map((l) => `-${l}`).join(", ")} of git ${sub} are not allowed in this tool.`
      }
    }
  }
  if (sub === "diff") {
    // Two paths of which one lies outside the repository switch git diff to --no-index, which reads any file.
    const outside = args.slice(1).find((a) => !a.startsWith("-") && (a.startsWith("/") || a.split("/").includes("..")))
    if (outside !== undefined) return `git diff compares paths inside the repository only (got ${outside}).`
  }
  return undefined
}

/** The argv that runs: hardening first, then the subcommand, its injected flags, the model's arguments. */
const gitArgv = (args: ReadonlyArray<string>): [string, ...Array<string>] => {
  const [sub = "", ...rest] = args
  const injected = sub === "branch" && rest.includes("--show-current") ? [] : (GIT_SUBCOMMANDS[sub] ?? [])
  return [...hardenedGitPrefix(), sub, ...injected, ...rest]
}

const GitParams = Schema.Struct({
  args: Schema.Array(Schema.String).pipe(
    Schema.minItems(1),
    Schema.annotations({
      description: `Arguments after \`git\`, one per element, starting with the subcommand (${Object.keys(GIT_SUBCOMMANDS).join(", ")}). No shell: no quoting, globbing or pipes.`
    })
  ),
  timeoutSec: Schema.optionalWith(TimeoutSec, { exact: true })
})

/** The last check of the repository configuration, reusable while its key (gitConfigKey.ts) holds. */
interface RepoCheck {
  readonly key: string
  /** GIT_CONFIG_* blanking every driver command the configuration defines. */
  readonly overrides: Record<string, string>
  /** Whether the root is inside a work tree (asked for `diff` only). */
  readonly insideWorkTree?: boolean
}

/**
 * `git`: argv only, an allowlist of read-mostly subcommands, repository config vetted on every call
 * (by reusing the last check while the files it came from are unchanged, gitConfigKey.ts).
 */
export const makeGitTool = (runner: ProcessRunnerShape): KernelTool => {
  // One tool per job (processTools), so a check never crosses jobs.
  let checked: RepoCheck | undefined

  const runGit = (args: ReadonlyArray<string>, call: GitCall, timeoutMs: number, env: Record<string, string>) =>
    // No new session: git runs no shell here, and the hardening keeps the repository from starting anything.
    runner.run({ argv: gitArgv(args), cwd: call.root, timeoutMs, env, onOutput: call.progress, newSession: false })

  /** Overrides for every driver command the repository's config (with its includes) defines, and whether it has includes. */
  const driverOverrides = (call: GitCall, timeoutMs: number, env: Record<string, string>) =>
    Effect.gen(function* () {
      const r = yield* runGit(["config", "--name-only", "--list", "-z"], call, timeoutMs, env)
      if (r.exitCode !== 0 || r.truncated) {
        return yield* new ToolError({ message: `git refused: the repository configuration could not be checked.\n${r.output}` })
      }
      const listed = r.output.split("\0")
      const keys = listed.filter((k) => DRIVER_COMMAND_KEY.test(k))
      const overrides: Record<string, string> = { GIT_CONFIG_COUNT: String(keys.length) }
      keys.forEach((k, i) => {
        overrides[`GIT_CONFIG_KEY_${i}`] = k
        overrides[`GIT_CONFIG_VALUE_${i}`] = ""
      })
      return { overrides, includes: listsIncludes(listed) }
    })

  return defineTool({
    name: "git",
    description:
      "Run one read-only git command (status, log, show, diff, blame, grep, ls-files, ...) in the workspace " +
      "root. Arguments are passed as a list without a shell. Options that select other repositories, write " +
      "files or run external programs are refused.",
    params: GitParams,
    commandOf: (a) => `git ${a.args.join(" ")}`,
    execute: (a) =>
      Effect.gen(function* () {
        const problem = checkGitArgs(a.args)
        if (problem !== undefined) return yield* new ToolError({ message: problem })
        const call: GitCall = { root: (yield* Workspace).paths.root, progress: (yield* Limits).progress }
        const timeoutMs = yield* effectiveTimeoutMs(a.timeoutSec)
        // Date.now(): real time on purpose, read synchronously by `left()`; the processes it bounds run on the host's clock.
        const deadline = Date.now() + timeoutMs
        const left = () => Math.max(1, deadline - Date.now())
        const base = gitEnvironment(call.root)
        // The files the configuration comes from, looked at before git reads them.
        const key = repositoryConfigKey(call.root, runner.view)
        const reuse = key !== undefined && checked?.key === key ? checked : undefined
        let inside = reuse?.insideWorkTree
        if (a.args[0] === "diff") {
          if (inside === undefined) {
            const r = yield* runGit(["rev-parse", "--is-inside-work-tree"], call, left(), base)
            inside = r.exitCode === 0 && r.output.trim() === "true"
          }
          if (!inside) {
            return yield* new ToolError({ message: "git diff needs a work tree: the workspace root is not inside a git repository." })
          }
        }
        let overrides = reuse?.overrides
        if (overrides === undefined) {
          const listed = yield* driverOverrides(call, left(), base)
          overrides = listed.overrides
          // Reusable only when git read nothing but the keyed files and none changed while it read them.
          const reusable = key !== undefined && !listed.includes && repositoryConfigKey(call.root, runner.view) === key
          checked = reusable ? { key, overrides, ...(inside === undefined ? {} : { insideWorkTree: inside }) } : undefined
        } else if (reuse !== undefined && reuse.insideWorkTree === undefined && inside !== undefined) {
          checked = { ...reuse, insideWorkTree: inside }
        }
        const result = yield* runGit(a.args, call, left(), { ...base, ...overrides })
        return { text: formatRunResult(result, timeoutMs) }
      })
  })
}
