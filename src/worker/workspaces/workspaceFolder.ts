/**
 * Workspace folders on disk: the name rule, the layout `<job root>/<name>/src` (the sources, read-only
 * for jobs) and `<name>/out` (outDir), finding them under the job roots, claiming a new one (never an
 * existing folder) and writing an archive's files into it without following any link.
 */
import { Schema } from "effect"
import fs from "node:fs"
import path from "node:path"
import type { ArchiveFile } from "./archiveFiles.ts"

/** The name rule as an HTML `pattern` (anchored by the browser) and, anchored, for the server. */
export const WORKSPACE_NAME_PATTERN = "[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}"
export const WORKSPACE_NAME_MAX = 64
const NAME = new RegExp(`^(?:${WORKSPACE_NAME_PATTERN})$`)

/** A folder name: a letter or digit, then letters, digits, `.`, `_`, `-`; at most 64 characters. */
export const WorkspaceName = Schema.String.pipe(
  Schema.filter((s) =>
    s === ""
      ? "is required"
      : s.length > WORKSPACE_NAME_MAX
        ? `must be at most ${WORKSPACE_NAME_MAX} characters`
        : NAME.test(s) || "use letters, digits, dots, dashes and underscores, starting with a letter or digit"
  )
)

export interface WorkspaceFolder {
  readonly name: string
  /** The job root it lies in (canonical). */
  readonly jobRoot: string
  /** `<job root>/<name>`: the job's workspace root. */
  readonly path: string
  /** `<path>/src`: the sources, a read-only entry of the job. */
  readonly src: string
  /** `<path>/out`: the job's outDir. */
  readonly out: string
}

export const folderOf = (jobRoot: string, name: string): WorkspaceFolder => {
  const p = path.join(jobRoot, name)
  return { name, jobRoot, path: p, src: path.join(p, "src"), out: path.join(p, "out") }
}

/** How many folders one listing returns at most. */
const MAX_LISTED = 1000

const isRealDir = (p: string): boolean => {
  try {
    return fs.lstatSync(p).isDirectory()
  } catch {
    return false
  }
}

/**
 * The workspaces under `jobRoots`, by root then name: each folder (not a link) whose name follows the
 * rule and that holds `src/` and `out/` folders (not links). Unreadable roots list nothing.
 */
export const findWorkspaces = (jobRoots: ReadonlyArray<string>): Array<WorkspaceFolder> => {
  const found: Array<WorkspaceFolder> = []
  for (const root of jobRoots) {
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(root, { withFileTypes: true })
    } catch {
      continue
    }
    const names = entries
      .filter((e) => e.isDirectory() && NAME.test(e.name))
      .map((e) => e.name)
      .sort()
    for (const name of names) {
      const folder = folderOf(root, name)
      if (isRealDir(folder.src) && isRealDir(folder.out)) found.push(folder)
      if (found.length >= MAX_LISTED) return found
    }
  }
  return found
}

/** Creates `<folder>` (failing with EEXIST when anything has that name) and its `out/`. */
export const claimFolder = (folder: WorkspaceFolder): void => {
  fs.mkdirSync(folder.path, { mode: 0o755 })
  fs.mkdirSync(folder.out, { mode: 0o755 })
}

/** Removes a folder this process claimed (links inside are removed, never followed). */
export const releaseFolder = (folder: WorkspaceFolder): void => fs.rmSync(folder.path, { recursive: true, force: true })

export const isErrno = (e: unknown, code: string): boolean => typeof e === "object" && e !== null && "code" in e && e.code === code

/** A directory made one level at a time: an existing entry must be a real directory. */
const ensureDir = (p: string): void => {
  try {
    fs.mkdirSync(p, { mode: 0o755 })
  } catch (e) {
    if (!isErrno(e, "EEXIST") || !isRealDir(p)) throw e
  }
}

/**
 * Writes `files` under `dir` (which this process just made): parents made one level at a time and
 * checked to be real directories, each file created exclusively without following a link.
 */
export const writeFiles = (dir: string, files: ReadonlyArray<ArchiveFile>): void => {
  const { O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY } = fs.constants
  ensureDir(dir)
  for (const f of files) {
    const parts = f.path.split("/")
    let parent = dir
    for (const part of parts.slice(0, -1)) {
      parent = path.join(parent, part)
      ensureDir(parent)
    }
    const fd = fs.openSync(
      path.join(parent, parts[parts.length - 1]!),
      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
      f.executable ? 0o755 : 0o644
    )
    try {
      for (let at = 0; at < f.content.length; ) at += fs.writeSync(fd, f.content, at, f.content.length - at)
    } finally {
      fs.closeSync(fd)
    }
  }
}
