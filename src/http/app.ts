/**
 * The HTTP application: health, readiness and metrics, session, the Agent Builder API and portal behind
 * the edge checks (edge.ts), every request observed (observe.ts). One ManagedRuntime runs every handler.
 * A worker process (`kintsugi serve --role worker`) serves the probes and metrics only.
 */
import { Effect } from "effect"
import { Elysia } from "elysia"
import { makeSignInThrottle, type SignInThrottle } from "../access/SignInThrottle.ts"
import { agentRoutes } from "./api/agents.ts"
import { evalRoutes } from "./api/evals.ts"
import { jobRoutes } from "./api/jobs.ts"
import { memoryRoutes } from "./api/memory.ts"
import { transcriptRoutes } from "./api/transcripts.ts"
import { exportTestRoutes } from "./api/exportTest.ts"
import { providerRoutes } from "./api/providers.ts"
import { sessionRoutes } from "./api/session.ts"
import { tokenRoutes } from "./api/tokens.ts"
import { webRoutes } from "./api/web.ts"
import { portalRoutes } from "./portal/portalRoutes.ts"
import { probeRoutes } from "./api/probes.ts"
import { allowedHostsConfig, withEdge } from "./edge.ts"
import { routeMatcher, withObservation } from "./observe.ts"
import { json } from "./respond.ts"
import { publicRoutes, routes, type AppRuntime } from "./route.ts"
import type { ServeRole } from "./serveRole.ts"

export interface AppOptions {
  readonly runtime: AppRuntime
  /** `worker`: /healthz, /readyz and /metrics answer, everything else is 404. Default `all` (so is `api`). */
  readonly role?: ServeRole
  /**
   * What start-up still does while the server already answers (`kintsugi serve`: creating the first
   * admin), or undefined once done; /readyz is 503 until then. Default: nothing.
   */
  readonly starting?: () => string | undefined
  /** True once `kintsugi serve` drains for shutdown; /readyz is 503 `draining` from then on. Default: never. */
  readonly draining?: () => boolean
  /** Facts about the serving process that /readyz's body carries beside its status. Default: none. */
  readonly about?: () => Readonly<Record<string, string>>
  /** Where handler defects go ("request failed: …"); default: the runtime's logger, at error level. */
  readonly log?: (line: string) => void
  /** Host header values answered; default `allowedHostsConfig` in the runtime (KINTSUGI_ALLOWED_HOSTS, HOST). */
  readonly allowedHosts?: ReadonlyArray<string>
  /** Default: a fresh throttle with the default budgets. */
  readonly signInThrottle?: SignInThrottle["Type"]
  /** How often a silent job's event stream (API and portal) sends a comment; default 5 s, under Bun's idle timeout. */
  readonly heartbeatMs?: number
}

/**
 * The app: `handle(request, clientAddress?)` runs the edge checks, then the routes (`routes` lists
 * them). `kintsugi serve` passes the socket address; tests in-process may leave it out.
 */
export const makeApp = (options: AppOptions) => {
  const log = options.log ?? ((line: string) => void options.runtime.runFork(Effect.logError(line)))
  const inner = makeRoutes({ ...options, log })
  const edge = withEdge(inner, { allowedHosts: options.allowedHosts ?? options.runtime.runSync(allowedHostsConfig) })
  // Outside the edge checks: a refused Host or URL is logged and counted too.
  const handle = withObservation(
    edge,
    options.runtime,
    routeMatcher(() => inner.routes)
  )
  return {
    handle,
    get routes() {
      return inner.routes
    }
  }
}

const WORKER_ONLY = {
  error: { code: "not-found", message: "this process runs jobs only (--role worker): it serves /healthz, /readyz and /metrics" }
}

const makeRoutes = (options: AppOptions & { readonly log: (line: string) => void }) => {
  const publicRoute = publicRoutes(options.runtime, options.log)
  const probes = new Elysia()
    // Liveness from the process alone: a database that hangs (a full disk) must not hang the probe; /readyz asks it.
    .get("/healthz", () => new Response("ok\n", { headers: { "content-type": "text/plain" } }))
    .use(probeRoutes(options.runtime, publicRoute, options))
  if (options.role === "worker") return probes.all("*", () => json(WORKER_ONLY, 404))
  const route = routes(options.runtime, options.log)
  const throttle = options.signInThrottle ?? makeSignInThrottle()
  return probes
    .use(sessionRoutes(route, publicRoute, throttle))
    .use(agentRoutes(route))
    .use(evalRoutes(route))
    .use(providerRoutes(route))
    .use(jobRoutes(route, options.heartbeatMs))
    .use(tokenRoutes(route))
    .use(webRoutes(route))
    .use(memoryRoutes(route))
    .use(transcriptRoutes(route))
    .use(exportTestRoutes(route))
    .all("/api/*", () => json({ error: { code: "not-found", message: "no such endpoint" } }, 404))
    .use(
      portalRoutes({
        runtime: options.runtime,
        log: options.log,
        signInThrottle: throttle,
        ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs })
      })
    )
}
