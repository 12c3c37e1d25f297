/**
 * Reads a ZIP's central directory (never the file data) so every name, method and declared-size
 * problem is known before a byte is inflated. ZIP64, multi-disk and encrypted archives are refused.
 */
import { Either } from "effect"
import type { Problem } from "../contract/Problem.ts"
import { displayName, duplicateNames, pathProblems } from "../contract/packagePaths.ts"

/** Marks the archive as a whole in a problem path. */
export const ZIP_PATH = "(zip)"

export interface CentralEntry {
  /** Decoded name; a directory keeps its trailing `/`. */
  readonly name: string
  readonly isDirectory: boolean
  readonly method: number
  readonly declaredSize: number
}

export interface DirectoryCaps {
  readonly maxEntries: number
  readonly maxFileBytes: number
  readonly maxTotalBytes: number
}

const u16 = (b: Uint8Array, o: number) => (b[o] ?? 0) | ((b[o + 1] ?? 0) << 8)
const u32 = (b: Uint8Array, o: number) => (u16(b, o) | (u16(b, o + 2) << 16)) >>> 0

const utf8 = new TextDecoder("utf-8", { fatal: true })
/** Byte-for-character, as fflate decodes names without the UTF-8 flag. */
const latin1 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1")

/**
 * A name as written: UTF-8 when flagged; without the flag ASCII, else UTF-8 if it decodes (what
 * most tools write), else undefined. CP437 is not guessed at: such a name is refused.
 */
export const decodeZipName = (bytes: Uint8Array, utf8Flag: boolean): string | undefined => {
  if (!utf8Flag && bytes.every((b) => b < 0x80)) return latin1(bytes)
  try {
    return utf8.decode(bytes)
  } catch {
    return undefined
  }
}

const findEndOfDirectory = (b: Uint8Array): number => {
  const lowest = Math.max(0, b.length - 22 - 0xffff)
  for (let i = b.length - 22; i >= lowest; i--) if (u32(b, i) === 0x06054b50) return i
  return -1
}

const reject = (message: string) => Either.left([{ path: ZIP_PATH, message }])

/** Every entry of the central directory, or every problem found in it (names included). */
export const readCentralDirectory = (b: Uint8Array, caps: DirectoryCaps): Either.Either<Array<CentralEntry>, Array<Problem>> => {
  const end = findEndOfDirectory(b)
  if (end < 0) return reject("not a ZIP archive (no end of central directory)")
  const count = u16(b, end + 10)
  const size = u32(b, end + 12)
  const offset = u32(b, end + 16)
  if (u16(b, end + 4) !== 0 || u16(b, end + 6) !== 0 || u16(b, end + 8) !== count) return reject("multi-disk archives are not supported")
  if (count === 0xffff || size === 0xffffffff || offset === 0xffffffff) return reject("ZIP64 archives are not supported")
  if (count > caps.maxEntries) return reject(`more than ${caps.maxEntries} entries (${count})`)
  if (offset + size > end) return reject("the central directory lies outside the archive")
  const entries: Array<CentralEntry> = []
  const problems: Array<Problem> = []
  let p = offset
  for (let i = 0; i < count; i++) {
    if (p + 46 > end || u32(b, p) !== 0x02014b50) return reject("the central directory is damaged")
    const flags = u16(b, p + 8)
    const method = u16(b, p + 10)
    const declaredSize = u32(b, p + 24)
    const nameLength = u16(b, p + 28)
    const next = p + 46 + nameLength + u16(b, p + 30) + u16(b, p + 32)
    if (next > end) return reject("the central directory is damaged")
    const rawName = b.subarray(p + 46, p + 46 + nameLength)
    // A Unix host (high byte of "version made by" = 3) keeps the file mode in the upper 16 bits.
    const unixMode = u16(b, p + 4) >> 8 === 3 ? u32(b, p + 38) >>> 16 : 0
    p = next
    const name = decodeZipName(rawName, (flags & 0x800) !== 0)
    if (name === undefined) {
      problems.push({ path: displayName(latin1(rawName)), message: "file name is not UTF-8" })
      continue
    }
    const isDirectory = name.endsWith("/")
    const at = displayName(name)
    for (const message of pathProblems(isDirectory ? name.slice(0, -1) : name)) problems.push({ path: at, message })
    if ((flags & 1) !== 0) problems.push({ path: at, message: "encrypted entries are not supported" })
    if ((unixMode & 0o170000) === 0o120000) problems.push({ path: at, message: "symbolic links are not allowed (add the file itself)" })
    if (!isDirectory && method !== 0 && method !== 8) {
      problems.push({ path: at, message: `compression method ${method} is not supported (only stored and deflate)` })
    }
    if (!isDirectory && declaredSize > caps.maxFileBytes) {
      problems.push({ path: at, message: `declares ${declaredSize} bytes, more than ${caps.maxFileBytes}` })
    }
    entries.push({ name, isDirectory, method, declaredSize })
  }
  const files = entries.filter((e) => !e.isDirectory)
  for (const { index, firstName } of duplicateNames(files.map((e) => e.name))) {
    problems.push({
      path: displayName(files[index]?.name ?? ""),
      message: `duplicate of "${displayName(firstName)}" (names are compared ignoring case and Unicode normalisation)`
    })
  }
  const declaredTotal = files.reduce((sum, e) => sum + e.declaredSize, 0)
  if (declaredTotal > caps.maxTotalBytes) {
    problems.push({ path: ZIP_PATH, message: `entries declare ${declaredTotal} bytes in total, more than ${caps.maxTotalBytes}` })
  }
  return problems.length > 0 ? Either.left(problems) : Either.right(entries)
}
