/**
 * The `ls` tool: the entries of one directory of the read-only workspace, sorted, directories
 * marked with a trailing "/", capped. Symlinks are listed by name, never followed.
 */
import { Effect, Schema } from "effect"
import { defineTool } from "./Tool.ts"
import { truncateOutput } from "./truncate.ts"
import { Limits } from "../job/Limits.ts"
import { Workspace } from "../job/Workspace.ts"

/** Most entries `ls` lists. */
export const MAX_LS_ENTRIES = 1000

const Params = Schema.Struct({
  path: Schema.optionalWith(
    Schema.String.annotations({
      description: "Directory to list: relative to the workspace root, or absolute (default: the main source directory)"
    }),
    { exact: true }
  )
})

export const ls = defineTool({
  name: "ls",
  description:
    "List one directory of the read-only workspace. The first line is the directory's path relative to the " +
    'workspace root (use it as the prefix for read); then one entry per line, sorted, directories ending in "/". ' +
    `At most ${MAX_LS_ENTRIES} entries.`,
  params: Params,
  readOnly: true,
  execute: (args) =>
    Effect.gen(function* () {
      const workspace = yield* Workspace
      const target = yield* workspace.resolveRead(args.path ?? workspace.paths.readOnly[0] ?? ".")
      const entries = yield* workspace.readDir(target)
      ;(yield* Limits).progress()
      const names = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      const shown = names.slice(0, MAX_LS_ENTRIES)
      const header = target.display === "." ? "./" : `${target.display}/`
      const body = shown.length === 0 ? "[empty directory]" : shown.join("\n")
      const more = names.length > shown.length ? `\n[${names.length - shown.length} more entries not shown; use find with a pattern]` : ""
      return { text: truncateOutput(`${header}\n${body}${more}`, "use find with a pattern to narrow the listing") }
    })
})
