/**
 * A grep search worker (a Bun Worker run by grepPool.ts): scans the files grep's walk hands it, in the
 * order given, and answers with each file's matching lines. It never resolves a path: it opens exactly
 * the paths the parent's verified walk produced, each directory once through a verified descriptor and
 * its files by name relative to it (openDirSyncChecked, readFileAtSyncChecked: O_NOFOLLOW, regular
 * file), else by path with the per-file checks (readFileSyncChecked: descriptor inside the read-only
 * root). Loads no Effect, so it starts in a few milliseconds.
 */
import {
  closeQuietly,
  isInside,
  openDirSyncChecked,
  readFileAtSyncChecked,
  readFileSyncChecked,
  type CheckedDir,
  type Scratch
} from "../job/confinementSync.ts"
import { buildMatcher, isBinaryHead, scanTextBytes, warmUpScan, type FileHits, type LineMatcher } from "./grepScan.ts"

/** One search: the pattern, how much to collect per file, and the read-only root its files must lie in. */
export interface ScanSpec {
  readonly pattern: string
  readonly literal: boolean
  readonly ignoreCase: boolean
  readonly context: number
  readonly limit: number
  readonly maxBytes: number
  readonly root: string
}

export type ToWorker =
  | {
      readonly type: "init"
      /** Int32[4096]: slot `call % 4096` holds `call` once that call is cancelled; its files are then skipped. */
      readonly cancel: SharedArrayBuffer
      /** Float64[3]: [call, seq, Date.now() at start] of the file being scanned (call -1 = idle). */
      readonly status: SharedArrayBuffer
      /**
       * Int32[1]: the directory descriptor this worker holds open, or -1. Whoever swaps it to -1 closes it:
       * the worker when done with the directory, the pool once a terminated worker has exited.
       */
      readonly heldDir: SharedArrayBuffer
    }
  /** Run grepScan's warmUpScan (the job child's warm-up); answered with "warmed". */
  | { readonly type: "warm" }
  | {
      readonly type: "scan"
      readonly call: number
      readonly spec: ScanSpec
      readonly first: number
      /** The batch's paths joined by NUL (no path holds one): one string crosses threads far cheaper than an array. */
      readonly files: string
    }

/** Per file: not a readable regular file inside the root, over maxBytes, no match (binary included), skipped, or its hits. */
export type FileResult = "unreadable" | "too-large" | "none" | "cancelled" | FileHits

/** A FileResult in one character ("h": the next entry of `hits`). */
export type ResultCode = "u" | "t" | "n" | "c" | "h"

export type FromWorker =
  | {
      readonly type: "scanned"
      readonly call: number
      readonly first: number
      /** One ResultCode per file of the batch, in order. */
      readonly codes: string
      /** The hits of the files coded "h", in order. */
      readonly hits: ReadonlyArray<FileHits>
    }
  | { readonly type: "failed"; readonly call: number; readonly message: string }
  /** The answer to "init": the worker's code is loaded and it takes scans. */
  | { readonly type: "ready" }
  /** The answer to "warm", also when warmUpScan failed (the search then compiles its code itself). */
  | { readonly type: "warmed" }

declare const self: Worker

let cancel: Int32Array | undefined
let status: Float64Array | undefined
let heldDir: Int32Array | undefined
let cached: { readonly key: string; readonly matcher: LineMatcher } | undefined
const scratch: Scratch = { buf: Buffer.allocUnsafe(256 * 1024) }

/**
 * The directory of the files being scanned: consecutive files of one directory (the walk's order) are
 * opened relative to one verified descriptor (confinementSync.ts); `checked` undefined = read by path.
 */
interface OpenDir {
  readonly path: string
  readonly checked: CheckedDir | undefined
}

const closeDir = (dir: OpenDir | undefined) => {
  const fd = dir?.checked?.fd
  if (fd !== undefined && (heldDir === undefined || Atomics.compareExchange(heldDir, 0, fd, -1) === fd)) closeQuietly(fd)
}

const scanOne = (spec: ScanSpec, matcher: LineMatcher, file: string, dir: OpenDir | undefined): FileHits | ResultCode => {
  const name = file.slice(file.lastIndexOf("/") + 1)
  const bytes =
    dir?.checked !== undefined
      ? readFileAtSyncChecked(dir.checked, name, spec.maxBytes, scratch, isBinaryHead)
      : readFileSyncChecked(file, spec.root, spec.maxBytes, scratch, isBinaryHead)
  if (bytes === undefined) return "u"
  if (bytes === "too-large") return "t"
  // "skipped": the head holds a NUL (isBinaryHead), so what is read is text.
  if (bytes === "skipped") return "n"
  return scanTextBytes(bytes, matcher, spec.context, spec.limit) ?? "n"
}

/** The open directory for `file`: `current` when it is the same, else a newly opened one (the old one closed). */
const dirFor = (file: string, root: string, current: OpenDir | undefined): OpenDir => {
  const slash = file.lastIndexOf("/")
  const path = slash <= 0 ? "/" : file.slice(0, slash)
  if (current?.path === path) return current
  closeDir(current)
  // A directory outside the root (the root is a single file) is never opened: its files are read by path.
  const checked = isInside(path, root) ? openDirSyncChecked(path, root) : undefined
  if (checked !== undefined && heldDir !== undefined) Atomics.store(heldDir, 0, checked.fd)
  return { path, checked }
}

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const msg = event.data
  if (msg.type === "init") {
    cancel = new Int32Array(msg.cancel)
    status = new Float64Array(msg.status)
    status[0] = -1
    heldDir = new Int32Array(msg.heldDir)
    self.postMessage({ type: "ready" } satisfies FromWorker)
    return
  }
  if (msg.type === "warm") {
    try {
      warmUpScan()
    } catch {
      // Not warmed: the first search compiles its code itself.
    }
    self.postMessage({ type: "warmed" } satisfies FromWorker)
    return
  }
  try {
    const { spec } = msg
    const key = JSON.stringify([spec.pattern, spec.literal, spec.ignoreCase])
    if (cached?.key !== key) cached = { key, matcher: buildMatcher(spec.pattern, spec) }
    const matcher = cached.matcher
    let codes = ""
    const hits: Array<FileHits> = []
    let dir: OpenDir | undefined
    try {
      const files = msg.files.split("\0")
      for (let k = 0; k < files.length; k++) {
        const file = files[k] ?? ""
        if (cancel !== undefined && Atomics.load(cancel, msg.call % cancel.length) === msg.call) {
          codes += "c"
          continue
        }
        if (status !== undefined) {
          status[1] = msg.first + k
          // Date.now(): a worker thread, no Effect; the pool reads it from another thread, where performance.now() has another origin.
          status[2] = Date.now()
          status[0] = msg.call
        }
        dir = dirFor(file, spec.root, dir)
        const r = scanOne(spec, matcher, file, dir)
        if (typeof r === "string") codes += r
        else {
          codes += "h"
          hits.push(r)
        }
      }
    } finally {
      closeDir(dir)
    }
    if (status !== undefined) status[0] = -1
    self.postMessage({ type: "scanned", call: msg.call, first: msg.first, codes, hits } satisfies FromWorker)
  } catch (e) {
    if (status !== undefined) status[0] = -1
    self.postMessage({ type: "failed", call: msg.call, message: e instanceof Error ? e.message : String(e) } satisfies FromWorker)
  }
}
