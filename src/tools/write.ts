/**
 * The `write` tool: creates or overwrites one file under workspace.outDir (temp file + rename, never
 * in place) and reports it as an `output` event.
 */
import { Effect, Schema } from "effect"
import { defineTool, ToolError } from "./Tool.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"
import { Workspace } from "../job/Workspace.ts"

/** Largest content `write` and `edit` store in one file. */
export const MAX_WRITE_BYTES = 16 * 1024 * 1024

const Params = Schema.Struct({
  path: Schema.String.annotations({ description: "File to write: relative to the output directory (missing directories are created)" }),
  content: Schema.String.annotations({ description: "The complete new content of the file" })
})

export const write = defineTool({
  name: "write",
  description:
    "Create or overwrite a file in the output directory, the only place you can write. The path is relative to " +
    "the output directory; missing parent directories are created; .git is off limits.",
  params: Params,
  execute: (args) =>
    Effect.gen(function* () {
      const workspace = yield* Workspace
      const target = yield* workspace.resolveWrite(args.path)
      const size = Buffer.byteLength(args.content, "utf8")
      if (size > MAX_WRITE_BYTES) {
        return yield* Effect.fail(new ToolError({ message: `content is too large (${size} bytes, limit ${MAX_WRITE_BYTES})` }))
      }
      yield* workspace.write(target, args.content)
      ;(yield* Limits).progress()
      yield* (yield* JobEvents).emit({ type: "output", path: target.display })
      return { text: `Wrote ${size} bytes to ${target.display} in the output directory.` }
    })
})
