/**
 * The `grep` tool: searches file contents of the read-only workspace without ripgrep or a child
 * process: this thread walks the tree (verified descriptors, as every file tool), search workers
 * (grepPool.ts, one per core) read and match the files, and results are put back in walk order, with
 * capped matches, context lines and one `source.read` event per range shown. A call has a hard time
 * limit: a pattern still running then is stopped by terminating its worker, so it never stalls the job.
 */
import fs from "node:fs"
import { Effect, Schema } from "effect"
import { compileMatcher } from "./grepMatcher.ts"
import { startSearch, type FileResult, type SearchOutcome } from "./grepPool.ts"
import { blocksOf, type Block } from "./grepScan.ts"
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from "../job/toolLimits.ts"
import { defineTool, ToolError, type ToolEvent } from "./Tool.ts"
import { compileGlob, drive, walkNote, walkTree, type WalkLimits, type WalkStatus } from "./walkTree.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import { displayOf, validateInput } from "../job/confinement.ts"
import { Workspace } from "../job/Workspace.ts"

/** Files larger than this are skipped (generated bundles, data). */
const MAX_GREP_FILE_BYTES = 4 * 1024 * 1024
const GREP_WALK_LIMITS: WalkLimits = { maxEntries: 200_000, maxDepth: 64 }
/** The longest a call may take (less when the job has less time left): its hard time limit. */
const GREP_MAX_MS = 30_000

const Params = Schema.Struct({
  pattern: Schema.String.annotations({
    description: "Regular expression (RE2 syntax: no lookaround or backreferences), or plain text with literal: true"
  }),
  literal: Schema.optionalWith(Schema.Boolean.annotations({ description: "Treat pattern as plain text (default false)" }), { exact: true }),
  path: Schema.optionalWith(
    Schema.String.annotations({
      description: "File or directory to search, relative to the workspace root (default: the main source directory)"
    }),
    { exact: true }
  ),
  glob: Schema.optionalWith(
    Schema.String.annotations({
      description: 'Only files matching this glob: "*.ts" matches file names at any depth, "src/**/*.ts" paths below the searched directory'
    }),
    { exact: true }
  ),
  ignoreCase: Schema.optionalWith(Schema.Boolean.annotations({ description: "Case-insensitive search (default false)" }), { exact: true }),
  context: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(0, 20)).annotations({ description: "Lines of context before and after each match (default 0)" }),
    { exact: true }
  ),
  limit: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, 1000)).annotations({ description: "Maximum number of matching lines (default 100)" }),
    { exact: true }
  )
})

interface Found {
  readonly blocks: Array<Block>
  matchCount: number
  skippedLarge: number
}

/** Renders blocks within the output limits; returns the text and one event per (possibly partial) block shown. */
const render = (
  blocks: ReadonlyArray<Block>,
  context: number
): { text: string; events: Array<ToolEvent>; cut: boolean; shownMatches: number } => {
  const out: Array<string> = []
  let shownMatches = 0
  const events: Array<ToolEvent> = []
  let bytes = 0
  const push = (line: string): boolean => {
    const size = Buffer.byteLength(line, "utf8") + 1
    if (out.length + 1 > MAX_OUTPUT_LINES || bytes + size > MAX_OUTPUT_BYTES) return false
    out.push(line)
    bytes += size
    return true
  }
  for (const [i, block] of blocks.entries()) {
    let shown = 0
    const fits = (context === 0 || i === 0 || push("--")) && block.lines.every((l, k) => push(formatLine(block, k, l)) && ++shown > 0)
    if (shown > 0) events.push(sourceRead(block, shown))
    for (let n = block.first; n < block.first + shown; n++) if (block.matches.has(n)) shownMatches++
    if (!fits) return { text: out.join("\n"), events, cut: true, shownMatches }
  }
  return { text: out.join("\n"), events, cut: false, shownMatches }
}

const formatLine = (block: Block, k: number, line: string): string => {
  const n = block.first + k
  return block.matches.has(n) ? `${block.display}:${n}: ${line}` : `${block.display}-${n}- ${line}`
}

const sourceRead = (block: Block, shown: number): ToolEvent => ({
  type: "source.read",
  tool: "grep",
  path: block.display,
  firstLine: block.first,
  lastLine: block.first + shown - 1
})

export const grep = defineTool({
  name: "grep",
  description:
    'Search file contents in the read-only workspace. Prints matching lines as "path:line: text" (context lines as ' +
    '"path-line- text"), paths relative to the workspace root. Skips .git, binary files and files over 4 MB; ' +
    "stops at limit matches (default 100) and says so; lines over 500 characters are cut around the match. " +
    "Regular expressions use RE2 syntax.",
  params: Params,
  readOnly: true,
  // Every call already spreads over all of grepPool's workers, and its hard time limit terminates
  // the workers it runs on: another search sharing them would fail with it.
  lane: "grep",
  execute: (args) =>
    Effect.gen(function* () {
      const workspace = yield* Workspace
      const limits = yield* Limits
      yield* validateInput(args.pattern, "pattern")
      yield* compileMatcher(args.pattern, { literal: args.literal ?? false, ignoreCase: args.ignoreCase ?? false })
      const accept = args.glob === undefined ? () => true : yield* compileGlob(args.glob)
      const target = yield* workspace.resolveRead(args.path ?? workspace.paths.readOnly[0] ?? ".")
      const isDir = yield* Effect.try({
        try: () => fs.statSync(target.path).isDirectory(),
        catch: () => new ToolError({ message: `cannot read ${target.display}` })
      })
      const context = args.context ?? 0
      const limit = args.limit ?? 100
      const found: Found = { blocks: [], matchCount: 0, skippedLarge: 0 }
      const status: WalkStatus = { entries: 0, stopped: undefined }
      const budgetMs = Math.max(1000, Math.min(GREP_MAX_MS, (yield* limits.remainingMs) - 1000))
      const start = performance.now()
      const files: Array<string> = []
      const shownAs = (seq: number) => displayOf(workspace.paths, files[seq] ?? target.path)
      let unreadable = false
      // Results arrive in walk order: the same blocks, limit and skips as a sequential scan.
      const onFile = (seq: number, r: FileResult): boolean => {
        if (r === "unreadable") unreadable = true
        else if (r === "too-large") found.skippedLarge++
        else if (typeof r === "object") {
          const take = Math.min(r.hits.length, limit - found.matchCount)
          found.blocks.push(...blocksOf(r, shownAs(seq), context, take))
          found.matchCount += take
        }
        return found.matchCount < limit
      }
      const spec = {
        pattern: args.pattern,
        literal: args.literal ?? false,
        ignoreCase: args.ignoreCase ?? false,
        context,
        limit,
        maxBytes: MAX_GREP_FILE_BYTES,
        root: target.root
      }
      const outcome: SearchOutcome = yield* Effect.promise((signal) => {
        const search = startSearch(spec, {
          onFile,
          deadline: start + budgetMs,
          stallMs: budgetMs / 2,
          signal,
          progress: limits.progress
        })
        const add = (file: string) => {
          files.push(file)
          return search.add(file)
        }
        if (!isDir) {
          add(target.path)
          return search.finish()
        }
        const walk = walkTree(target.path, target.root, GREP_WALK_LIMITS, status)
        // The walk stops feeding files a little before the hard limit, so what was fed can finish.
        const opts = { deadline: start + budgetMs - Math.min(1000, budgetMs / 5), progress: limits.progress, status, signal }
        return drive(walk, opts, (e) => e.kind !== "file" || !accept(e.rel) || add(e.path)).then(() => search.finish())
      })
      if (outcome.kind === "stalled") {
        return yield* Effect.fail(
          new ToolError({
            message:
              `grep stopped at its ${Math.round(budgetMs / 1000)} s limit: the pattern was still being matched against ` +
              `${shownAs(outcome.seq)}. Patterns with nested or adjacent repetition (like (a+)+$ or \\s+$) ` +
              "can take quadratic or exponential time on long lines: simplify the pattern, narrow path or glob, or use literal: true"
          })
        )
      }
      if (outcome.kind === "failed") return yield* Effect.fail(new ToolError({ message: `grep failed: ${outcome.message}` }))
      if (outcome.kind === "time") status.stopped = "time"
      if (!isDir && unreadable) {
        return yield* Effect.fail(new ToolError({ message: `not a readable regular file: ${target.display}` }))
      }
      limits.progress()
      const { text, events, cut, shownMatches } = render(found.blocks, context)
      yield* Effect.forEach(events, (yield* JobEvents).emit, { discard: true })
      const notes = [
        found.matchCount >= limit ? `[match limit ${limit} reached; narrow the pattern, path or glob, or raise limit]` : "",
        cut
          ? `[output cut at the 2000-line / 50 KB limit: showing ${shownMatches} of ${found.matchCount} matching lines; narrow the pattern, path or glob]`
          : "",
        found.skippedLarge > 0 ? `[${found.skippedLarge} files over 4 MB skipped]` : "",
        walkNote(status, GREP_WALK_LIMITS, budgetMs)
      ].filter((n) => n !== "")
      const body = found.matchCount === 0 ? "No matches found." : text
      return { text: [body, ...notes].join("\n") }
    })
})
