/**
 * The directory walk behind grep and find (security rule 6): never follows symlinks, skips `.git`,
 * lists every directory through a verified descriptor, caps entries and depth, and yields to the
 * event loop so a long walk can be timed out, aborted and seen as progress. On Linux with glibc the
 * start directory is opened and verified once and every subdirectory is opened relative to its parent's
 * descriptor (openat, O_NOFOLLOW, O_DIRECTORY: inside the root by construction) and listed with
 * getdents64; elsewhere each directory is opened by its path and verified (listDirSync).
 */
import fs from "node:fs"
import { Effect } from "effect"
import { ToolError } from "./Tool.ts"
import { validateInput } from "../job/confinement.ts"
import {
  closeQuietly,
  listDirAt,
  listDirSync,
  openDirSyncChecked,
  openSubdirAt,
  type CheckedDir,
  type DirEntry
} from "../job/confinementSync.ts"

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

/** A directory of the walk: `checked` its verified descriptor, or undefined when it is listed by path. */
interface Dir {
  readonly path: string
  readonly checked: CheckedDir | undefined
}

/** The kind of a Dirent or an lstat result. */
const kindOf = (e: { isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean }): DirEntry["kind"] =>
  e.isDirectory() ? "dir" : e.isFile() ? "file" : e.isSymbolicLink() ? "symlink" : "other"

const list = (dir: Dir, root: string): Array<DirEntry> | undefined =>
  dir.checked !== undefined
    ? listDirAt(dir.checked)
    : listDirSync(dir.path, root)?.map((e): DirEntry => ({ name: e.name, kind: kindOf(e) }))

/** The subdirectory `name` of `dir`: opened relative to its descriptor, or named by its path when `dir` has none. */
const child = (dir: Dir, name: string, path: string): Dir | undefined => {
  if (dir.checked === undefined) return { path, checked: undefined }
  const checked = openSubdirAt(dir.checked, name)
  return checked === undefined ? undefined : { path, checked }
}

const release = (dir: Dir) => {
  if (dir.checked !== undefined) closeQuietly(dir.checked.fd)
}

/** An entry's kind when its directory does not say (d_type unknown): lstat, which never follows a link. */
const kindByLstat = (path: string): DirEntry["kind"] => {
  try {
    return kindOf(fs.lstatSync(path))
  } catch {
    return "other"
  }
}

/** A directory being walked: its sorted entries and the next one to visit. */
interface Level {
  readonly dir: Dir
  readonly rel: string
  readonly depth: number
  readonly entries: ReadonlyArray<DirEntry>
  next: number
}

const byName = (a: DirEntry, b: DirEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/**
 * Files and symlinks below `start` (a canonical directory inside `root`), in sorted order, depth first.
 * One generator walks the whole tree, an explicit stack holding a level per open directory. Holds a
 * descriptor per level while walking: run it to its end or call `return()` (drive does).
 */
export function* walkTree(start: string, root: string, limits: WalkLimits, status: WalkStatus): Generator<WalkEntry> {
  const levels: Array<Level> = []
  const enter = (dir: Dir, rel: string, depth: number) => {
    const listed = list(dir, root)
    if (listed === undefined) release(dir)
    else levels.push({ dir, rel, depth, entries: listed.sort(byName), next: 0 })
  }
  try {
    enter({ path: start, checked: openDirSyncChecked(start, root) }, "", 0)
    for (let level = levels.at(-1); level !== undefined; level = levels.at(-1)) {
      const entry = level.entries[level.next++]
      if (entry === undefined) {
        levels.pop()
        release(level.dir)
        continue
      }
      if (++status.entries > limits.maxEntries) {
        status.stopped = "entries"
        return
      }
      const path = `${level.dir.path === "/" ? "" : level.dir.path}/${entry.name}`
      const rel = level.rel === "" ? entry.name : `${level.rel}/${entry.name}`
      // Kinds come from the directory (d_type), which never follows a link: the same answer as lstat.
      const kind = entry.kind ?? kindByLstat(path)
      if (kind === "dir") {
        if (entry.name === ".git") continue
        if (level.depth + 1 > limits.maxDepth) {
          status.stopped ??= "depth"
          continue
        }
        const sub = child(level.dir, entry.name, path)
        if (sub !== undefined) enter(sub, rel, level.depth + 1)
      } else if (kind === "file" || kind === "symlink") {
        yield { path, rel, kind }
      }
    }
  } finally {
    // A walk stopped early releases the directories it still holds open.
    for (const level of levels) release(level.dir)
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
  try {
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
  } finally {
    // A walk stopped early releases the directory descriptors it holds.
    entries.return?.()
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
      return yield* Effect.fail(new ToolError({ message: 'glob pattern must be relative (no leading "/")' }))
    }
    if (pattern.split(/[/\\]/).some((s) => s === "..")) {
      return yield* Effect.fail(new ToolError({ message: 'glob pattern must not contain ".." segments' }))
    }
    const glob = new Bun.Glob(pattern)
    if (!pattern.includes("/")) return (rel: string) => glob.match(rel.slice(rel.lastIndexOf("/") + 1))
    return (rel: string) => glob.match(rel)
  })

/** A short human note for a walk that stopped early, or "" when it ran to the end. */
export const walkNote = (status: WalkStatus, limits: WalkLimits, timeMs: number): string =>
  status.stopped === "entries"
    ? `[stopped after ${limits.maxEntries} entries; narrow the path or pattern]`
    : status.stopped === "depth"
      ? `[directories deeper than ${limits.maxDepth} levels were skipped]`
      : status.stopped === "time"
        ? `[stopped after ${Math.round(timeMs / 1000)} s; narrow the path or pattern]`
        : ""
