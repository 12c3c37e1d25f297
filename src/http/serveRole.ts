/**
 * The roles of `kintsugi serve --role`: what one process of a deployment does. Processes of every role
 * share one PostgreSQL; the embedded database admits one process, so only `all` runs on it.
 */

export const SERVE_ROLES = ["all", "api", "worker"] as const
export type ServeRole = (typeof SERVE_ROLES)[number]

/** What a process of `role` does, in words (the start-up lines). */
export const describeRole = (role: ServeRole): string => {
  switch (role) {
    case "all":
      return "role all: the API and the portal, and the worker loops (KINTSUGI_WORKERS)"
    case "api":
      return "role api: the API and the portal; jobs run in worker processes"
    case "worker":
      return "role worker: the worker loops (KINTSUGI_WORKERS); HTTP serves /healthz, /readyz and /metrics only"
  }
}

/** Why `role` cannot run on the configured database, or undefined when it can. */
export const roleRefusal = (role: ServeRole, databaseUrl: string | undefined): string | undefined =>
  role === "all" || databaseUrl !== undefined
    ? undefined
    : `--role ${role} needs a PostgreSQL server (DATABASE_URL): the embedded database admits one process, so it runs only --role all`
