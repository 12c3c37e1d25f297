/**
 * The embedded database's worker, started ahead: `kintsugi serve` starts it before it loads the rest of
 * the application, so PGlite loads and pglite.wasm compiles (the longest part of opening the database)
 * on another thread meanwhile; the database's first worker is then that one. Loads nothing itself.
 */
const WORKER_URL = new URL("./embeddedWorker.ts", import.meta.url).href

let ahead: Worker | undefined

/** Starts the worker and its compilation now; it does not keep the process alive until it is taken. */
export const startWorkerAhead = (): void => {
  if (ahead !== undefined) return
  ahead = new Worker(WORKER_URL)
  ahead.unref()
  ahead.postMessage({ type: "prepare" })
}

/** The worker started ahead (once), else a new one. */
export const newWorker = (): Worker => {
  const worker = ahead ?? new Worker(WORKER_URL)
  if (worker === ahead) worker.ref()
  ahead = undefined
  return worker
}

/** Whether a worker started ahead is still waiting to be taken. */
export const workerWaiting = (): boolean => ahead !== undefined
