/**
 * The synchronous descriptor primitives of path confinement (security rules 1-6), free of Effect so
 * grep's workers (grepWorker.ts) can load them cheaply: open without following a final symlink, check
 * the descriptor's real path (Linux: /proc/self/fd) is inside the root, read through that descriptor.
 * confinement.ts builds the Effect API on these and re-exports them; nothing here resolves a path.
 */
import { dlopen, FFIType } from "bun:ffi"
import fs from "node:fs"
import path from "node:path"

export const C = fs.constants
const onLinux = process.platform === "linux"

/** `p === root || p.startsWith(root + sep)` on canonical strings: never a bare prefix test. */
export const isInside = (p: string, root: string): boolean => p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep)

/** A path naming the open descriptor itself (Linux), so later lookups cannot be redirected. */
export const fdPath = (fd: number, fallback: string) => (onLinux ? `/proc/self/fd/${fd}` : fallback)

/** True when the descriptor still refers to something inside `root` (the kernel's view, Linux only). */
export const fdInside = (fd: number, root: string, expected?: string): boolean => {
  if (!onLinux) return expected === undefined || fs.realpathSync.native(expected) === expected
  const actual = fs.readlinkSync(`/proc/self/fd/${fd}`)
  return isInside(actual, root) && (expected === undefined || actual === expected)
}

export const closeQuietly = (fd: number) => {
  try {
    fs.closeSync(fd)
  } catch {
    // Already closed or never valid: nothing left to release.
  }
}

/** Reads up to `size` bytes from `fd` into `buf`; returns the filled part. */
export const readFd = (fd: number, size: number, buf: Buffer): Buffer => {
  let off = 0
  while (off < size) {
    const n = fs.readSync(fd, buf, off, size - off, off)
    if (n <= 0) break
    off += n
  }
  return buf.subarray(0, off)
}

/**
 * Sync walk primitive: lists `dir` only if it opens as a real directory (no symlink) whose descriptor
 * is still `dir` inside `root`; undefined otherwise. Never throws.
 */
export const listDirSync = (dir: string, root: string): Array<fs.Dirent> | undefined => {
  const fd = openVerifiedDir(dir, root)
  if (fd < 0) return undefined
  try {
    return fs.readdirSync(fdPath(fd, dir), { withFileTypes: true })
  } catch {
    return undefined
  } finally {
    closeQuietly(fd)
  }
}

/** A descriptor of `dir` when it opens as a real directory (no symlink) whose descriptor is still `dir` inside `root`, else -1. */
const openVerifiedDir = (dir: string, root: string): number => {
  let fd = -1
  try {
    fd = fs.openSync(dir, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK | C.O_DIRECTORY)
    if (fdInside(fd, root, dir)) return fd
  } catch {
    // Not a directory, a symlink, gone, or unreadable: refused below.
  }
  if (fd >= 0) closeQuietly(fd)
  return -1
}

/** How much of a file `readFileSyncChecked` reads before asking `skipByHead`. */
const HEAD_BYTES = 64 * 1024
/** Files up to this size are read in one go (a second read costs more than it could save). */
const STREAM_FROM_BYTES = 1024 * 1024

/** A growable read buffer reused across files by a walk. */
export interface Scratch {
  buf: Buffer
}

/**
 * Sync walk primitive: reads a regular file (O_NOFOLLOW | O_NONBLOCK, fstat, descriptor inside `root`)
 * into `scratch`; the result is valid until the next call. "too-large" over `maxBytes`, undefined when
 * it is not a regular file inside `root` or cannot be read. Never throws, never blocks on a FIFO.
 * With `skipByHead`, it is asked about the first bytes ("skipped" when it says so); of a file over 1 MB
 * only the first HEAD_BYTES are read before asking.
 */
export const readFileSyncChecked = (
  file: string,
  root: string,
  maxBytes: number,
  scratch: Scratch,
  skipByHead?: (head: Buffer) => boolean
): Buffer | "too-large" | "skipped" | undefined => {
  let fd = -1
  try {
    fd = fs.openSync(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK)
    return fdInside(fd, root) ? readRegularFd(fd, maxBytes, scratch, skipByHead) : undefined
  } catch {
    return undefined
  } finally {
    if (fd >= 0) closeQuietly(fd)
  }
}

/** readFileSyncChecked's reading part, for a descriptor already known to be inside the root. */
const readRegularFd = (
  fd: number,
  maxBytes: number,
  scratch: Scratch,
  skipByHead: ((head: Buffer) => boolean) | undefined
): Buffer | "too-large" | "skipped" | undefined => {
  const st = fs.fstatSync(fd)
  if (!st.isFile()) return undefined
  if (st.size > maxBytes) return "too-large"
  if (scratch.buf.length < st.size) scratch.buf = Buffer.allocUnsafe(Math.max(st.size, scratch.buf.length * 2))
  if (skipByHead === undefined || st.size <= STREAM_FROM_BYTES) {
    const bytes = readFd(fd, st.size, scratch.buf)
    return skipByHead?.(bytes) === true ? "skipped" : bytes
  }
  // Streaming: the head first, so a file `skipByHead` rejects (a binary) is not read to its end.
  const head = readFd(fd, HEAD_BYTES, scratch.buf)
  if (skipByHead(head)) return "skipped"
  let off = head.length
  if (off < HEAD_BYTES) return head
  while (off < st.size) {
    const n = fs.readSync(fd, scratch.buf, off, st.size - off, off)
    if (n <= 0) break
    off += n
  }
  return scratch.buf.subarray(0, off)
}

// ---------------------------------------------------------------------------------------------------
// Reading many files of one directory (grep's workers) and walking a tree (walkTree.ts): a directory
// is opened and verified once (listDirSync's checks), and each name in it (a file, or a subdirectory
// to walk) is opened relative to that descriptor with openat(2) and O_NOFOLLOW. The kernel then
// resolves one component inside a directory that was verified to be inside the root: no path walk
// from "/", and no readlink per file (together about half of the cost of reading a small file).
// Directories are listed with getdents64 on the same descriptor. Both calls are reached through bun:ffi
// (Node's fs has no *at calls); where they are missing (not Linux, no glibc) `openDirSyncChecked` says
// so and callers work by path.

/** O_CLOEXEC on Linux x64 and arm64 (fs.constants lacks it; fs.openSync always sets it). */
const O_CLOEXEC = 0o2000000

interface LibcAt {
  readonly openat: (dirFd: number, name: Uint8Array, flags: number) => number
  /** getdents64(2): fills `buf` with linux_dirent64 records; bytes used, 0 at the end, -1 on error. */
  readonly getdents64: (fd: number, buf: Uint8Array, size: number) => number
}
let libcAt: LibcAt | null | undefined

const libc = (): LibcAt | null => {
  if (libcAt !== undefined) return libcAt
  libcAt = null
  if (!onLinux || (process.arch !== "x64" && process.arch !== "arm64")) return libcAt
  try {
    const lib = dlopen("libc.so.6", {
      openat: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
      getdents64: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64_fast }
    })
    libcAt = {
      openat: (dirFd, name, flags) => lib.symbols.openat(dirFd, name, flags),
      getdents64: (fd, buf, size) => Number(lib.symbols.getdents64(fd, buf, size))
    }
  } catch {
    // No glibc here: callers read by path.
  }
  return libcAt
}

/** A directory opened for `readFileAtSyncChecked`; close it with closeQuietly(fd). */
export interface CheckedDir {
  readonly fd: number
  /** NUL-terminated UTF-8 name buffer, reused per file. */
  name: Uint8Array
}

/**
 * Opens `dir` (a real directory, no symlink, whose descriptor is still `dir` inside `root`: the checks
 * of listDirSync) for reading its files by name; undefined when it is not, or openat is unavailable.
 */
export const openDirSyncChecked = (dir: string, root: string): CheckedDir | undefined => {
  if (libc() === null) return undefined
  const fd = openVerifiedDir(dir, root)
  return fd < 0 ? undefined : { fd, name: new Uint8Array(256) }
}

const encoder = new TextEncoder()

/** Opens `name` (one path component) relative to `dir` with `flags` plus O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC; -1 when it cannot. */
const openNameAt = (dir: CheckedDir, name: string, flags: number): number => {
  const lib = libc()
  if (lib === null || name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0")) return -1
  if (dir.name.length < name.length * 3 + 1) dir.name = new Uint8Array(name.length * 3 + 1)
  const { written } = encoder.encodeInto(name, dir.name)
  dir.name[written] = 0
  return lib.openat(dir.fd, dir.name, flags | C.O_NOFOLLOW | C.O_NONBLOCK | O_CLOEXEC)
}

/**
 * The subdirectory `name` of a checked directory, opened relative to it (O_DIRECTORY, O_NOFOLLOW): an
 * entry of a directory inside the root that is itself a directory, not a symlink, so inside the root
 * by construction; undefined when it is not. Close it with closeQuietly(fd).
 */
export const openSubdirAt = (dir: CheckedDir, name: string): CheckedDir | undefined => {
  const fd = openNameAt(dir, name, C.O_RDONLY | C.O_DIRECTORY)
  return fd < 0 ? undefined : { fd, name: dir.name }
}

/** A directory entry: its kind from the directory itself (d_type, never following a link), undefined when the filesystem does not say. */
export interface DirEntry {
  readonly name: string
  readonly kind: "dir" | "file" | "symlink" | "other" | undefined
}

/** d_type: DT_UNKNOWN 0, DT_DIR 4, DT_REG 8, DT_LNK 10; FIFOs, sockets and devices are "other". */
const kindOf = (dType: number): DirEntry["kind"] =>
  dType === 4 ? "dir" : dType === 8 ? "file" : dType === 10 ? "symlink" : dType === 0 ? undefined : "other"
let direntBuf: Buffer | undefined

/** The entries of a checked directory (without "." and ".."), read with getdents64; undefined when it cannot be read. */
export const listDirAt = (dir: CheckedDir): Array<DirEntry> | undefined => {
  const lib = libc()
  if (lib === null) return undefined
  direntBuf ??= Buffer.allocUnsafe(64 * 1024)
  const buf = direntBuf
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  const out: Array<DirEntry> = []
  for (;;) {
    const n = lib.getdents64(dir.fd, buf, buf.length)
    if (n < 0) return undefined
    if (n === 0) return out
    // struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, NUL-terminated d_name
    // (little-endian: x64 and arm64).
    for (let off = 0; off < n; ) {
      const reclen = view.getUint16(off + 16, true)
      if (reclen === 0) return undefined
      const end = buf.indexOf(0, off + 19)
      const name = buf.toString("utf8", off + 19, end < 0 || end > off + reclen ? off + reclen : end)
      if (name !== "." && name !== "..") out.push({ name, kind: kindOf(buf[off + 18] ?? 0) })
      off += reclen
    }
  }
}

/**
 * readFileSyncChecked for the entry `name` of a directory opened by openDirSyncChecked: `name` must be
 * one path component (no "/", not "." or ".."); the file is opened with openat, O_NOFOLLOW and
 * O_NONBLOCK, so a symlink, FIFO or device is never followed or read (undefined).
 */
export const readFileAtSyncChecked = (
  dir: CheckedDir,
  name: string,
  maxBytes: number,
  scratch: Scratch,
  skipByHead?: (head: Buffer) => boolean
): Buffer | "too-large" | "skipped" | undefined => {
  const fd = openNameAt(dir, name, C.O_RDONLY)
  if (fd < 0) return undefined
  try {
    return readRegularFd(fd, maxBytes, scratch, skipByHead)
  } catch {
    return undefined
  } finally {
    closeQuietly(fd)
  }
}
