/**
 * The `find` tool: files of the read-only workspace whose path matches a glob, found by our own
 * walk (no symlink followed, `.git` skipped), printed relative to the workspace root, capped.
 */
import fs from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool, ToolError } from "./Tool.ts"
import { truncateOutput } from "./truncate.ts"
import { compileGlob, drive, walkNote, walkTree, type WalkLimits, type WalkStatus } from "./walkTree.ts"
import { Limits } from "../job/Limits.ts"
import { displayOf } from "../job/confinement.ts"
import { Workspace } from "../job/Workspace.ts"

/** Most paths `find` prints. */
export const MAX_FIND_RESULTS = 1000
const FIND_WALK_LIMITS: WalkLimits = { maxEntries: 200_000, maxDepth: 64 }
const FIND_MAX_MS = 20_000

const Params = Schema.Struct({
  pattern: Schema.String.annotations({
    description: 'Glob: "*.ts" matches file names at any depth, "**/*.ts" or "src/**/*.test.ts" paths below the searched directory'
  }),
  path: Schema.optionalWith(
    Schema.String.annotations({ description: "Directory to search, relative to the workspace root (default: the main source directory)" }),
    { exact: true }
  )
})

export const find = defineTool({
  name: "find",
  description:
    "Find files in the read-only workspace by glob pattern. Prints matching files (and symbolic links, which are " +
    `never followed) one per line, sorted, relative to the workspace root; .git is skipped; at most ${MAX_FIND_RESULTS} results.`,
  params: Params,
  readOnly: true,
  execute: (args) =>
    Effect.gen(function* () {
      const workspace = yield* Workspace
      const limits = yield* Limits
      const accept = yield* compileGlob(args.pattern)
      const target = yield* workspace.resolveRead(args.path ?? workspace.paths.readOnly[0] ?? ".")
      const status: WalkStatus = { entries: 0, stopped: undefined }
      const budgetMs = Math.max(1000, Math.min(FIND_MAX_MS, (yield* limits.remainingMs) - 1000))
      const results: Array<string> = []
      let more = false
      const isDir = yield* Effect.orElseSucceed(
        Effect.try(() => fs.statSync(target.path).isDirectory()),
        () => false
      )
      if (!isDir) return yield* Effect.fail(new ToolError({ message: `not a directory: ${target.display}` }))
      const entries = walkTree(target.path, target.root, FIND_WALK_LIMITS, status)
      yield* Effect.promise((signal) =>
        drive(entries, { signal, deadline: performance.now() + budgetMs, progress: limits.progress, status }, (e) => {
          if (!accept(e.rel)) return true
          if (results.length >= MAX_FIND_RESULTS) {
            more = true
            return false
          }
          results.push(displayOf(workspace.paths, e.path))
          return true
        })
      )
      limits.progress()
      const notes = [
        more ? `[more than ${MAX_FIND_RESULTS} files match; narrow the pattern or path]` : "",
        walkNote(status, FIND_WALK_LIMITS, budgetMs)
      ].filter((n) => n !== "")
      const body = results.length === 0 ? "No files found." : results.join("\n")
      return { text: truncateOutput([body, ...notes].join("\n"), "narrow the pattern or path") }
    })
})
