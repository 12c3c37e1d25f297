/**
 * The `grep` tool: searches file contents of the read-only workspace in-process (no ripgrep, no child
 * process), with capped matches, context lines and one `source.read` event per range shown.
 */
import fs from "node:fs"
import { Effect, Schema } from "effect"
import { compileMatcher, type LineMatcher } from "./grepMatcher.ts"
import { BINARY_SNIFF_BYTES, splitLines } from "./read.ts"
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from "./limits.ts"
import { defineTool, ToolError, type ToolEvent } from "./Tool.ts"
import { compileGlob, drive, walkNote, walkTree, type WalkLimits, type WalkStatus } from "./walkTree.ts"
import { JobEvents } from "../kernel/JobEvents.ts"
import { Limits } from "../kernel/Limits.ts"
import { displayPath, readFileSyncChecked, validateInput, Workspace, type Scratch } from "./Workspace.ts"

/** Files larger than this are skipped (generated bundles, data). */
export const MAX_GREP_FILE_BYTES = 4 * 1024 * 1024
export const GREP_WALK_LIMITS: WalkLimits = { maxEntries: 200_000, maxDepth: 64 }
export const GREP_MAX_MS = 30_000
/** Longest line shown; longer ones are cut around the match. */
export const MAX_LINE_CHARS = 500

const Params = Schema.Struct({
  pattern: Schema.String.annotations({ description: "Regular expression (RE2 syntax: no lookaround or backreferences), or plain text with literal: true" }),
  literal: Schema.optionalWith(Schema.Boolean.annotations({ description: "Treat pattern as plain text (default false)" }), { exact: true }),
  path: Schema.optionalWith(
    Schema.String.annotations({ description: "File or directory to search, relative to the workspace root (default: the main source directory)" }),
    { exact: true }
  ),
  glob: Schema.optionalWith(
    Schema.String.annotations({ description: 'Only files matching this glob: "*.ts" matches file names at any depth, "src/**/*.ts" paths below the searched directory' }),
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

/** A run of consecutive lines of one file to show; `matches` are 1-based line numbers. */
interface Block {
  readonly display: string
  readonly first: number
  readonly lines: ReadonlyArray<string>
  readonly matches: ReadonlySet<number>
}

interface Found {
  readonly blocks: Array<Block>
  matchCount: number
  skippedLarge: number
}

const shorten = (line: string, at: number): string => {
  if (line.length <= MAX_LINE_CHARS) return line
  const start = Math.max(0, Math.min(at - 100, line.length - MAX_LINE_CHARS))
  return `${start > 0 ? "…" : ""}${line.slice(start, start + MAX_LINE_CHARS)}${start + MAX_LINE_CHARS < line.length ? "…" : ""}`
}

/** Scans one file's bytes, appending merged match+context blocks; false once the match limit is reached. */
const scanFile = (bytes: Buffer, display: string, m: LineMatcher, context: number, limit: number, found: Found): boolean => {
  if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0) || !m.mayMatchBytes(bytes)) return true
  const text = bytes.toString("utf8")
  if (!m.mayMatchText(text)) return true
  const lines = splitLines(text)
  const hits: Array<number> = []
  for (let i = 0; i < lines.length && found.matchCount < limit; i++) {
    if (m.test(lines[i] ?? "")) {
      hits.push(i)
      found.matchCount++
    }
  }
  let b = 0
  while (b < hits.length) {
    const from = Math.max(0, (hits[b] ?? 0) - context)
    let to = Math.min(lines.length - 1, (hits[b] ?? 0) + context)
    const matches = new Set<number>()
    // Merge matches whose context ranges touch or overlap into one block.
    while (b < hits.length && (hits[b] ?? 0) - context <= to + 1) {
      const h = hits[b] ?? 0
      matches.add(h + 1)
      to = Math.min(lines.length - 1, h + context)
      b++
    }
    const shown = lines.slice(from, to + 1).map((l, k) => (matches.has(from + k + 1) ? shorten(l, m.indexIn(l)) : shorten(l, 0)))
    found.blocks.push({ display, first: from + 1, lines: shown, matches })
  }
  return found.matchCount < limit
}

/** Renders blocks within the output limits; returns the text and one event per (possibly partial) block shown. */
const render = (blocks: ReadonlyArray<Block>, context: number): { text: string; events: Array<ToolEvent>; cut: boolean; shownMatches: number } => {
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
    "Search file contents in the read-only workspace. Prints matching lines as \"path:line: text\" (context lines as " +
    '"path-line- text"), paths relative to the workspace root. Skips .git, binary files and files over 4 MB; ' +
    "stops at limit matches (default 100) and says so; lines over 500 characters are cut around the match. " +
    "Regular expressions use RE2 syntax.",
  params: Params,
  execute: (args) =>
    Effect.gen(function* () {
      const workspace = yield* Workspace
      const limits = yield* Limits
      yield* validateInput(args.pattern, "pattern")
      const matcher = yield* compileMatcher(args.pattern, { literal: args.literal ?? false, ignoreCase: args.ignoreCase ?? false })
      const accept = args.glob === undefined ? () => true : yield* compileGlob(args.glob)
      const target = yield* workspace.resolveRead(args.path ?? workspace.paths.readOnly[0] ?? ".")
      const isDir = yield* Effect.try({
        try: () => fs.statSync(target.path).isDirectory(),
        catch: () => new ToolError({ message: `cannot read ${target.display}` })
      })
      const context = args.context ?? 0
      const limit = args.limit ?? 100
      const found: Found = { blocks: [], matchCount: 0, skippedLarge: 0 }
      const scratch: Scratch = { buf: Buffer.allocUnsafe(256 * 1024) }
      const scan = (file: string): "ok" | "unreadable" | "stop" => {
        const bytes = readFileSyncChecked(file, target.root, MAX_GREP_FILE_BYTES, scratch)
        if (bytes === undefined) return "unreadable"
        if (bytes === "too-large") {
          found.skippedLarge++
          return "ok"
        }
        return scanFile(bytes, displayPath(workspace.paths.root, file), matcher, context, limit, found) ? "ok" : "stop"
      }
      const status: WalkStatus = { entries: 0, stopped: undefined }
      const budgetMs = Math.max(1000, Math.min(GREP_MAX_MS, (yield* limits.remainingMs) - 1000))
      if (!isDir) {
        if (scan(target.path) === "unreadable") {
          return yield* Effect.fail(new ToolError({ message: `not a readable regular file: ${target.display}` }))
        }
      } else {
        const walk = walkTree(target.path, target.root, GREP_WALK_LIMITS, status)
        const opts = { deadline: performance.now() + budgetMs, progress: limits.progress, status }
        yield* Effect.promise((signal) =>
          drive(walk, { ...opts, signal }, (e) => e.kind !== "file" || !accept(e.rel) || scan(e.path) !== "stop")
        )
      }
      limits.progress()
      const { text, events, cut, shownMatches } = render(found.blocks, context)
      yield* Effect.forEach(events, (yield* JobEvents).emit, { discard: true })
      const notes = [
        found.matchCount >= limit ? `[match limit ${limit} reached; narrow the pattern, path or glob, or raise limit]` : "",
        cut ? `[output cut at the 2000-line / 50 KB limit: showing ${shownMatches} of ${found.matchCount} matching lines; narrow the pattern, path or glob]` : "",
        found.skippedLarge > 0 ? `[${found.skippedLarge} files over 4 MB skipped]` : "",
        walkNote(status, GREP_WALK_LIMITS, budgetMs)
      ].filter((n) => n !== "")
      const body = found.matchCount === 0 ? "No matches found." : text
      return { text: [body, ...notes].join("\n") }
    })
})
