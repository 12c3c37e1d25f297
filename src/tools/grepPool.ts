/**
 * grep's search workers: up to one Bun Worker per core (grepWorker.ts), started on first use and kept
 * for the process (unref'd, so they never hold it open). A search call numbers the files its walk
 * produces, sends them in batches to the least busy worker and hands each file's result back in walk
 * order, so output, limits and events are those of a sequential scan. A call has a hard deadline: a
 * worker still busy for the call then is terminated (a catastrophic pattern cannot be stopped any
 * other way) and replaced on the next call; the job's own thread never runs a pattern. Each worker's
 * thread is named after where its code came from (WORKER_NAMES), as `top -H` and /proc show it.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { closeQuietly } from "../job/confinementSync.ts"
import type { FileResult, FromWorker, ScanSpec, ToWorker } from "./grepWorker.ts"

export type { FileResult, ScanSpec } from "./grepWorker.ts"

/** Workers per process: the cores (at most 8). */
const GREP_WORKERS = Math.max(1, Math.min(8, os.availableParallelism()))
/** Files per message to a worker once every worker is busy. */
const BATCH_FILES = 64

interface Slot {
  readonly worker: Worker
  /** [call, seq, startedAt] of the file being scanned; call -1 = idle (see grepWorker.ts). */
  readonly status: Float64Array
  /** The directory descriptor the worker holds open, or -1 (see grepWorker.ts): closed here once a terminated worker exited. */
  readonly heldDir: Int32Array
  /** Call ids of the batches sent and not yet answered, oldest first. */
  readonly batches: Array<number>
  /** Settles once the worker answered "init" (its code is loaded) or is gone. */
  readonly ready: Promise<void>
  /** Called once the worker answered "warm", or is gone. */
  warmed: () => void
  dead: boolean
}

/** Cancelled calls: slot `call % CANCEL_SLOTS` holds `call` once it is (see grepWorker.ts). */
const CANCEL_SLOTS = 4096
const cancelled = new Int32Array(new SharedArrayBuffer(4 * CANCEL_SLOTS))
const slots: Array<Slot> = []
const active = new Map<number, CallState>()
let lastCall = 0

/** A worker's answer to a scan. */
type ScanAnswer = Exclude<FromWorker, { readonly type: "ready" | "warmed" }>
type Scanned = Extract<FromWorker, { readonly type: "scanned" }>

interface CallState {
  readonly onMessage: (m: ScanAnswer) => void
  readonly onWorkerLost: (why: string) => void
}

const drop = (slot: Slot, why: string) => {
  if (slot.dead) return
  slot.dead = true
  slot.worker.terminate()
  const i = slots.indexOf(slot)
  if (i !== -1) slots.splice(i, 1)
  for (const call of new Set(slot.batches)) active.get(call)?.onWorkerLost(why)
  slot.batches.length = 0
}

/**
 * Where the worker's code is. Bun 1.4's bundler does not rewrite `new URL("./grepWorker.ts",
 * import.meta.url)`: it inlines the source file's URL, so a bundle built from the sources starts the
 * worker from those sources (they are there: bundles are built from them). The job child's bundle
 * (jobChildBuild.ts) has the worker's own bytecode bundle at `tools/grepWorker.js` beside its main
 * file (`grepWorker.js` with flat naming), which is then preferred: no source tree, no transpiling.
 * Exported for the bundle test, which imports it from a bundle's entry.
 * @public
 */
export const grepWorkerUrl = (): string => {
  const dir = path.dirname(Bun.main)
  const bundled = Bun.main.endsWith(".js")
    ? [path.join(dir, "tools", "grepWorker.js"), path.join(dir, "grepWorker.js")].find((p) => fs.existsSync(p))
    : undefined
  return bundled !== undefined ? pathToFileURL(bundled).href : new URL("./grepWorker.ts", import.meta.url).href
}

/** The name of a worker's thread: whether its code is a bundle's (bytecode) or the TypeScript sources. */
export const WORKER_NAMES = { bytecode: "grep-bytecode", source: "grep-source" } as const
let worker: { readonly url: string; readonly name: string } | undefined

const spawn = (): Slot => {
  if (worker === undefined) {
    const url = grepWorkerUrl()
    worker = { url, name: url.endsWith(".js") ? WORKER_NAMES.bytecode : WORKER_NAMES.source }
  }
  // Bun names the worker's thread after `name`; `ref: false` keeps the worker from holding the process
  // open. Passed as a variable: `ref` is Bun's own option, which the DOM's WorkerOptions (a consumer's
  // default lib) does not list, as its Worker has no `unref`.
  const options = { name: worker.name, ref: false }
  const thread = new Worker(worker.url, options)
  const status = new SharedArrayBuffer(3 * 8)
  const heldDir = new SharedArrayBuffer(4)
  let loaded: () => void = () => undefined
  const ready = new Promise<void>((resolve) => (loaded = resolve))
  const slot: Slot = {
    worker: thread,
    status: new Float64Array(status),
    heldDir: new Int32Array(heldDir),
    batches: [],
    ready,
    warmed: () => undefined,
    dead: false
  }
  slot.status[0] = -1
  slot.heldDir[0] = -1
  thread.addEventListener("message", (e: MessageEvent<FromWorker>) => {
    if (e.data.type === "ready") return loaded()
    if (e.data.type === "warmed") return slot.warmed()
    slot.batches.shift()
    active.get(e.data.call)?.onMessage(e.data)
  })
  // The worker's own error text may name host paths: the model only learns that it failed.
  thread.addEventListener("error", () => {
    loaded()
    slot.warmed()
    drop(slot, "a search worker failed")
  })
  thread.addEventListener("close", () => {
    loaded()
    slot.warmed()
    drop(slot, "the search worker exited")
    // A worker terminated while holding a directory open (stuck in a pattern) cannot close it itself.
    const fd = Atomics.exchange(slot.heldDir, 0, -1)
    if (fd >= 0) closeQuietly(fd)
  })
  thread.postMessage({ type: "init", cancel: cancelled.buffer as SharedArrayBuffer, status, heldDir } satisfies ToWorker)
  slots.push(slot)
  return slot
}

/**
 * Starts every worker a search may use (GREP_WORKERS) that is not running yet, so a job's first grep
 * call pays no worker start (the job child's warm-up runs it); settles once each has loaded its code
 * or failed (a failed one is replaced at the next call).
 */
const startWorkers = (): Promise<void> => {
  while (slots.length < GREP_WORKERS) spawn()
  return Promise.all(slots.map((s) => s.ready)).then(() => undefined)
}

/**
 * Starts the workers (startWorkers) and has each run its warm-up (grepScan.ts warmUpScan: every kind
 * of scan over text of its own, no file read), so that a job's first grep call finds the scanning code
 * compiled by the JIT; settles once each answered or is gone. The job child's warm-up runs it.
 */
export const warmUpWorkers = async (): Promise<void> => {
  await startWorkers()
  await Promise.all(
    slots.map(
      (slot) =>
        new Promise<void>((resolve) => {
          const earlier = slot.warmed
          slot.warmed = () => {
            earlier()
            resolve()
          }
          slot.worker.postMessage({ type: "warm" } satisfies ToWorker)
        })
    )
  )
}

/** The least busy live worker; a new one while fewer than GREP_WORKERS run and all are busy. */
const pick = (): Slot => {
  let best: Slot | undefined
  for (const s of slots) if (best === undefined || s.batches.length < best.batches.length) best = s
  return best === undefined || (best.batches.length > 0 && slots.length < GREP_WORKERS) ? spawn() : best
}

/** Whether a live worker has no batch to scan. */
const anyIdle = (): boolean => {
  for (const s of slots) if (s.batches.length === 0) return true
  return false
}

/** The FileResult of a ResultCode other than "h" (see grepWorker.ts). */
const resultOf = (code: string | undefined): FileResult =>
  code === "u" ? "unreadable" : code === "t" ? "too-large" : code === "c" ? "cancelled" : "none"

export type SearchOutcome =
  | { readonly kind: "done" }
  /** `onFile` asked to stop (the match limit). */
  | { readonly kind: "stopped" }
  /** The hard deadline passed with files unscanned; none was stuck (results so far are valid). */
  | { readonly kind: "time" }
  /** The hard deadline passed while a worker had been scanning file `seq` for over `stallMs`. */
  | { readonly kind: "stalled"; readonly seq: number }
  | { readonly kind: "aborted" }
  | { readonly kind: "failed"; readonly message: string }

export interface SearchCall {
  /** Queues the next file of the walk (its seq is the count of files added before); false once no more are wanted. */
  readonly add: (path: string) => boolean
  /** No more files: resolves once every file was handed to `onFile`, or the call ended otherwise. */
  readonly finish: () => Promise<SearchOutcome>
}

export interface SearchOptions {
  /** Called in walk order, once per file; return false to stop the search (the match limit). */
  readonly onFile: (seq: number, result: FileResult) => boolean
  /** performance.now() time at which busy workers are terminated and the call ends. */
  readonly deadline: number
  /** At the deadline, a file scanned for longer than this is reported as stuck ("stalled"). */
  readonly stallMs: number
  readonly signal: AbortSignal
  readonly progress: () => void
}

/** Starts a search call over files the caller's verified walk produces. */
export const startSearch = (spec: ScanSpec, opts: SearchOptions): SearchCall => {
  const call = ++lastCall
  /** Answered batches not yet handed over, by the seq of their first file. */
  const answered = new Map<number, Scanned>()
  /** The batch being handed over: its answer, the next file's index in it and the next entry of its hits. */
  let current: { readonly m: Scanned; k: number; h: number } | undefined
  let batch: Array<string> = []
  let batchFirst = 0
  let batchDir = ""
  let added = 0
  let cursor = 0
  let finishing = false
  let outcome: SearchOutcome | undefined
  let settle: (o: SearchOutcome) => void = () => undefined
  const settled = new Promise<SearchOutcome>((resolve) => (settle = resolve))
  let lastProgress = performance.now()

  const end = (o: SearchOutcome, terminateBusy: boolean) => {
    if (outcome !== undefined) return
    outcome = o
    Atomics.store(cancelled, call % CANCEL_SLOTS, call)
    active.delete(call)
    clearTimeout(timer)
    opts.signal.removeEventListener("abort", onAbort)
    if (terminateBusy)
      for (const s of [...slots]) if (s.batches.includes(call)) drop(s, "a search worker was stopped (another search ran out of time)")
    settle(o)
  }
  const advance = () => {
    while (outcome === undefined) {
      if (current === undefined) {
        const m = answered.get(cursor)
        if (m === undefined) break
        answered.delete(cursor)
        current = { m, k: 0, h: 0 }
      }
      const { m } = current
      if (current.k >= m.codes.length) {
        current = undefined
        continue
      }
      const code = m.codes[current.k++]
      const r = code === "h" ? (m.hits[current.h++] ?? "none") : resultOf(code)
      cursor++
      if (!opts.onFile(cursor - 1, r)) return end({ kind: "stopped" }, false)
    }
    if (outcome === undefined && finishing && cursor === added) end({ kind: "done" }, false)
  }
  const flush = () => {
    if (batch.length === 0 || outcome !== undefined) return
    const slot = pick()
    slot.batches.push(call)
    slot.worker.postMessage({ type: "scan", call, spec, first: batchFirst, files: batch.join("\0") } satisfies ToWorker)
    batch = []
    batchFirst = added
  }
  active.set(call, {
    onMessage: (m) => {
      if (m.type === "failed") return end({ kind: "failed", message: "a search worker failed" }, true)
      answered.set(m.first, m)
      const now = performance.now()
      if (now - lastProgress > 15) {
        lastProgress = now
        opts.progress()
      }
      advance()
    },
    onWorkerLost: (why) => end({ kind: "failed", message: why }, true)
  })
  const onTimeout = () => {
    // Date.now(): a synchronous timer callback comparing the worker threads' stamps (performance.now() has another origin per thread).
    const now = Date.now()
    let stuck: number | undefined
    for (const s of slots) {
      if (!s.batches.includes(call) || s.status[0] !== call) continue
      const seq = s.status[1] ?? 0
      if (now - (s.status[2] ?? now) > opts.stallMs && (stuck === undefined || seq < stuck)) stuck = seq
    }
    end(stuck === undefined ? { kind: "time" } : { kind: "stalled", seq: stuck }, true)
  }
  const timer = setTimeout(onTimeout, Math.max(0, opts.deadline - performance.now()))
  const onAbort = () => end({ kind: "aborted" }, true)
  opts.signal.addEventListener("abort", onAbort, { once: true })

  return {
    add: (path) => {
      if (outcome !== undefined) return false
      // A full batch ends where a directory does (a worker opens and verifies each directory of a batch once).
      const dir = path.slice(0, path.lastIndexOf("/"))
      if (batch.length >= BATCH_FILES && (dir !== batchDir || batch.length >= 4 * BATCH_FILES)) flush()
      batch.push(path)
      batchDir = dir
      added++
      if (slots.length < GREP_WORKERS || anyIdle()) flush()
      return true
    },
    finish: () => {
      finishing = true
      flush()
      advance()
      return settled
    }
  }
}
