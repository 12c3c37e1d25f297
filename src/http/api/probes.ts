/**
 * Operator endpoints beside /healthz: `/readyz` (200 when start-up is done, the database answers and
 * every migration is applied, else 503; 503 while the server drains or the embedded database's disk is full) and `/metrics` (Prometheus text,
 * for loopback clients or the metrics.read permission).
 */
import { Config, Effect, Either } from "effect"
import { statfsSync } from "node:fs"
import { Elysia } from "elysia"
import ipaddr from "ipaddr.js"
import { pendingMigrations } from "../../db/migrations.ts"
import { Metrics } from "../../telemetry/Metrics.ts"
import { JobStore } from "../../worker/JobStore.ts"
import { authorize } from "../auth.ts"
import { clientAddress } from "../edge.ts"
import { noteUser } from "../observe.ts"
import type { ApiError } from "../respond.ts"
import type { AppRuntime, AppServices } from "../route.ts"

type PublicRoute = (
  handler: (request: Request) => Effect.Effect<Response, ApiError, AppServices>
) => (ctx: { readonly request: Request }) => Promise<Response>

const text = (body: string, status = 200, type = "text/plain; charset=utf-8") =>
  new Response(body, { status, headers: { "content-type": type, "cache-control": "no-store" } })

/**
 * A client on this host talking to us directly: its socket address is loopback and no proxy header is
 * present (a reverse proxy on the same host would otherwise make every client "loopback").
 */
const isLoopbackClient = (request: Request): boolean => {
  if (request.headers.has("forwarded") || request.headers.has("x-forwarded-for") || request.headers.has("x-real-ip")) return false
  const address = clientAddress(request)
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.parse(address)
  const ip = parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed
  return ip.range() === "loopback"
}

/** Ready: the database answered within 3 s and has every migration file applied. */
const readiness = Effect.either(Effect.timeout(pendingMigrations(), "3 seconds"))

/** Below this much room on the embedded database's file system, its writes are about to fail: not ready, "disk full". */
const DISK_FULL_BYTES = 4 * 1024 * 1024

/**
 * The bytes free on the embedded database's file system (`KINTSUGI_DATA_DIR`) when that is below
 * DISK_FULL_BYTES; undefined otherwise, with a PostgreSQL server (DATABASE_URL), or when it cannot be read.
 */
const embeddedDiskFull = Effect.gen(function* () {
  const url = yield* Config.string("DATABASE_URL").pipe(Config.withDefault(""))
  if (url.trim() !== "") return undefined
  const dataDir = yield* Config.string("KINTSUGI_DATA_DIR").pipe(Config.withDefault(".kintsugi"))
  const free = yield* Effect.try(() => {
    const s = statfsSync(dataDir)
    return s.bavail * s.bsize
  })
  return free < DISK_FULL_BYTES ? free : undefined
}).pipe(Effect.orElseSucceed(() => undefined))

/** What the serving process tells /readyz about itself; every member may be left out. */
export interface ServeState {
  /** What start-up still does (503 `starting`), or undefined once done. */
  readonly starting?: () => string | undefined
  /** True once the server drains for shutdown (503 `draining`). */
  readonly draining?: () => boolean
  /** Facts about the serving process that every /readyz body carries beside `status`. */
  readonly about?: () => Readonly<Record<string, string>>
}

type ReadyStatus = "ready" | "starting" | "draining" | "unavailable"

/** /readyz's body, built here only: `status`, a `detail` when not ready, and the process's `about` facts. */
const readyz = (state: ServeState, status: ReadyStatus, detail?: string): Response =>
  new Response(JSON.stringify({ status, ...(detail === undefined ? {} : { detail }), ...state.about?.() }), {
    status: status === "ready" ? 200 : 503,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" }
  })

export const probeRoutes = (runtime: AppRuntime, publicRoute: PublicRoute, state: ServeState) =>
  new Elysia({ name: "probes" })
    .get("/readyz", async () => {
      if (state.draining?.() === true)
        return readyz(state, "draining", "the server is shutting down: it claims no job and lets running jobs finish")
      const underway = state.starting?.()
      if (underway !== undefined) return readyz(state, "starting", underway)
      // A runtime being disposed (shutdown) is not ready either.
      const full = await runtime.runPromise(embeddedDiskFull).catch(() => undefined)
      if (full !== undefined)
        return readyz(state, "unavailable", `disk full: the embedded database's file system has ${Math.floor(full / 1024)} KB free`)
      const result = await runtime.runPromise(readiness).catch(() => undefined)
      if (result === undefined || Either.isLeft(result)) return readyz(state, "unavailable", "database unreachable")
      if (result.right.length > 0) return readyz(state, "unavailable", `${result.right.length} migration(s) not applied`)
      return readyz(state, "ready")
    })
    .get(
      "/metrics",
      publicRoute((request) =>
        Effect.gen(function* () {
          if (!isLoopbackClient(request)) noteUser(request, (yield* authorize(request, "metrics.read")).username)
          const jobs = yield* (yield* JobStore).countByStatus
          return text(yield* (yield* Metrics).render(jobs), 200, "text/plain; version=0.0.4; charset=utf-8")
        })
      )
    )
