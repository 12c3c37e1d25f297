/**
 * A `.tar.gz` read in memory with the import caps of zip.ts: gunzip streamed ≤ 4 KiB of input per push,
 * tar headers parsed as the bytes arrive (ustar, pax `path`/`size`, GNU long names), every cap checked
 * while inflating. Links, devices and FIFOs are refused; nothing is written to disk.
 */
import { Either } from "effect"
import { Gunzip } from "fflate"
import type { Problem } from "../../contract/Problem.ts"
import { displayName, duplicateNames, pathProblems } from "../../contract/packagePaths.ts"
import { RATIO_FLOOR, ZIP_CHUNK_BYTES } from "../../agents/zip.ts"

/** The problem path of the archive as a whole. */
export const TAR_PATH = "(archive)"

export interface TarCaps {
  /** Size of the compressed archive. */
  readonly maxArchiveBytes: number
  /** Files and folders. */
  readonly maxEntries: number
  /** Bytes of one file. */
  readonly maxFileBytes: number
  /** Bytes of all files. */
  readonly maxTotalBytes: number
  /** Inflated bytes per compressed byte read so far, past RATIO_FLOOR inflated bytes. */
  readonly maxRatio: number
}

export interface TarFile {
  readonly path: string
  readonly content: Uint8Array
  /** Any execute bit set in the entry's mode. */
  readonly executable: boolean
}

const BLOCK = 512
/** Bytes of a pax header or GNU long name (a path is at most 255 bytes anyway). */
const MAX_META_BYTES = 64 * 1024
const decoder = new TextDecoder("utf-8", { fatal: true })

const text = (b: Uint8Array, from: number, length: number): Uint8Array => {
  const field = b.subarray(from, from + length)
  const nul = field.indexOf(0)
  return nul < 0 ? field : field.subarray(0, nul)
}

const octal = (b: Uint8Array, from: number, length: number): number | undefined => {
  const field = text(b, from, length)
  // Base-256 sizes (high bit set) only occur past 8 GiB: far above every cap.
  if (field.length > 0 && (field[0]! & 0x80) !== 0) return Number.MAX_SAFE_INTEGER
  const s = Buffer.from(field).toString("latin1").trim()
  return s === "" ? 0 : /^[0-7]+$/.test(s) ? parseInt(s, 8) : undefined
}

const checksumOk = (h: Uint8Array): boolean => {
  let sum = 0
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!
  return octal(h, 148, 8) === sum
}

const utf8Name = (bytes: Uint8Array): string | undefined => {
  try {
    return decoder.decode(bytes)
  } catch {
    return undefined
  }
}

/** `path` and `size` of a pax extended header (records `<len> <key>=<value>\n`); undefined when malformed. */
const paxRecords = (bytes: Uint8Array): Map<string, Uint8Array> | undefined => {
  const records = new Map<string, Uint8Array>()
  let at = 0
  while (at < bytes.length) {
    const space = bytes.indexOf(0x20, at)
    if (space < 0) return undefined
    const length = Number(Buffer.from(bytes.subarray(at, space)).toString("latin1"))
    if (!Number.isInteger(length) || length <= space - at || at + length > bytes.length) return undefined
    const record = bytes.subarray(space + 1, at + length - 1)
    const eq = record.indexOf(0x3d)
    if (eq < 0) return undefined
    records.set(Buffer.from(record.subarray(0, eq)).toString("latin1"), record.subarray(eq + 1))
    at += length
  }
  return records
}

type Target =
  | { readonly kind: "file"; readonly name: string; readonly executable: boolean }
  | { readonly kind: "pax" | "longname" | "skip" }

/** The tar stream's state: a header being filled, or an entry's data and padding being read. */
const tarParser = (caps: TarCaps, report: (path: string, message: string) => void, nameProblems: Array<Problem>) => {
  let halted = false
  const stop = (path: string, message: string) => {
    halted = true
    report(path, message)
  }
  const files: Array<TarFile> = []
  const header = new Uint8Array(BLOCK)
  let filled = 0
  let remaining = 0
  let padding = 0
  let target: Target | undefined
  let chunks: Array<Uint8Array> = []
  let total = 0
  let entries = 0
  let ended = false
  let longName: Uint8Array | undefined
  let pax: Map<string, Uint8Array> | undefined

  const finishEntry = () => {
    const content = new Uint8Array(Buffer.concat(chunks))
    chunks = []
    if (target?.kind === "file") files.push({ path: target.name, content, executable: target.executable })
    else if (target?.kind === "longname") longName = text(content, 0, content.length)
    else if (target?.kind === "pax") {
      pax = paxRecords(content)
      if (pax === undefined) stop(TAR_PATH, "damaged archive: a pax header is malformed")
    }
    target = undefined
  }

  /** A header block read whole: what the next `size` bytes are. */
  const onHeader = () => {
    if (header.every((x) => x === 0)) {
      ended = true
      return
    }
    if (!checksumOk(header)) return stop(TAR_PATH, "damaged archive: a header checksum does not match (not a tar file?)")
    const type = String.fromCharCode(header[156]!)
    let size = octal(header, 124, 12)
    if (size === undefined) return stop(TAR_PATH, "damaged archive: an entry size is not a number")
    const ustar = Buffer.from(header.subarray(257, 262)).toString("latin1") === "ustar"
    const prefix = ustar ? text(header, 345, 155) : new Uint8Array(0)
    const plain = text(header, 0, 100)
    const rawName = pax?.get("path") ?? longName ?? (prefix.length > 0 ? Buffer.concat([prefix, Buffer.from("/"), plain]) : plain)
    const paxSize = pax?.get("size")
    if (paxSize !== undefined) {
      const s = Buffer.from(paxSize).toString("latin1")
      if (!/^\d+$/.test(s)) return stop(TAR_PATH, "damaged archive: a pax size is not a number")
      size = Number(s)
    }
    const meta = type === "x" || type === "g" || type === "L" || type === "K"
    if (!meta) {
      pax = undefined
      longName = undefined
    }
    remaining = size
    padding = (BLOCK - (size % BLOCK)) % BLOCK
    if (meta) {
      if (size > MAX_META_BYTES) return stop(TAR_PATH, `an extended header is larger than ${MAX_META_BYTES} bytes`)
      target = { kind: type === "x" ? "pax" : type === "L" ? "longname" : "skip" }
      return
    }
    entries += 1
    if (entries > caps.maxEntries) return stop(TAR_PATH, `more than ${caps.maxEntries} entries`)
    const decoded = utf8Name(rawName)
    if (decoded === undefined) {
      nameProblems.push({ path: displayName(Buffer.from(rawName).toString("latin1")), message: "file name is not UTF-8" })
      target = { kind: "skip" }
      return
    }
    // `tar czf x.tgz .` names everything `./…`; the archive's own `./` entry is no file.
    const name = decoded.replace(/^(\.\/)+/, "")
    const isDirectory = type === "5" || name.endsWith("/")
    const bare = name.replace(/\/+$/, "")
    target = { kind: "skip" }
    if (bare === "" && isDirectory) return
    const at = displayName(name)
    const problems = pathProblems(bare)
    if (type === "1" || type === "2") problems.push(`${type === "2" ? "symbolic" : "hard"} links are not allowed (add the file itself)`)
    else if (type === "3" || type === "4" || type === "6") problems.push("devices and FIFOs are not allowed")
    else if (!isDirectory && type !== "0" && type !== "\0" && type !== "7")
      problems.push(`entry type "${displayName(type)}" is not supported`)
    for (const message of problems) nameProblems.push({ path: at, message })
    if (problems.length > 0 || isDirectory) return
    if (size > caps.maxFileBytes) return stop(at, `is larger than ${caps.maxFileBytes} bytes`)
    total += size
    if (total > caps.maxTotalBytes) return stop(TAR_PATH, `holds more than ${caps.maxTotalBytes} bytes in total`)
    target = { kind: "file", name: bare, executable: ((octal(header, 100, 8) ?? 0) & 0o111) !== 0 }
  }

  /** Consumes inflated bytes; after the archive's end or a stop, the rest is ignored. */
  const push = (data: Uint8Array): void => {
    let at = 0
    while (at < data.length && !ended && !halted) {
      if (target === undefined && remaining === 0 && padding === 0) {
        const n = Math.min(BLOCK - filled, data.length - at)
        header.set(data.subarray(at, at + n), filled)
        filled += n
        at += n
        if (filled === BLOCK) {
          filled = 0
          onHeader()
          if (target !== undefined && remaining === 0) finishEntry()
        }
        continue
      }
      if (remaining > 0) {
        const n = Math.min(remaining, data.length - at)
        if (target !== undefined && target.kind !== "skip") chunks.push(data.slice(at, at + n))
        remaining -= n
        at += n
        if (remaining === 0) finishEntry()
        continue
      }
      const n = Math.min(padding, data.length - at)
      padding -= n
      at += n
    }
  }

  return {
    push,
    files,
    /** The stream ended inside an entry or a header. */
    truncated: () => !ended && (filled > 0 || remaining > 0 || padding > 0 || target !== undefined)
  }
}

/**
 * The files of a `.tar.gz` (folders skipped, leading `./` removed), in archive order, or its problems:
 * every name problem (absolute, `..`, backslash, control characters, links, devices, duplicates after
 * case and Unicode folding), or else the first cap hit while inflating (archive size, entries, a file,
 * the total, the compression ratio) or the damage found. Declared sizes are checked before their bytes arrive.
 */
export const readTarGz = (bytes: Uint8Array, caps: TarCaps): Either.Either<Array<TarFile>, Array<Problem>> => {
  if (bytes.length > caps.maxArchiveBytes)
    return Either.left([{ path: TAR_PATH, message: `archive larger than ${caps.maxArchiveBytes} bytes` }])
  if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b)
    return Either.left([{ path: TAR_PATH, message: "is not a gzip file (.tar.gz)" }])
  let problem: Problem | undefined
  const stop = (path: string, message: string) => {
    problem ??= { path, message }
  }
  const nameProblems: Array<Problem> = []
  const tar = tarParser(caps, stop, nameProblems)
  let inflated = 0
  let pushed = 0
  // The tar stream carries headers and padding besides the files' bytes: room for them on top of the total.
  const maxStream = caps.maxTotalBytes + (caps.maxEntries + 16) * 2 * BLOCK
  const gunzip = new Gunzip((data) => {
    if (problem !== undefined) return
    inflated += data.length
    if (inflated > maxStream) return stop(TAR_PATH, `inflates to more than ${maxStream} bytes`)
    if (inflated > RATIO_FLOOR && inflated > caps.maxRatio * pushed)
      return stop(TAR_PATH, `compression ratio above ${caps.maxRatio}:1 (a gzip bomb?)`)
    tar.push(data)
  })
  try {
    for (let i = 0; i < bytes.length && problem === undefined; i += ZIP_CHUNK_BYTES) {
      const end = Math.min(i + ZIP_CHUNK_BYTES, bytes.length)
      pushed = end
      gunzip.push(bytes.subarray(i, end), end === bytes.length)
    }
  } catch (e) {
    stop(TAR_PATH, `damaged archive: ${e instanceof Error ? e.message : String(e)}`)
  }
  if (nameProblems.length > 0) return Either.left(nameProblems)
  if (problem !== undefined) return Either.left([problem])
  if (tar.truncated()) return Either.left([{ path: TAR_PATH, message: "data ends early (truncated archive)" }])
  const dups = duplicateNames(tar.files.map((f) => f.path)).map(({ index, firstName }) => ({
    path: displayName(tar.files[index]?.path ?? ""),
    message: `duplicate of "${displayName(firstName)}" (names are compared ignoring case and Unicode normalisation)`
  }))
  return dups.length > 0 ? Either.left(dups) : Either.right(tar.files)
}
