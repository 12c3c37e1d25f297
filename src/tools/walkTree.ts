/**
 * The directory walk behind grep and find (security rule 6): never follows symlinks, skips `.git`,
 * lists every directory through a verified descriptor, caps entries and depth, and yields to the
 * event loop so a long walk can be timed out, aborted and seen as progress.
 */
import { Effect } from "effect"
import { ToolError } from "./Tool.ts"
import { listDirSync, validateInput } from "./confinement.ts"

export interface WalkEntry {
  /** Absolute path: a verified directory plus one name, so inside the walk's root by construction. */
  readonly path: string
  /** Relative to the walk's start directory, forward slashes. */
  readonly rel: string
  readonly kind: "file" | "symlink"
}

export interface WalkLimits {
  readonly maxEntries: number
  readonly maxDepth: number
}

/** Why a walk stopped early, if it did; filled in while walking. */
export interface WalkStatus {
  entries: number
  stopped: "entries" | "depth" | "time" | undefined
}

/** Files and symlinks below `start` (a canonical directory inside `root`), in sorted order. */
export function* walkTree(start: string, root: string, limits: WalkLimits, status: WalkStatus): Generator<WalkEntry> {
  yield* walkDir(start, "", 0, root, limits, status)
}

function* walkDir(dir: string, rel: string, depth: number, root: string, limits: WalkLimits, status: WalkStatus): Generator<WalkEntry> {
  const listed = listDirSync(dir, root)
  if (listed === undefined) return
  const names = listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const entry of names) {
    if (++status.entries > limits.maxEntries) {
      status.stopped = "entries"
      return
    }
    const path = `${dir === "/" ? "" : dir}/${entry.name}`
    const childRel = rel === "" ? entry.name : `${rel}/${entry.name}`
    // Dirent types come from readdir (d_type), which never follows a link: the same answer as lstat.
    if (entry.isDirectory()) {
      if (entry.name === ".git") continue
      if (depth + 1 > limits.maxDepth) {
        status.stopped ??= "depth"
        continue
      }
      yield* walkDir(path, childRel, depth + 1, root, limits, status)
      if (status.stopped === "entries") return
    } else if (entry.isFile()) {
      yield { path, rel: childRel, kind: "file" }
    } else if (entry.isSymbolicLink()) {
      yield { path, rel: childRel, kind: "symlink" }
    }
  }
}

/**
 * Feeds `entries` to `onEntry` until it returns false, yielding to the event loop about every 15 ms
 * (reporting progress then). Stops at `deadline` (performance.now() time) with status "time", and on abort.
 */
export const drive = async (
  entries: Iterator<WalkEntry>,
  opts: { readonly signal: AbortSignal; readonly deadline: number; readonly progress: () => void; readonly status: WalkStatus },
  onEntry: (entry: WalkEntry) => boolean
): Promise<void> => {
  let sliceEnd = performance.now() + 15
  for (;;) {
    const next = entries.next()
    if (next.done === true || !onEntry(next.value)) return
    const now = performance.now()
    if (now >= sliceEnd) {
      if (now >= opts.deadline) {
        opts.status.stopped = "time"
        return
      }
      opts.progress()
      await new Promise<void>((resolve) => setImmediate(resolve))
      if (opts.signal.aborted) return
      sliceEnd = performance.now() + 15
    }
  }
}

/**
 * Compiles a glob (Bun.Glob syntax) into a matcher on walk-relative paths: a pattern without "/"
 * matches the file name at any depth, one with "/" the whole relative path. Rejects absolute patterns
 * and ".." segments (rule 6).
 */
export const compileGlob = (pattern: string): Effect.Effect<(rel: string) => boolean, ToolError> =>
  Effect.gen(function* () {
    yield* validateInput(pattern, "glob pattern")
    if (pattern.startsWith("/") || /^[A-Za-z]:/.test(pattern)) {
      return yield* Effect.fail(new ToolError({ message: "glob pattern must be relative (no leading \"/\")" }))
    }
    if (pattern.split(/[/\\]/).some((s) => s === "..")) {
      return yield* Effect.fail(new ToolError({ message: "glob pattern must not contain \"..\" segments" }))
    }
    const glob = new Bun.Glob(pattern)
    if (!pattern.includes("/")) return (rel: string) => glob.match(rel.slice(rel.lastIndexOf("/") + 1))
    return (rel: string) => glob.match(rel)
  })

/** A short human note for a walk that stopped early, or "" when it ran to the end. */
export const walkNote = (status: WalkStatus, limits: WalkLimits, timeMs: number): string =>
  status.stopped === "entries" ? `[stopped after ${limits.maxEntries} entries; narrow the path or pattern]`
  : status.stopped === "depth" ? `[directories deeper than ${limits.maxDepth} levels were skipped]`
  : status.stopped === "time" ? `[stopped after ${Math.round(timeMs / 1000)} s; narrow the path or pattern]`
  : ""
