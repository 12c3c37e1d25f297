/**
 * The per-job `Workspace` service: the job's canonical workspace and confined file IO. Tools reach
 * files only through it; the path rules themselves live in confinement.ts.
 */
import type fs from "node:fs"
import { Context, type Effect } from "effect"
import {
  atomicWrite,
  readDirChecked,
  readFileChecked,
  resolveReadPath,
  resolveWritePath,
  type ReadTarget,
  type ResolvedWorkspace,
  type WriteTarget
} from "./confinement.ts"
import type { ToolError } from "./ToolError.ts"

export class Workspace extends Context.Tag("job/Workspace")<
  Workspace,
  {
    /** The job's workspace, canonical (realpath), resolved once at job start. */
    readonly paths: ResolvedWorkspace
    /**
     * A read input (relative to root, or absolute) resolved with symlinks followed; fails with a
     * ToolError unless it lies inside a read-only entry (the same message whether it exists or not).
     */
    readonly resolveRead: (input: string) => Effect.Effect<ReadTarget, ToolError>
    /** A write input (relative to outDir) resolved without following the leaf; outside outDir, read-only entries and `.git` fail. */
    readonly resolveWrite: (input: string) => Effect.Effect<WriteTarget, ToolError>
    /** Reads a whole regular file through a checked descriptor (no final symlink, no FIFO); refuses files over `maxBytes`. */
    readonly readFile: (target: ReadTarget, maxBytes: number) => Effect.Effect<Buffer, ToolError>
    /** Lists one directory through a checked descriptor. */
    readonly readDir: (target: ReadTarget) => Effect.Effect<ReadonlyArray<fs.Dirent>, ToolError>
    /** Writes by temp file + rename in a verified parent; never writes through a link. */
    readonly write: (target: WriteTarget, data: string | Uint8Array) => Effect.Effect<void, ToolError>
  }
>() {}

/** The service over an already canonical workspace. */
export const make = (paths: ResolvedWorkspace): Workspace["Type"] => ({
  paths,
  resolveRead: (input) => resolveReadPath(paths, input),
  resolveWrite: (input) => resolveWritePath(paths, input),
  readFile: readFileChecked,
  readDir: readDirChecked,
  write: atomicWrite
})
