/**
 * Package ZIPs in memory: `readZip` checks the central directory first, then inflates with fflate's
 * streaming Unzip, ≤ 4 KiB of input per push, counting output bytes and stopping at the first cap.
 * Nothing is written to disk; declared sizes are never trusted. `writeZip` exports a package.
 */
import { Effect, Either, Schema } from "effect"
import { Unzip, UnzipInflate, zipSync, type Zippable } from "fflate"
import { Problem } from "../contract/Problem.ts"
import { displayName } from "../contract/packagePaths.ts"
import { type CentralEntry, decodeZipName, readCentralDirectory, ZIP_PATH } from "./zipDirectory.ts"

export interface ZipCaps {
  /** Size of the archive itself. */
  readonly maxZipBytes: number
  /** Entries in the central directory, directories included. */
  readonly maxEntries: number
  /** Inflated bytes of one file. */
  readonly maxFileBytes: number
  /** Inflated bytes of all files. */
  readonly maxTotalBytes: number
  /** Inflated bytes per compressed byte read so far, enforced once RATIO_FLOOR bytes are inflated. */
  readonly maxRatio: number
}

export const DEFAULT_ZIP_CAPS: ZipCaps = {
  maxZipBytes: 16 * 1024 * 1024,
  maxEntries: 200,
  maxFileBytes: 1024 * 1024,
  maxTotalBytes: 8 * 1024 * 1024,
  maxRatio: 100
}
/** Compressed bytes per push: bounds the output of one push to about 4 MiB (deflate's ~1032:1). */
export const ZIP_CHUNK_BYTES = 4096
/** Small archives may compress better than maxRatio legitimately; the ratio applies past this. */
export const RATIO_FLOOR = 256 * 1024

export class ZipRejected extends Schema.TaggedError<ZipRejected>()("ZipRejected", {
  problems: Schema.Array(Problem)
}) {
  override get message(): string {
    return this.problems.map((p) => `${p.path}: ${p.message}`).join("; ")
  }
}

export interface ZipEntry {
  readonly path: string
  readonly content: Uint8Array
}

/** fflate decodes a name without the UTF-8 flag byte-for-character; re-read it as the directory does. */
const localName = (name: string): string => {
  if (!/[^\u0000-\u007f]/.test(name) || /[^\u0000-\u00ff]/.test(name)) return name
  const bytes = Uint8Array.from(name, (c) => c.charCodeAt(0))
  return decodeZipName(bytes, false) ?? name
}

/** The streaming pass over checked entries; the first problem stops it. */
const inflateAll = (bytes: Uint8Array, entries: ReadonlyArray<CentralEntry>, caps: ZipCaps): Either.Either<Array<ZipEntry>, Problem> => {
  const expected = new Map<string, number>()
  for (const e of entries) expected.set(e.name, (expected.get(e.name) ?? 0) + 1)
  const out: Array<ZipEntry> = []
  const pending = new Set<string>()
  let problem: Problem | undefined
  let total = 0
  let pushed = 0
  const stop = (path: string, message: string) => {
    problem ??= { path: path === ZIP_PATH ? path : displayName(path), message }
  }
  const unzip = new Unzip((file) => {
    if (problem !== undefined) return
    const name = localName(file.name)
    const left = expected.get(name) ?? 0
    if (left === 0) return stop(name, "local file header does not match the central directory")
    expected.set(name, left - 1)
    if (name.endsWith("/")) return // a directory: never started, nothing inflated
    const chunks: Array<Uint8Array> = []
    let size = 0
    pending.add(name)
    file.ondata = (err, data, final) => {
      if (problem !== undefined) return
      if (err !== null) return stop(name, `cannot be inflated: ${err.message}`)
      size += data.length
      total += data.length
      if (size > caps.maxFileBytes) return stop(name, `inflates to more than ${caps.maxFileBytes} bytes`)
      if (total > caps.maxTotalBytes) return stop(ZIP_PATH, `inflates to more than ${caps.maxTotalBytes} bytes in total`)
      if (total > RATIO_FLOOR && total > caps.maxRatio * pushed) {
        return stop(ZIP_PATH, `compression ratio above ${caps.maxRatio}:1 (a ZIP bomb?)`)
      }
      chunks.push(data)
      if (final) {
        pending.delete(name)
        out.push({ path: name, content: new Uint8Array(Buffer.concat(chunks, size)) })
      }
    }
    file.start()
  })
  unzip.register(UnzipInflate)
  try {
    for (let i = 0; i < bytes.length && problem === undefined; i += ZIP_CHUNK_BYTES) {
      const end = Math.min(i + ZIP_CHUNK_BYTES, bytes.length)
      pushed = end
      unzip.push(bytes.subarray(i, end), end === bytes.length)
    }
  } catch (e) {
    stop(ZIP_PATH, `damaged archive: ${e instanceof Error ? e.message : String(e)}`)
  }
  if (problem !== undefined) return Either.left(problem)
  const [unfinished] = pending
  if (unfinished !== undefined) return Either.left({ path: displayName(unfinished), message: "data ends early (truncated entry)" })
  const missing = [...expected].filter(([, n]) => n > 0).map(([name]) => displayName(name))
  if (missing.length > 0) return Either.left({ path: ZIP_PATH, message: `entries without data: ${missing.join(", ")}` })
  return Either.right(out)
}

/**
 * The files of a ZIP (directories skipped), in archive order, or every problem found before
 * inflating (names: absolute, `..`, backslash, drive letter, NUL or control characters, duplicates
 * after case and Unicode folding; encryption; methods; declared sizes; entry count), or the first
 * cap hit while inflating. Never writes to disk; never trusts declared sizes.
 */
export const readZip = (bytes: Uint8Array, caps?: Partial<ZipCaps>): Effect.Effect<Array<ZipEntry>, ZipRejected> =>
  Effect.suspend(() => {
    const c: ZipCaps = { ...DEFAULT_ZIP_CAPS, ...caps }
    if (bytes.length > c.maxZipBytes) {
      return Effect.fail(new ZipRejected({ problems: [{ path: ZIP_PATH, message: `archive larger than ${c.maxZipBytes} bytes` }] }))
    }
    const directory = readCentralDirectory(bytes, c)
    if (Either.isLeft(directory)) return Effect.fail(new ZipRejected({ problems: directory.left }))
    const inflated = inflateAll(bytes, directory.right, c)
    return Either.isLeft(inflated) ? Effect.fail(new ZipRejected({ problems: [inflated.left] })) : Effect.succeed(inflated.right)
  })

/** A fixed timestamp, so exporting the same package twice gives the same bytes. */
const EPOCH = new Date(1980, 0, 1)

/** A deflated ZIP of `files` in the given order (names as given; UTF-8 flagged when not ASCII). */
export const writeZip = (files: ReadonlyArray<{ readonly path: string; readonly content: string | Uint8Array }>): Uint8Array => {
  // Null prototype: a file called `__proto__` is a key like any other, not the object's prototype.
  const data: Zippable = Object.create(null) as Zippable
  for (const f of files) {
    const content = typeof f.content === "string" ? new TextEncoder().encode(f.content) : f.content
    data[f.path] = [content, { level: 6, mtime: EPOCH }]
  }
  return zipSync(data, { mtime: EPOCH })
}

/**
 * Strips one folder every path shares when there is no top-level file: a ZIP made by compressing the
 * `support-bot/` folder imports like one made of its contents. Other lists are returned unchanged.
 */
export const unwrapSingleFolder = <F extends { readonly path: string }>(files: ReadonlyArray<F>): Array<F> => {
  const first = files[0]?.path.split("/")[0]
  if (first === undefined || !files.every((f) => f.path.startsWith(`${first}/`))) return [...files]
  return files.map((f) => ({ ...f, path: f.path.slice(first.length + 1) }))
}
