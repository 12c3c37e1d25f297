/**
 * A workspace's sources from an uploaded archive: a `.zip` (zip.ts) or a `.tar.gz` (tarGz.ts), told
 * apart by their first bytes, read in memory with the workspace caps, one shared top folder removed.
 */
import { Effect, Either } from "effect"
import type { Problem } from "../../contract/Problem.ts"
import { displayName, foldKey } from "../../contract/packagePaths.ts"
import { readZip, unwrapSingleFolder } from "../../agents/zip.ts"
import { readTarGz, type TarCaps } from "./tarGz.ts"

export interface ArchiveFile {
  readonly path: string
  readonly content: Uint8Array
  readonly executable: boolean
}

/**
 * What one upload may hold. The archive itself is also under the request body cap (16 MiB); a source
 * tree compresses 3–10:1, so 64 MiB inflated is room for it while a bomb stops early.
 */
export const WORKSPACE_ARCHIVE_CAPS: TarCaps = {
  maxArchiveBytes: 16 * 1024 * 1024,
  maxEntries: 5000,
  maxFileBytes: 16 * 1024 * 1024,
  maxTotalBytes: 64 * 1024 * 1024,
  maxRatio: 100
}

const isZip = (b: Uint8Array) => b.length >= 4 && b[0] === 0x50 && b[1] === 0x4b && (b[2] === 0x03 || b[2] === 0x05)
const isGzip = (b: Uint8Array) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b

/** A file whose path runs through another file (`a` and `a/b`): it could not be written. */
const fileFolderClashes = (files: ReadonlyArray<ArchiveFile>): Array<Problem> => {
  const keys = new Set(files.map((f) => foldKey(f.path)))
  return files.flatMap((f) => {
    const parts = f.path.split("/")
    const clash = parts.slice(0, -1).findIndex((_, i) => keys.has(foldKey(parts.slice(0, i + 1).join("/"))))
    return clash < 0
      ? []
      : [{ path: displayName(f.path), message: `lies inside "${displayName(parts.slice(0, clash + 1).join("/"))}", which is a file` }]
  })
}

/**
 * The files of an uploaded `.zip` or `.tar.gz` (`fileName` must say which, and the bytes must agree),
 * with one top folder they all share removed; or every problem, each path naming the entry.
 */
export const readArchive = (
  fileName: string,
  bytes: Uint8Array,
  caps: TarCaps = WORKSPACE_ARCHIVE_CAPS
): Effect.Effect<Array<ArchiveFile>, Array<Problem>> =>
  Effect.gen(function* () {
    const lower = fileName.toLowerCase()
    const zipName = lower.endsWith(".zip")
    const tarName = lower.endsWith(".tar.gz") || lower.endsWith(".tgz")
    if (bytes.length === 0) return yield* Effect.fail([{ path: "(archive)", message: "is empty (choose a .zip or .tar.gz file)" }])
    if (!zipName && !tarName) return yield* Effect.fail([{ path: "(archive)", message: "must be a .zip or .tar.gz file" }])
    if (zipName !== isZip(bytes) || tarName !== isGzip(bytes)) {
      return yield* Effect.fail([{ path: "(archive)", message: `is named ${zipName ? ".zip" : ".tar.gz"} but its content is not one` }])
    }
    const read: Array<ArchiveFile> = zipName
      ? yield* readZip(bytes, {
          maxZipBytes: caps.maxArchiveBytes,
          maxEntries: caps.maxEntries,
          maxFileBytes: caps.maxFileBytes,
          maxTotalBytes: caps.maxTotalBytes,
          maxRatio: caps.maxRatio
        }).pipe(
          Effect.map((entries) => entries.map((e) => ({ path: e.path, content: e.content, executable: false }))),
          Effect.mapError((e) => [...e.problems])
        )
      : yield* Either.match(readTarGz(bytes, caps), { onLeft: (p) => Effect.fail(p), onRight: (files) => Effect.succeed(files) })
    if (read.length === 0) return yield* Effect.fail([{ path: "(archive)", message: "holds no files" }])
    const files = unwrapSingleFolder(read)
    const clashes = fileFolderClashes(files)
    return clashes.length > 0 ? yield* Effect.fail(clashes) : files
  })
