/** The HTTP application: health, session, the Agent Builder API and portal. One ManagedRuntime runs every handler. */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Elysia } from "elysia"
import { agentRoutes } from "./api/agents.ts"
import { jobRoutes } from "./api/jobs.ts"
import { providerRoutes } from "./api/providers.ts"
import { sessionRoutes } from "./api/session.ts"
import { tokenRoutes } from "./api/tokens.ts"
import { portalRoutes } from "./portal/portalRoutes.ts"
import { json } from "./respond.ts"
import { publicRoutes, routes, type AppRuntime } from "./route.ts"

export interface AppOptions {
  readonly runtime: AppRuntime
  /** Answers whether the database is reachable (for /healthz). */
  readonly healthy: () => Promise<boolean>
  readonly log: (line: string) => void
}

export const makeApp = (options: AppOptions) => {
  const route = routes(options.runtime, options.log)
  const publicRoute = publicRoutes(options.runtime, options.log)
  return new Elysia()
    .get("/healthz", async () =>
      (await options.healthy()) ? new Response("ok\n", { headers: { "content-type": "text/plain" } }) : new Response("database unreachable\n", { status: 503 })
    )
    .use(sessionRoutes(route, publicRoute))
    .use(agentRoutes(route))
    .use(providerRoutes(route))
    .use(jobRoutes(route))
    .use(tokenRoutes(route))
    .all("/api/*", () => json({ error: { code: "not-found", message: "no such endpoint" } }, 404))
    .use(portalRoutes({ runtime: options.runtime, log: options.log }))
}

/** `SELECT 1` through the pool. */
export const databaseHealth = Effect.flatMap(SqlClient, (sql) => sql`SELECT 1`).pipe(
  Effect.as(true),
  Effect.catchAll(() => Effect.succeed(false))
)
