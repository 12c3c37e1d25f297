/**
 * Operator endpoints beside /healthz: `/readyz` (200 when start-up is done, the database answers and
 * every migration is applied, else 503) and `/metrics` (Prometheus text, for loopback clients or the metrics.read permission).
 */
import { Effect, Either } from "effect"
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

type PublicRoute = (handler: (request: Request) => Effect.Effect<Response, ApiError, AppServices>) => (ctx: { readonly request: Request }) => Promise<Response>

const text = (body: string, status = 200, type = "text/plain; charset=utf-8") =>
  new Response(body, { status, headers: { "content-type": type, "cache-control": "no-store" } })

/**
 * A client on this host talking to us directly: its socket address is loopback and no proxy header is
 * present (a reverse proxy on the same host would otherwise make every client "loopback").
 */
export const isLoopbackClient = (request: Request): boolean => {
  if (request.headers.has("forwarded") || request.headers.has("x-forwarded-for") || request.headers.has("x-real-ip")) return false
  const address = clientAddress(request)
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.parse(address)
  const ip = parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed
  return ip.range() === "loopback"
}

/** Ready: the database answered within 3 s and has every migration file applied. */
const readiness = Effect.either(Effect.timeout(pendingMigrations(), "3 seconds"))

export const probeRoutes = (runtime: AppRuntime, publicRoute: PublicRoute, starting: () => string | undefined) =>
  new Elysia({ name: "probes" })
    .get("/readyz", async () => {
      const underway = starting()
      if (underway !== undefined) return text(`starting: ${underway}\n`, 503)
      // A runtime being disposed (shutdown) is not ready either.
      const result = await runtime.runPromise(readiness).catch(() => undefined)
      if (result === undefined || Either.isLeft(result)) return text("database unreachable\n", 503)
      if (result.right.length > 0) return text(`${result.right.length} migration(s) not applied\n`, 503)
      return text("ready\n")
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
