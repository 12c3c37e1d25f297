/**
 * `kintsugi serve`'s start-up line once it is ready: the URL, its role, the Host values it answers
 * (KINTSUGI_ALLOWED_HOSTS in effect), where the admin password came from, and a warning when other
 * hosts' requests would all get 421.
 */
import { Config, Effect, Option } from "effect"
import ipaddr from "ipaddr.js"
import { LogFields } from "../telemetry/Logging.ts"
import { allowedHostsConfig } from "./edge.ts"
import type { AdminPassword } from "./serve.ts"
import type { ServeRole } from "./serveRole.ts"

/** What the start-up line says. */
export interface ServingLine {
  readonly message: string
  readonly url: string
  readonly allowedHosts: string
  readonly warning: string | undefined
}

/**
 * The line for a server bound to `host`:`port`: with HOST on every interface (0.0.0.0, ::) and
 * KINTSUGI_ALLOWED_HOSTS unset, a warning that requests by a LAN address or name get 421.
 */
export const describeServing = (host: string, port: number, allowedHosts: ReadonlyArray<string>, allowedHostsSet: boolean): ServingLine => {
  const bare = host.replace(/^\[(.*)\]$/, "$1")
  const url = `http://${bare.includes(":") ? `[${bare}]` : bare}:${port}/`
  const everyInterface = ipaddr.isValid(bare) && ipaddr.parse(bare).range() === "unspecified"
  const warning =
    everyInterface && !allowedHostsSet
      ? `HOST ${host} listens on every interface but KINTSUGI_ALLOWED_HOSTS is unset: requests by a LAN address or name get 421 until KINTSUGI_ALLOWED_HOSTS lists them (e.g. KINTSUGI_ALLOWED_HOSTS=kintsugi.example.com,10.0.0.5)`
      : undefined
  return { message: `serving on ${url}`, url, allowedHosts: allowedHosts.join(","), warning }
}

/** Where the admin password of this start came from, in words; `undefined` = the first admin could not be made. */
export const describeAdminPassword = (source: AdminPassword | undefined): string => {
  switch (source) {
    case "environment":
      return "KINTSUGI_ADMIN_PASSWORD (the first admin, admin, was created with it)"
    case "generated":
      return "generated for admin and printed above, once"
    case "existing":
      return "set before (users exist; KINTSUGI_ADMIN_PASSWORD only applies to an empty database; change yours at /account/password)"
    case undefined:
      return "none: the first admin could not be created (see above)"
  }
}

/**
 * The one line for a person reading the start: URL, the role when it is not `all`, allowed hosts, and
 * where the admin password came from (a worker process, which signs nobody in, leaves that out).
 */
export const readyLine = (line: ServingLine, admin: AdminPassword | undefined, role: ServeRole = "all"): string =>
  role === "worker"
    ? `serving on ${line.url} (role worker: /healthz, /readyz and /metrics only; allowed hosts: ${line.allowedHosts})`
    : `serving on ${line.url} (${role === "all" ? "" : `role ${role}; `}allowed hosts: ${line.allowedHosts}); admin password: ${describeAdminPassword(admin)}`

/**
 * Logs `describeServing` for the configured KINTSUGI_ALLOWED_HOSTS: one line, at warning level when it
 * warns; with `admin`, its field `adminPassword` says where the password came from, with `role` its
 * field `role` the process's role. Returns the line.
 */
export const logServing = (host: string, port: number, admin?: AdminPassword | "failed", role?: ServeRole): Effect.Effect<ServingLine> =>
  Effect.gen(function* () {
    const configured = yield* Config.option(Config.string("KINTSUGI_ALLOWED_HOSTS")).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    const line = describeServing(
      host,
      port,
      yield* allowedHostsConfig,
      Option.exists(configured, (v) => v.trim() !== "")
    )
    const fields = new LogFields({
      url: line.url,
      allowedHosts: line.allowedHosts,
      ...(admin === undefined ? {} : { adminPassword: admin }),
      ...(role === undefined ? {} : { role })
    })
    yield* line.warning === undefined ? Effect.logInfo(line.message, fields) : Effect.logWarning(`${line.message}; ${line.warning}`, fields)
    return line
  })
