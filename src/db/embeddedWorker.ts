/**
 * The embedded PostgreSQL, run inside a Bun Worker so a long statement never blocks the main event
 * loop: PGlite (persistent data dir, or in memory) behind a PGLiteSocketServer on a private unix socket.
 * Spoken to only by `Db.ts` through the messages below.
 */
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import path from "node:path"
import { fileURLToPath } from "node:url"

/** First message from the main thread: what to open and how many connections to accept. */
export interface StartRequest {
  readonly type: "start"
  /** Absolute path of a persistent data dir; absent = in memory. */
  readonly dataDir?: string | undefined
  /** A `dumpDataDir` tarball to initialize from (ignored when `dataDir` already holds a database). */
  readonly snapshot?: Blob | Uint8Array | undefined
  /** Absolute path of the unix socket to listen on (`<dir>/.s.PGSQL.<port>`, as libpq names it). */
  readonly socketPath: string
  readonly maxConnections: number
  /** pglite.wasm / initdb.wasm as compiled by an earlier worker of the process; absent = compile here. */
  readonly pgliteWasmModule?: WebAssembly.Module | undefined
  readonly initdbWasmModule?: WebAssembly.Module | undefined
}

export type WorkerRequest = StartRequest | { readonly type: "dump" } | { readonly type: "stop" }

export type WorkerReply =
  | {
    readonly type: "listening"
    readonly version: string
    /** The compiled wasm, for the next worker of the process (compiling blocks a thread ~0.3-1 s). */
    readonly pgliteWasmModule: WebAssembly.Module
    readonly initdbWasmModule: WebAssembly.Module
  }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "dumped"; readonly tarball: Uint8Array }
  | { readonly type: "stopped" }

declare const self: Worker

const reply = (message: WorkerReply, transfer: Array<Bun.Transferable> = []) => self.postMessage(message, transfer)
const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))

let db: PGlite | undefined
let server: PGLiteSocketServer | undefined

const compile = async (file: string) => {
  const dist = path.dirname(fileURLToPath(import.meta.resolve("@electric-sql/pglite")))
  return WebAssembly.compile(await Bun.file(path.join(dist, file)).arrayBuffer())
}

const start = async (req: StartRequest) => {
  const pgliteWasmModule = req.pgliteWasmModule ?? await compile("pglite.wasm")
  const initdbWasmModule = req.initdbWasmModule ?? await compile("initdb.wasm")
  db = await PGlite.create({
    ...(req.dataDir !== undefined ? { dataDir: req.dataDir } : {}),
    ...(req.snapshot !== undefined
      ? { loadDataDir: req.snapshot instanceof Blob ? req.snapshot : new Blob([req.snapshot]) }
      : {}),
    pgliteWasmModule,
    initdbWasmModule
  })
  const version = (await db.query<{ v: string }>("show server_version")).rows[0]?.v ?? "unknown"
  server = new PGLiteSocketServer({ db, path: req.socketPath, maxConnections: req.maxConnections })
  await server.start()
  reply({ type: "listening", version, pgliteWasmModule, initdbWasmModule })
}

// Stop accepting clients first, then close PGlite: close() checkpoints, so the data dir is consistent.
const stop = async () => {
  await server?.stop()
  server = undefined
  if (db !== undefined && !db.closed) await db.close()
  db = undefined
}

self.onmessage = (event: MessageEvent<WorkerRequest>) => {
  const req = event.data
  switch (req.type) {
    case "start":
      start(req).catch(async (e: unknown) => {
        await stop().catch(() => undefined)
        reply({ type: "failed", message: describe(e) })
      })
      return
    case "dump":
      if (db === undefined) return reply({ type: "failed", message: "the embedded database is not running" })
      db.dumpDataDir("none").then(
        async (blob) => {
          const tarball = new Uint8Array(await blob.arrayBuffer())
          reply({ type: "dumped", tarball }, [tarball.buffer])
        },
        (e: unknown) => reply({ type: "failed", message: describe(e) })
      )
      return
    case "stop":
      stop().then(
        () => reply({ type: "stopped" }),
        (e: unknown) => reply({ type: "failed", message: describe(e) })
      )
      return
  }
}
