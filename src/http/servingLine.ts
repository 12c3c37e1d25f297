/**
 * `kintsugi serve`'s start-up line once it is ready: the URL, the Host values it answers
 * (KINTSUGI_ALLOWED_HOSTS in effect), and a warning when other hosts' requests would all get 421.
 */
import { Config, Effect, Option } from "effect"
import ipaddr from "ipaddr.js"
import { LogFields } from "../telemetry/Logging.ts"
import { allowedHostsConfig } from "./edge.ts"

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

/** Logs `describeServing` for the configured KINTSUGI_ALLOWED_HOSTS: one line, at warning level when it warns. */
export const logServing = (host: string, port: number): Effect.Effect<void> =>
  Effect.gen(function* () {
    const configured = yield* Config.option(Config.string("KINTSUGI_ALLOWED_HOSTS")).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    const line = describeServing(host, port, yield* allowedHostsConfig, Option.exists(configured, (v) => v.trim() !== ""))
    const fields = new LogFields({ url: line.url, allowedHosts: line.allowedHosts })
    yield* line.warning === undefined ? Effect.logInfo(line.message, fields) : Effect.logWarning(`${line.message}; ${line.warning}`, fields)
  })
