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

/** How a walk lists a directory and opens a subdirectory (`path` names it), and releases one. */
interface Lister<D> {
  readonly list: (dir: D) => Array<DirEntry> | undefined
  readonly child: (dir: D, name: string, path: string) => D | undefined
  readonly close: (dir: D) => void
}

const byDescriptor: Lister<CheckedDir> = { list: listDirAt, child: openSubdirAt, close: (dir) => closeQuietly(dir.fd) }

/** The kind of a Dirent or an lstat result. */
const kindOf = (e: { isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean }): DirEntry["kind"] =>
  e.isDirectory() ? "dir" : e.isFile() ? "file" : e.isSymbolicLink() ? "symlink" : "other"

const byPath = (root: string): Lister<string> => ({
  list: (dir) => listDirSync(dir, root)?.map((e): DirEntry => ({ name: e.name, kind: kindOf(e) })),
  child: (_dir, _name, path) => path,
  close: () => undefined
})

/** An entry's kind when its directory does not say (d_type unknown): lstat, which never follows a link. */
const kindByLstat = (path: string): DirEntry["kind"] => {
  try {
    return kindOf(fs.lstatSync(path))
  } catch {
    return "other"
  }
}

/**
 * Files and symlinks below `start` (a canonical directory inside `root`), in sorted order. Holds a
 * descriptor per directory level while walking: run it to its end or call `return()` (drive does).
 */
export function* walkTree(start: string, root: string, limits: WalkLimits, status: WalkStatus): Generator<WalkEntry> {
  const top = openDirSyncChecked(start, root)
  if (top === undefined) {
    yield* walkDir(byPath(root), start, start, "", 0, limits, status)
    return
  }
  try {
    yield* walkDir(byDescriptor, top, start, "", 0, limits, status)
  } finally {
    closeQuietly(top.fd)
  }
}

function* walkDir<D>(
  lister: Lister<D>,
  dir: D,
  dirPath: string,
  rel: string,
  depth: number,
  limits: WalkLimits,
  status: WalkStatus
): Generator<WalkEntry> {
  const listed = lister.list(dir)
  if (listed === undefined) return
  const entries = listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const entry of entries) {
    if (++status.entries > limits.maxEntries) {
      status.stopped = "entries"
      return
    }
    const path = `${dirPath === "/" ? "" : dirPath}/${entry.name}`
    const childRel = rel === "" ? entry.name : `${rel}/${entry.name}`
    // Kinds come from the directory (d_type), which never follows a link: the same answer as lstat.
    const kind = entry.kind ?? kindByLstat(path)
    if (kind === "dir") {
      if (entry.name === ".git") continue
      if (depth + 1 > limits.maxDepth) {
        status.stopped ??= "depth"
        continue
      }
      const sub = lister.child(dir, entry.name, path)
      if (sub === undefined) continue
      try {
        yield* walkDir(lister, sub, path, childRel, depth + 1, limits, status)
      } finally {
        lister.close(sub)
      }
      if (status.stopped === "entries") return
    } else if (kind === "file") {
      yield { path, rel: childRel, kind: "file" }
    } else if (kind === "symlink") {
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
