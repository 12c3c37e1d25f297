/**
 * The serving parts of `kintsugi serve` (src/cli/serve.ts wires them): the first admin, Bun's server
 * over the app, the start-up line about the process sandbox.
 */
import { Config, Effect, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { Access, PERMISSIONS } from "../access/Access.ts"
import type { SandboxShape } from "../tools/Sandbox.ts"
import type { makeApp } from "./app.ts"
import { MAX_BODY_BYTES } from "./body.ts"

/** Where the admin password of this start comes from: the environment, generated now, or set before (users exist). */
export type AdminPassword = "environment" | "generated" | "existing"

/** On an empty database: the first admin, with KINTSUGI_ADMIN_PASSWORD or a generated password printed once; says which it was. */
export const ensureAdmin = Effect.gen(function* () {
  const access = yield* Access
  if (!(yield* access.isEmpty)) return "existing" as const
  const configured = yield* Config.option(Config.redacted("KINTSUGI_ADMIN_PASSWORD")).pipe(Effect.orElseSucceed(() => Option.none()))
  const given = Option.getOrUndefined(Option.map(configured, Redacted.value))
  const password = given !== undefined && given !== "" ? given : randomBytes(18).toString("base64url")
  yield* access.addUser("admin", password, PERMISSIONS)
  process.stdout.write(
    given !== undefined && given !== ""
      ? "kintsugi: created user admin (password from KINTSUGI_ADMIN_PASSWORD)\n"
      : `kintsugi: created user admin with password ${password}\n          (shown once; change it after signing in, at /account/password, or with: kintsugi users password admin)\n`
  )
  return given !== undefined && given !== "" ? ("environment" as const) : ("generated" as const)
})

/**
 * Serves `app` with Bun: bodies past the cap are refused by Bun itself too, a backstop behind the app's
 * own capped reader (1 MiB above it, so that the reader, which names the limit, answers first); each
 * request carries the client's socket address to the app. `idleTimeout` (seconds) is Bun's, 10 by
 * default. Event streams (job events, already authenticated) are exempt from it: Bun counts a streamed
 * response's writes as idle time, so their heartbeat (eventStream.ts) alone would not keep them open;
 * the heartbeat is for proxies in between and to notice a client that went away.
 */
export const listen = (
  app: ReturnType<typeof makeApp>,
  options: { readonly hostname: string; readonly port: number; readonly idleTimeout?: number }
) =>
  Bun.serve({
    hostname: options.hostname,
    port: options.port,
    maxRequestBodySize: MAX_BODY_BYTES + 1024 * 1024,
    ...(options.idleTimeout === undefined ? {} : { idleTimeout: options.idleTimeout }),
    fetch: async (request, server) => {
      const response = await app.handle(request, server.requestIP(request)?.address)
      if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) server.timeout(request, 0)
      return response
    }
  })

/** One line for the start-up log: how shell and git will run in this installation's jobs. */
export const describeSandbox = (sandbox: SandboxShape): string => {
  const status = Effect.runSync(sandbox.status)
  const refusal = Effect.runSync(sandbox.refusal)
  switch (status._tag) {
    case "Bwrap":
      return `bubblewrap (${status.bwrap})`
    case "Landlock":
      return `landlock (ABI ${status.abi}: user namespaces are not available here, so shell and git run under Landlock, no_new_privs and a seccomp filter)`
    case "Off":
      return refusal === undefined ? "off: shell and git run unconfined" : `off, and jobs granting shell or git are refused: ${refusal}`
    case "Unavailable":
      return `unavailable, jobs granting shell or git are refused: ${status.reason}`
  }
}
