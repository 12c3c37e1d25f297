/**
 * The roles of `kintsugi serve --role`: what one process of a deployment does. Processes of every role
 * share one PostgreSQL; the embedded database admits one process, so only `all` runs on it.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

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

/** A role other than `all` on the embedded database, which admits one process. */
export class RoleNeedsServer extends Schema.TaggedError<RoleNeedsServer>()("RoleNeedsServer", { role: Schema.Literal(...SERVE_ROLES) }) {
  override get message(): string {
    return `--role ${this.role} needs a PostgreSQL server (DATABASE_URL): the embedded database admits one process, so it runs only --role all`
  }
}

/** Succeeds when `role` can run on the configured database (a server at `databaseUrl`, else the embedded one). */
export const checkRole = (role: ServeRole, databaseUrl: string | undefined): Effect.Effect<void, RoleNeedsServer> =>
  role === "all" || databaseUrl !== undefined ? Effect.void : Effect.fail(new RoleNeedsServer({ role }))
