/**
 * The `edit` tool: exact text replacement in one file under workspace.outDir. Every oldText must occur
 * exactly once in the current file; all edits apply together or none does (temp file + rename).
 */
import fs from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool, ToolError } from "./Tool.ts"
import { MAX_WRITE_BYTES } from "./write.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import { Workspace } from "../job/Workspace.ts"

const Edit = Schema.Struct({
  oldText: Schema.String.annotations({ description: "Exact text to replace, including whitespace; must occur exactly once in the file" }),
  newText: Schema.String.annotations({ description: "Replacement text" })
})

const Params = Schema.Struct({
  path: Schema.String.annotations({ description: "File to change: relative to the output directory" }),
  edits: Schema.Array(Edit).pipe(Schema.minItems(1), Schema.maxItems(100)).annotations({
    description: "Replacements, matched against the file as it is before this call; they must not overlap"
  })
})

/** Every start index of `needle` in `text`, overlapping ones included, stopping after `max`. */
const occurrences = (text: string, needle: string, max: number): Array<number> => {
  const found: Array<number> = []
  for (let i = text.indexOf(needle); i !== -1 && found.length < max; i = text.indexOf(needle, i + 1)) found.push(i)
  return found
}

/** Applies exact-once, non-overlapping edits, or returns every problem found. */
export const applyEdits = (
  text: string,
  edits: ReadonlyArray<{ readonly oldText: string; readonly newText: string }>
): { readonly ok: true; readonly text: string } | { readonly ok: false; readonly problems: ReadonlyArray<string> } => {
  const problems: Array<string> = []
  const spans: Array<{ start: number; end: number; newText: string; index: number }> = []
  for (const [index, e] of edits.entries()) {
    if (e.oldText.length === 0) {
      problems.push(`edits[${index}].oldText is empty`)
      continue
    }
    const at = occurrences(text, e.oldText, 1000)
    const first = at[0]
    if (at.length !== 1 || first === undefined) {
      problems.push(
        `edits[${index}].oldText occurs ${at.length >= 1000 ? "1000+" : at.length} times in the file; it must occur exactly once` +
          (at.length === 0 ? " (check whitespace and line breaks)" : " (include more surrounding text)")
      )
    } else {
      spans.push({ start: first, end: first + e.oldText.length, newText: e.newText, index })
    }
  }
  spans.sort((a, b) => a.start - b.start)
  for (let i = 1; i < spans.length; i++) {
    const prev = spans[i - 1]
    const cur = spans[i]
    if (prev !== undefined && cur !== undefined && cur.start < prev.end) {
      problems.push(`edits[${prev.index}] and edits[${cur.index}] overlap`)
    }
  }
  if (problems.length > 0) return { ok: false, problems }
  let out = ""
  let pos = 0
  for (const s of spans) {
    out += text.slice(pos, s.start) + s.newText
    pos = s.end
  }
  return { ok: true, text: out + text.slice(pos) }
}

export const edit = defineTool({
  name: "edit",
  description:
    "Change a file in the output directory by exact text replacement. Each oldText must occur exactly once in " +
    "the file (the error says how many times it occurred otherwise); several non-overlapping edits per call; " +
    "either all edits apply or none does. Use write to create a file.",
  params: Params,
  execute: (args) =>
    Effect.gen(function* () {
      const workspace = yield* Workspace
      const target = yield* workspace.resolveWrite(args.path)
      const kind = yield* Effect.try({
        try: () => (fs.lstatSync(target.path).isSymbolicLink() ? "symlink" : "other"),
        catch: () => new ToolError({ message: `${target.display} does not exist in the output directory; use write to create it` })
      })
      if (kind === "symlink") {
        return yield* Effect.fail(new ToolError({ message: `${target.display} is a symbolic link; edit changes regular files only` }))
      }
      const current = yield* workspace.readFile(
        { path: target.path, root: workspace.paths.outDir, display: target.display },
        MAX_WRITE_BYTES
      )
      const result = applyEdits(current.toString("utf8"), args.edits)
      if (!result.ok) {
        return yield* Effect.fail(
          new ToolError({ message: `No edit applied to ${target.display}:\n${result.problems.map((p) => `  - ${p}`).join("\n")}` })
        )
      }
      if (Buffer.byteLength(result.text, "utf8") > MAX_WRITE_BYTES) {
        return yield* Effect.fail(new ToolError({ message: `the edited file would exceed ${MAX_WRITE_BYTES} bytes` }))
      }
      yield* workspace.write(target, result.text)
      ;(yield* Limits).progress()
      yield* (yield* JobEvents).emit({ type: "output", path: target.display })
      return { text: `Applied ${args.edits.length} edit${args.edits.length === 1 ? "" : "s"} to ${target.display}.` }
    })
})
