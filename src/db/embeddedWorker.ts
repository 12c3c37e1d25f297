/**
 * The embedded PostgreSQL, run inside a Bun Worker so a long statement never blocks the main event
 * loop: PGlite (persistent data dir, or in memory) behind a PGLiteSocketServer on a private unix socket.
 * Spoken to only by `embeddedDatabase.ts` through the messages below.
 */
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import fs from "node:fs"
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

/**
 * `ping`: answered with `pong` as soon as no statement runs (the supervisor's liveness check).
 * `prepare`: compile pglite.wasm now, for the start request that follows (embeddedWorkerAhead.ts).
 */
export type WorkerRequest =
  | StartRequest
  | { readonly type: "prepare" }
  | { readonly type: "dump" }
  | { readonly type: "stop" }
  | { readonly type: "ping" }

export type WorkerReply =
  | {
      readonly type: "listening"
      readonly version: string
      /** The compiled wasm, for the next worker of the process (compiling blocks a thread). */
      readonly pgliteWasmModule: WebAssembly.Module
      /** Compiled only when initdb ran (a new database without a snapshot). */
      readonly initdbWasmModule: WebAssembly.Module | undefined
    }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "dumped"; readonly tarball: Uint8Array }
  | { readonly type: "stopped" }
  | { readonly type: "pong" }
  /** Unsolicited: a statement died inside PGlite (see `guard`); this PGlite must never run again. */
  | { readonly type: "poisoned"; readonly message: string }

declare const self: Worker

const reply = (message: WorkerReply, transfer: Array<Bun.Transferable> = []) => self.postMessage(message, transfer)
const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))

let db: PGlite | undefined
let server: PGLiteSocketServer | undefined
let poisoned = false

interface PGliteModule {
  _PostgresMainLoopOnce: () => void
}
interface PGliteInternals {
  readonly mod?: PGliteModule
  readonly POSTGRES_MAIN_LONGJMP?: unknown
}

/**
 * PGlite 0.5.14 runs each protocol message in `_PostgresMainLoopOnce` and swallows every exception that
 * is not its own longjmp. A host stack overflow (RangeError) in the middle of a statement, e.g. a
 * 5,000-deep jsonb value parsed in this worker's smaller thread stack, is thus dropped: the client gets
 * ReadyForQuery as if the statement had succeeded, and the backend is left half-way (buffer pins,
 * memory contexts, transaction state), so a later error spins forever (docs/pglite-socket-report.md).
 * We notice the swallowed exception, drop the rest of that statement's output, close the clients'
 * connections (their statement fails) and tell the supervisor, which replaces this worker.
 */
const guard = (pglite: PGlite) => {
  const internals = pglite as unknown as PGliteInternals
  const mod = internals.mod
  if (mod === undefined || typeof mod._PostgresMainLoopOnce !== "function") return
  const loopOnce = mod._PostgresMainLoopOnce.bind(mod)
  mod._PostgresMainLoopOnce = () => {
    try {
      loopOnce()
    } catch (e) {
      const status = typeof e === "object" && e !== null && "status" in e ? e.status : undefined
      if (!poisoned && status !== internals.POSTGRES_MAIN_LONGJMP) {
        poisoned = true
        reply({ type: "poisoned", message: describe(e) })
      }
      throw e
    }
  }
  const stream = pglite.execProtocolRawStream.bind(pglite)
  pglite.execProtocolRawStream = async (message, options) => {
    if (poisoned) throw new Error("the embedded database is being restarted")
    await stream(message, { ...options, onRawData: (data) => (poisoned ? undefined : options.onRawData(data)) })
    if (poisoned) throw new Error("the embedded database is being restarted")
  }
  // pglite-socket asks this when a client leaves (and would then run ROLLBACK on the broken backend).
  const inTransaction = pglite.isInTransaction.bind(pglite)
  pglite.isInTransaction = () => !poisoned && inTransaction()
}

const compile = async (file: string) => {
  const dist = path.dirname(fileURLToPath(import.meta.resolve("@electric-sql/pglite")))
  return WebAssembly.compile(await Bun.file(path.join(dist, file)).arrayBuffer())
}

let preparing: Promise<WebAssembly.Module> | undefined

const start = async (req: StartRequest) => {
  // initdb runs only for a database that does not exist yet and comes from no snapshot.
  const initdb = req.snapshot === undefined && (req.dataDir === undefined || !fs.existsSync(path.join(req.dataDir, "PG_VERSION")))
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
    req.pgliteWasmModule ?? preparing ?? compile("pglite.wasm"),
    req.initdbWasmModule ?? (initdb ? compile("initdb.wasm") : undefined)
  ])
  db = await PGlite.create({
    ...(req.dataDir !== undefined ? { dataDir: req.dataDir } : {}),
    ...(req.snapshot !== undefined ? { loadDataDir: req.snapshot instanceof Blob ? req.snapshot : new Blob([req.snapshot]) } : {}),
    pgliteWasmModule,
    ...(initdbWasmModule !== undefined ? { initdbWasmModule } : {})
  })
  const version = (await db.query<{ v: string }>("show server_version")).rows[0]?.v ?? "unknown"
  guard(db)
  // A worker that replaces a stuck one listens on the same path (the clients' pool reconnects there).
  fs.rmSync(req.socketPath, { force: true })
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
    case "prepare":
      preparing ??= compile("pglite.wasm")
      // A failure shows in the start request, which compiles again.
      preparing.catch(() => (preparing = undefined))
      return
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
    case "ping":
      return reply({ type: "pong" })
    case "stop":
      stop().then(
        () => reply({ type: "stopped" }),
        (e: unknown) => reply({ type: "failed", message: describe(e) })
      )
      return
  }
}
