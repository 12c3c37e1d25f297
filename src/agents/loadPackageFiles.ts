/**
 * An agent package on disk (folder, `.zip` or `<name>.md`) as the raw files the package checks take;
 * shared by `kintsugi agents validate` and the testing entry's `runAgent`; its folder walker is also
 * the built-in catalog's.
 */
import { Effect, Either } from "effect"
import { lstatSync, readdirSync, readFileSync } from "node:fs"
import { readFile, stat } from "node:fs/promises"
import { basename, join } from "node:path"
import type { Problem } from "../contract/Problem.ts"
import { MAX_PACKAGE_FILE_BYTES, MAX_PACKAGE_FILES, PACKAGE_PATH, type RawPackageFile } from "./packageFiles.ts"
import { displayName } from "../contract/packagePaths.ts"
import { DEFAULT_ZIP_CAPS, readZip, unwrapSingleFolder } from "./zip.ts"

/**
 * Folders a package may nest below its root. The format needs two (`skills/<name>/`); evals' fixtures
 * are small projects of their own (a Maven layout with a package path is ten or more); the bound keeps
 * a walk's work finite. docs/agent-packages.md states it.
 */
export const MAX_PACKAGE_DEPTH = 16

/**
 * The one walker of a package folder (validate, the testing kit, the built-in catalog): no links
 * followed, regular files only, at most MAX_PACKAGE_DEPTH folders deep, capped in count and size.
 * Paths are relative with "/", in name order.
 */
export const readPackageFolder = (
  root: string
): { files: Array<{ readonly path: string; readonly content: Uint8Array }>; problems: Array<Problem> } => {
  const files: Array<{ readonly path: string; readonly content: Uint8Array }> = []
  const problems: Array<Problem> = []
  let seen = 0
  const walk = (dir: string, rel: string, depth: number): void => {
    const entries = readdirSync(dir, { withFileTypes: true })
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`
      const full = join(dir, entry.name)
      if (++seen > MAX_PACKAGE_FILES) {
        problems.push({ path: PACKAGE_PATH, message: `more than ${MAX_PACKAGE_FILES} files` })
        return
      }
      const st = lstatSync(full)
      if (st.isSymbolicLink()) problems.push({ path: displayName(path), message: "symbolic links are not followed" })
      else if (st.isDirectory()) {
        if (depth >= MAX_PACKAGE_DEPTH)
          problems.push({ path: displayName(path), message: `folders nested deeper than ${MAX_PACKAGE_DEPTH}` })
        else walk(full, path, depth + 1)
      } else if (!st.isFile()) problems.push({ path: displayName(path), message: "not a regular file" })
      else if (st.size > MAX_PACKAGE_FILE_BYTES) {
        problems.push({ path: displayName(path), message: `larger than ${MAX_PACKAGE_FILE_BYTES} bytes (${st.size})` })
      } else files.push({ path, content: new Uint8Array(readFileSync(full)) })
      if (seen > MAX_PACKAGE_FILES) return
    }
  }
  walk(root, "", 0)
  return { files, problems }
}

const isZip = (path: string, bytes: Uint8Array) =>
  path.toLowerCase().endsWith(".zip") || (bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes[2] === 3 || bytes[2] === 5))

/** The package's files and the problems met reading them, or why the target could not be read at all. */
export type Loaded = { readonly files: Array<RawPackageFile>; readonly problems: Array<Problem> } | { readonly usage: string }

/**
 * Reads an agent package from disk as the format checks take it: a folder (regular files only, no
 * links followed, capped), a `.zip` (one enclosing folder allowed) or a single `<name>.md`.
 */
export const loadPackageFiles = async (target: string): Promise<Loaded> => {
  let info
  try {
    info = await stat(target)
  } catch (e) {
    return { usage: `cannot read ${target}: ${e instanceof Error ? e.message : String(e)}` }
  }
  if (info.isDirectory()) return readPackageFolder(target)
  if (!info.isFile()) return { usage: `${target} is not a file or folder` }
  if (info.size > DEFAULT_ZIP_CAPS.maxZipBytes) return { usage: `${target} is larger than ${DEFAULT_ZIP_CAPS.maxZipBytes} bytes` }
  const bytes = new Uint8Array(await readFile(target))
  if (isZip(target, bytes)) {
    const entries = await Effect.runPromise(Effect.either(readZip(bytes)))
    if (Either.isLeft(entries)) return { files: [], problems: [...entries.left.problems] }
    return { files: unwrapSingleFolder(entries.right), problems: [] }
  }
  if (!target.toLowerCase().endsWith(".md")) return { usage: `${target}: expected a <name>.md file, a package folder or a .zip` }
  return { files: [{ path: basename(target), content: bytes }], problems: [] }
}
