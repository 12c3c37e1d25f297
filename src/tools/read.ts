/**
 * The `read` tool: one text file from the read-only workspace, a line range at a time, with a
 * continuation hint when cut; reports the lines shown as a `source.read` event (never the content).
 */
import { Effect, Schema } from "effect"
import { MAX_OUTPUT_LINES } from "../job/toolLimits.ts"
import { defineTool, ToolError } from "./Tool.ts"
import { cutLines, limitName } from "./truncate.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import { Workspace } from "../job/Workspace.ts"
import { BINARY_SNIFF_BYTES, splitLines } from "./textFile.ts"

/** Largest file `read` loads; bigger files are for grep. */
const MAX_READ_FILE_BYTES = 32 * 1024 * 1024

const Params = Schema.Struct({
  path: Schema.String.annotations({
    description: "File to read: relative to the workspace root (as grep, find and ls print paths), or absolute"
  }),
  offset: Schema.optionalWith(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)).annotations({ description: "First line to show, 1-based (default 1)" }),
    { exact: true }
  ),
  limit: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, MAX_OUTPUT_LINES)).annotations({
      description: `Maximum number of lines to show (default and maximum ${MAX_OUTPUT_LINES})`
    }),
    { exact: true }
  )
})

export const read = defineTool({
  name: "read",
  description:
    "Read a text file from the read-only workspace. Returns the file's lines as plain text (no line numbers), " +
    `at most ${MAX_OUTPUT_LINES} lines or 50 KB per call; when more remains, a last line in brackets says ` +
    '"use offset=N to continue". Use offset and limit to read a range. Binary files are refused.',
  params: Params,
  readOnly: true,
  execute: (args) =>
    Effect.gen(function* () {
      const workspace = yield* Workspace
      const events = yield* JobEvents
      const target = yield* workspace.resolveRead(args.path)
      const bytes = yield* workspace.readFile(target, MAX_READ_FILE_BYTES)
      ;(yield* Limits).progress()
      if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
        return yield* Effect.fail(new ToolError({ message: `${target.display} is a binary file; read shows text files only` }))
      }
      const lines = splitLines(bytes.toString("utf8"))
      const offset = args.offset ?? 1
      if (lines.length === 0) {
        yield* events.emit({ type: "source.read", tool: "read", path: target.display, firstLine: 1, lastLine: null })
        return { text: `[${target.display} is empty]` }
      }
      if (offset > lines.length) {
        return yield* Effect.fail(
          new ToolError({ message: `offset ${offset} is past the end of ${target.display} (${lines.length} lines)` })
        )
      }
      const wanted = lines.slice(offset - 1, offset - 1 + (args.limit ?? MAX_OUTPUT_LINES))
      const cut = cutLines(wanted.join("\n"))
      const last = offset + cut.shownLines - 1
      const atEnd = last >= lines.length && !cut.partialLine
      yield* events.emit({ type: "source.read", tool: "read", path: target.display, firstLine: offset, lastLine: atEnd ? null : last })
      if (atEnd) return { text: cut.text }
      const range = `lines ${offset}-${last} of ${lines.length}`
      const note = cut.partialLine
        ? `[line ${offset} is longer than the ${limitName("bytes")} and was cut; use grep to search it` +
          (last < lines.length ? `, or offset=${last + 1} to continue]` : "]")
        : cut.cutBy !== undefined
          ? `[showing ${range} (${limitName(cut.cutBy)}); use offset=${last + 1} to continue]`
          : `[showing ${range}; use offset=${last + 1} to continue]`
      return { text: `${cut.text}\n${note}` }
    })
})
