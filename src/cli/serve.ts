/**
 * `kintsugi serve`: migrates the database, makes sure an admin exists, runs the worker loops and serves
 * the API and the portal on --host/--port (HOST/PORT); `--role api` leaves the worker loops out, `--role
 * worker` serves the probes only (src/http/serveRole.ts). A database that cannot be reached is one clear
 * line and exit 1. SIGTERM/SIGINT drain the worker (src/worker/Drain.ts) while the server still answers, then stop it.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SERVE_ROLES, type ServeRole } from "../http/serveRole.ts"
import { CliExit, setInterruptedExitCode } from "./exit.ts"

/** Configuration that reads the secrets from memory first, then the (secret-free) environment. */
const secretsConfigProvider = (values: ReadonlyMap<string, string>): ConfigProvider.ConfigProvider =>
  ConfigProvider.orElse(ConfigProvider.fromMap(new Map(values)), () => ConfigProvider.fromEnv())

const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? ""

/**
 * Serves until SIGTERM/SIGINT, which drain the worker (/readyz 503 `draining`, no job claimed, running
 * jobs given KINTSUGI_DRAIN_SEC), then stop the server and the runtime and exit 0. Another signal
 * during the drain ends the running jobs at once.
 */
export const serve = (options: { readonly port: number; readonly host: string; readonly role?: ServeRole }) =>
  Effect.gen(function* () {
    const log = (line: string) => void process.stderr.write(`${line}\n`)
    const role = options.role ?? "all"
    // Loaded here, not at the top: `--help` must open nothing and stay fast.
    const { secureProcessSecrets } = yield* Effect.promise(() => import("./processSecrets.ts"))
    // Before anything else: no secret may stay readable in /proc/<pid>/environ while jobs run.
    const secrets = secureProcessSecrets()
    if (secrets.environment !== "clean") {
      log(`kintsugi: warning: secrets could not be removed from the process environment (${secrets.environment.notClean})`)
    }
    if (!secrets.nonDumpable) log("kintsugi: warning: could not make the process non-dumpable")
    const [
      { AppLive, DatabaseLive, makeAppLive, makeRuntime },
      Layer,
      http,
      { makeApp },
      { makeSandbox, sandboxConfig, sandboxName },
      { explainStartFailure },
      { Drain },
      { logServing, readyLine },
      startup
    ] = yield* Effect.promise(() =>
      Promise.all([
        import("../main.ts"),
        import("effect/Layer"),
        import("../http/serve.ts"),
        import("../http/app.ts"),
        import("../tools/Sandbox.ts"),
        import("./explain.ts"),
        import("../worker/Drain.ts"),
        import("../http/servingLine.ts"),
        import("../http/startupLines.ts")
      ])
    )
    // The role, and what the slow part of a first start is doing, said before it starts; a role the
    // database cannot hold (the embedded one admits one process) stops here.
    const started = yield* startup.databaseStartLine(role).pipe(
      Effect.withConfigProvider(secretsConfigProvider(secrets.values)),
      Effect.catchTag("RoleNeedsServer", (refusal) => {
        log(`kintsugi: cannot start: ${refusal.message}`)
        return new CliExit({ code: 2 })
      })
    )
    log(`kintsugi: ${started}`)
    // An API process: the services without the worker loops, their drain or job children (AppLive has them).
    const layer = role === "api" ? makeAppLive(DatabaseLive, { log }) : AppLive
    const began = yield* Clock.currentTimeMillis
    // The platform's runMain takes the first SIGTERM/SIGINT (it ends this scope, which drains) and then
    // stops listening; this listener stays to the end, so a later signal cuts the drain short instead
    // of killing the process.
    let signals = 0
    let draining = false
    let cutShort: () => void = () => undefined
    const onSignal = () => {
      signals += 1
      if (signals > 1 || draining) cutShort()
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => process.on("SIGTERM", onSignal).on("SIGINT", onSignal)),
      () => Effect.sync(() => process.off("SIGTERM", onSignal).off("SIGINT", onSignal))
    )
    const rt = yield* Effect.acquireRelease(
      // The one composition root, reading its configuration from what secureProcessSecrets kept.
      Effect.tryPromise(() => makeRuntime(Layer.provide(layer, Layer.setConfigProvider(secretsConfigProvider(secrets.values))))).pipe(
        Effect.catchAll((e) => {
          log(`kintsugi: cannot start: ${explainStartFailure(firstLine(e.error))}`)
          return new CliExit({ code: 1 })
        })
      ),
      (rt) => Effect.promise(() => rt.dispose())
    )
    log(
      `kintsugi: database ready (${(((yield* Clock.currentTimeMillis) - began) / 1000).toFixed(1)} s); ${rt.runSync(startup.bundleLine(role))}`
    )
    // Handler defects go to the runtime's logger (KINTSUGI_LOG_FORMAT), like the access log and job lines.
    // The server answers (/healthz) as soon as the database does; what start-up still does (on a new
    // database, hashing the first admin's password) keeps /readyz at 503 until it is done.
    // A worker process signs nobody in: the API processes create the first admin.
    let starting: string | undefined = role === "worker" ? undefined : "creating the first admin"
    let sandbox = "not probed yet"
    const app = makeApp({ runtime: rt, role, starting: () => starting, draining: () => draining, about: () => ({ role, sandbox }) })
    const server = yield* Effect.acquireRelease(
      Effect.sync(() => http.listen(app, { port: options.port, hostname: options.host })),
      (server) => Effect.promise(() => server.stop())
    )
    // Released before the server stops: the drain runs while /readyz still answers (503 `draining`).
    const drain = rt.runSync(Effect.serviceOption(Drain))
    if (Option.isSome(drain)) {
      let drained = false
      cutShort = () => void (drained || rt.runFork(drain.value.cutShort))
      yield* Effect.addFinalizer(() =>
        Effect.promise(async () => {
          draining = true
          await rt.runPromise(drain.value.drain).catch(() => undefined)
          drained = true
        })
      )
    }
    const admin = role === "worker" ? undefined : yield* Effect.promise(() => rt.runPromiseExit(http.ensureAdmin))
    if (admin?._tag === "Failure")
      rt.runSync(Effect.logError("could not create the first admin (see KINTSUGI_ADMIN_PASSWORD: at least 12 characters)"))
    const password = admin?._tag === "Success" ? admin.value : undefined
    starting = undefined
    const sandboxInForce = makeSandbox(rt.runSync(sandboxConfig))
    rt.runSync(Effect.logInfo(`process sandbox: ${http.describeSandbox(sandboxInForce)}`))
    sandbox = sandboxName(rt.runSync(sandboxInForce.status))
    const line = rt.runSync(
      logServing(options.host, server.port ?? options.port, role === "worker" ? undefined : (password ?? "failed"), role)
    )
    process.stdout.write(`kintsugi: ${readyLine({ ...line, url: `http://${server.hostname}:${server.port}/` }, password, role)}\n`)
    setInterruptedExitCode(0)
    return yield* Effect.never
  }).pipe(Effect.scoped)

/** PORT and HOST, for the bare `kintsugi` (which serves, as it always did). */
export const serveConfig = Config.all({
  port: Config.integer("PORT").pipe(Config.withDefault(7777)),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1"))
})

export const serveCommand = Command.make(
  "serve",
  {
    port: Options.integer("port").pipe(
      Options.withAlias("p"),
      Options.withFallbackConfig(Config.integer("PORT")),
      Options.withDefault(7777),
      Options.withDescription("the port (else PORT; default 7777)")
    ),
    host: Options.text("host").pipe(
      Options.withAlias("H"),
      Options.withFallbackConfig(Config.string("HOST")),
      Options.withDefault("127.0.0.1"),
      Options.withDescription("the address to bind (else HOST; default 127.0.0.1)")
    ),
    role: Options.choice("role", SERVE_ROLES).pipe(
      Options.withDefault("all" as const),
      Options.withDescription(
        "all: the API, the portal and the worker loops; api: the API and the portal, no jobs; worker: jobs, with /healthz, /readyz and /metrics only (api and worker need DATABASE_URL)"
      )
    )
  },
  serve
).pipe(
  Command.withDescription(
    "Serve the portal and the API, and run jobs (the worker loops, KINTSUGI_WORKERS); --role api or worker splits them over processes on one PostgreSQL."
  )
)
