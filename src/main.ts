/**
 * The composition root: every service layer of the server wired in one place, over a Db layer.
 * `kintsugi serve` and the CLI use it with the configured database; tests with a test database.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { type ConfigProvider, Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { AccessLive } from "./access/Access.ts"
import { AgentStoreLive } from "./agents/AgentStore.ts"
import { SkillStoreLive } from "./agents/SkillStore.ts"
import type { Db, DbError } from "./db/Db.ts"
import type { AppRuntime, AppServices } from "./http/route.ts"
import { BindingsLive } from "./providers/Bindings.ts"
import { McpServersLive } from "./providers/McpServers.ts"
import { ProviderStoreLive } from "./providers/ProviderStore.ts"
import { SecretBoxLive, type SecretBox, type SecretKeyError } from "./providers/SecretBox.ts"
import { LoggingLive } from "./telemetry/Logging.ts"
import { MetricsLive } from "./telemetry/Metrics.ts"
import { TracingLive } from "./telemetry/Tracing.ts"
import { JobBusLive } from "./worker/JobBus.ts"
import { JobRootsLive, type JobRoots, type JobRootsInvalid } from "./worker/JobRoots.ts"
import { JobStoreLive } from "./worker/JobStore.ts"
import { ProjectsLive } from "./worker/Projects.ts"
import { makeMemoryHandlers } from "./worker/memory/memoryService.ts"
import { MemorySweepLive } from "./worker/memory/MemorySweep.ts"
import { MemoryStoreLive, type MemoryStore } from "./worker/memory/MemoryStore.ts"
import { ServiceHandlers, ServicesEndpointLive } from "./worker/Services.ts"
import { ServiceTokensLive } from "./worker/ServiceTokens.ts"
import { WorkerLive } from "./worker/Worker.ts"
import { type ProjectWeb, ProjectWebLive } from "./web/ProjectWeb.ts"
import { type WebSearch, WebSearchLive } from "./web/WebSearch.ts"
import { makeWebHandlers } from "./web/webServices.ts"

/** What a service handler layer may use: the database, the memory store and the web services. */
export type ServiceHandlerDeps = SqlClient | MemoryStore | ProjectWeb | WebSearch

/** The installation's service handlers: project memory's, then web search and fetch. */
export const InstallationServiceHandlers: Layer.Layer<ServiceHandlers, never, ServiceHandlerDeps> = Layer.effect(
  ServiceHandlers,
  Effect.map(Effect.all([makeMemoryHandlers, makeWebHandlers()]), (sets) => sets.flat())
)

export type AppLayerError = DbError | SecretKeyError | JobRootsInvalid

/**
 * The application services over a database; `secrets` defaults to the configured key (KINTSUGI_SECRET_KEY
 * or the key file), `jobRoots` to the configured job roots (KINTSUGI_JOB_ROOTS).
 */
export const appLayer = (
  db: Layer.Layer<Db, DbError>,
  secrets: Layer.Layer<SecretBox, SecretKeyError> = SecretBoxLive,
  jobRoots: Layer.Layer<JobRoots, JobRootsInvalid, SqlClient> = JobRootsLive,
  serviceHandlers: Layer.Layer<ServiceHandlers, never, ServiceHandlerDeps> = InstallationServiceHandlers
): Layer.Layer<AppServices | Db, AppLayerError> => {
  const agents = Layer.provideMerge(AgentStoreLive, SkillStoreLive)
  const providers = Layer.mergeAll(Layer.provideMerge(BindingsLive, ProviderStoreLive), McpServersLive, WebSearchLive).pipe(Layer.provide(secrets))
  const projects = Layer.provideMerge(ProjectWebLive, Layer.provideMerge(ProjectsLive, jobRoots))
  // The services channel: tokens, the handlers (memory, web) and the loopback endpoint job children call.
  const handlers = Layer.provide(serviceHandlers, Layer.mergeAll(projects, providers, MemoryStoreLive))
  const services = Layer.provideMerge(ServicesEndpointLive, Layer.merge(ServiceTokensLive, handlers)).pipe(Layer.provideMerge(MemoryStoreLive))
  return Layer.mergeAll(agents, providers, AccessLive, JobStoreLive, JobBusLive, MetricsLive, projects, services).pipe(Layer.provideMerge(db))
}

/**
 * A runtime for the HTTP app. Its layer is built eagerly: a database that cannot be reached fails
 * here, once, with the error's message, rather than inside the first request.
 */
export const makeAppRuntime = async (
  db: Layer.Layer<Db, DbError>,
  options: {
    readonly secrets?: Layer.Layer<SecretBox, SecretKeyError>
    readonly jobRoots?: Layer.Layer<JobRoots, JobRootsInvalid, SqlClient>
    /** The service handlers behind the services channel (default: the installation's memory and web services). */
    readonly serviceHandlers?: Layer.Layer<ServiceHandlers, never, ServiceHandlerDeps>
    /** Runs the worker loops (KINTSUGI_WORKERS) in this runtime; `log`, when given, is the default log sink. */
    readonly worker?: { readonly log?: (line: string) => void }
    /**
     * Where the runtime's log lines go, in the KINTSUGI_LOG_FORMAT format (access log, job lifecycle,
     * diagnostics); default: the worker's `log`, else nowhere (a library or test runtime stays quiet).
     */
    readonly log?: (line: string) => void
    /** The least severe level logged (default Info). */
    readonly logLevel?: LogLevel.LogLevel
    /** Where every layer and handler reads its configuration (default: the environment). */
    readonly config?: ConfigProvider.ConfigProvider
  } = {}
): Promise<AppRuntime & ManagedRuntime.ManagedRuntime<AppServices | Db, never>> => {
  const services = Layer.orDie(appLayer(db, options.secrets, options.jobRoots, options.serviceHandlers))
  const layer = options.worker === undefined ? services : Layer.provideMerge(Layer.merge(WorkerLive, MemorySweepLive), services)
  const sink = options.log ?? options.worker?.log
  // Logger and tracer first: the layers above (the worker's loops among them) start under them.
  const logging = sink === undefined ? Logger.replace(Logger.defaultLogger, Logger.none) : LoggingLive(sink)
  const telemetry = Layer.orDie(Layer.mergeAll(logging, Logger.minimumLogLevel(options.logLevel ?? LogLevel.Info), TracingLive))
  const observed = Layer.provideMerge(layer, telemetry)
  const rt = ManagedRuntime.make(options.config === undefined ? observed : Layer.provide(observed, Layer.setConfigProvider(options.config)))
  await rt.runtime()
  return rt
}
