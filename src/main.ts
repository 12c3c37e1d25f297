/**
 * The composition root: every layer of the application wired in one place. `AppLive` is the server
 * (`kintsugi serve`); the other commands in src/cli/ take their layers from here too, and tests build
 * theirs with `makeAppLive` over a test database. Nothing below src/cli/ imports this file.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { type ConfigProvider, Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { Access, AccessLive } from "./access/Access.ts"
import { AgentStoreLive } from "./agents/AgentStore.ts"
import { SkillStoreLive } from "./agents/SkillStore.ts"
import { type Db, type DbError, DbLive, DbMigratedLive } from "./db/Db.ts"
import type { AppRuntime, AppServices } from "./http/route.ts"
import { BindingsLive } from "./providers/Bindings.ts"
import { McpServersLive } from "./providers/McpServers.ts"
import { ProviderStoreLive } from "./providers/ProviderStore.ts"
import { SecretBoxLive, type SecretBox, type SecretKeyError } from "./providers/SecretBox.ts"
import { LoggingLive } from "./telemetry/Logging.ts"
import { MetricsLive } from "./telemetry/Metrics.ts"
import { TracingLive } from "./telemetry/Tracing.ts"
import { DrainLive } from "./worker/Drain.ts"
import { JobBusLive } from "./worker/JobBus.ts"
import { layer as JobFeedLayer } from "./worker/JobFeed.ts"
import { type JobChildren, JobChildrenLive, JobChildrenOnce } from "./worker/child/JobChildren.ts"
import { JobRootsLive, type JobRoots, type JobRootsInvalid } from "./worker/JobRoots.ts"
import { JobStoreLive } from "./worker/JobStore.ts"
import { ProjectsLive } from "./worker/Projects.ts"
import { makeMemoryHandlers } from "./worker/memory/memoryService.ts"
import { MemorySweepLive } from "./worker/memory/MemorySweep.ts"
import { MemoryStoreLive, type MemoryStore } from "./worker/memory/MemoryStore.ts"
import { ServiceHandlers, ServicesEndpointLive } from "./worker/Services.ts"
import { ServiceTokensLive } from "./worker/ServiceTokens.ts"
import { withTranscriptIntake } from "./worker/transcripts/transcriptIntake.ts"
import { TranscriptStoreLive } from "./worker/transcripts/TranscriptStore.ts"
import { TranscriptSweepLive } from "./worker/transcripts/TranscriptSweep.ts"
import { WorkerLive } from "./worker/Worker.ts"
import { EvalsLive, EvalsSweepLive } from "./worker/evals/Evals.ts"
import { WorkspacesLive } from "./worker/workspaces/Workspaces.ts"
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
  const providers = Layer.mergeAll(Layer.provideMerge(BindingsLive, ProviderStoreLive), McpServersLive, WebSearchLive).pipe(
    Layer.provide(secrets)
  )
  // The catalog shows each agent's bindings: the agent store reads them through Bindings.
  const agents = Layer.provideMerge(AgentStoreLive, Layer.merge(SkillStoreLive, providers))
  const projects = Layer.provideMerge(Layer.merge(ProjectWebLive, WorkspacesLive), Layer.provideMerge(ProjectsLive, jobRoots))
  // Transcripts, sealed with the installation's key.
  const transcripts = Layer.provide(TranscriptStoreLive, secrets)
  // The services channel: tokens, the handlers (memory, web, transcripts) and the loopback endpoint job children call.
  const handlers = Layer.provide(withTranscriptIntake(serviceHandlers), Layer.mergeAll(projects, providers, MemoryStoreLive, transcripts))
  const services = Layer.provideMerge(ServicesEndpointLive, Layer.merge(ServiceTokensLive, handlers)).pipe(
    Layer.provideMerge(MemoryStoreLive)
  )
  // The live streams' one reader per process, over the queue and the bus.
  const jobs = Layer.provideMerge(JobFeedLayer, Layer.merge(JobStoreLive, JobBusLive))
  const core = Layer.mergeAll(agents, AccessLive, jobs, MetricsLive, projects, services, transcripts)
  // Evals run jobs of the agents: over the agent store, the queue, the job roots and projects.
  return Layer.provideMerge(EvalsLive, core).pipe(Layer.provideMerge(db))
}

export interface AppOptions {
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
  /**
   * Where job children come from (JobChildrenLive: the bytecode bundle, one child started ahead);
   * default: each child started from the sources when its job starts.
   */
  readonly jobChildren?: Layer.Layer<JobChildren>
}

/**
 * The whole application as one layer over `db`: the services, the worker loops and their Drain when `options.worker`
 * is given, under the logger and the tracer. A layer that cannot be built is a defect naming its error
 * (the commands print its first line).
 */
export const makeAppLive = (db: Layer.Layer<Db, DbError>, options: AppOptions = {}): Layer.Layer<AppServices | Db> => {
  // The composition root: a layer that cannot start (database, secret key, roots) is a startup failure.
  const app = Layer.orDie(appLayer(db, options.secrets, options.jobRoots, options.serviceHandlers))
  // Built alongside the database: `kintsugi run`'s child started ahead loads while the database starts
  // (serve's first one a second later, JobChildren.ts).
  const services = options.jobChildren === undefined ? app : Layer.merge(app, options.jobChildren)
  // The worker loops (jobs, the retention sweeps of project memory and transcripts, the runs of gated saves) and their drain.
  const layer =
    options.worker === undefined
      ? services
      : // DrainLive failing to start is a startup failure at the composition root.
        Layer.provideMerge(
          Layer.mergeAll(WorkerLive, MemorySweepLive, TranscriptSweepLive, EvalsSweepLive),
          Layer.merge(services, Layer.orDie(DrainLive))
        )
  const sink = options.log ?? options.worker?.log
  // Logger and tracer first: the layers above (the worker's loops among them) start under them.
  const logging = sink === undefined ? Logger.replace(Logger.defaultLogger, Logger.none) : LoggingLive(sink)
  // Telemetry that cannot start is a startup failure at the composition root.
  const telemetry = Layer.orDie(Layer.mergeAll(logging, Logger.minimumLogLevel(options.logLevel ?? LogLevel.Info), TracingLive))
  const observed = Layer.provideMerge(layer, telemetry)
  return options.config === undefined ? observed : Layer.provide(observed, Layer.setConfigProvider(options.config))
}

const stderrLine = (line: string) => void process.stderr.write(`${line}\n`)

/**
 * The server: every service over the configured database (DATABASE_URL, else the embedded one in
 * KINTSUGI_DATA_DIR), migrated; the worker loops; log lines on stderr. `kintsugi serve` provides the
 * configuration (the environment, or the secrets it took out of it).
 */
export const AppLive: Layer.Layer<AppServices | Db> = makeAppLive(DbMigratedLive, {
  worker: { log: stderrLine },
  jobChildren: JobChildrenLive
})

/**
 * `kintsugi run` in-process: the services without the worker loops (its one job child, the bytecode
 * bundle once built, starts while the database does); only warnings and errors logged.
 */
export const LocalRunLive: Layer.Layer<AppServices | Db> = makeAppLive(DbMigratedLive, {
  log: stderrLine,
  logLevel: LogLevel.Warning,
  jobChildren: JobChildrenOnce
})

/** The configured database, migrated (`kintsugi users`). */
export const DatabaseLive: Layer.Layer<Db, DbError> = DbMigratedLive

/** The configured database as it is, for `kintsugi migrate` (which applies the migrations itself). */
export const UnmigratedDatabaseLive: Layer.Layer<Db, DbError> = DbLive

/** Users, permissions and tokens over the configured database (`kintsugi users`). */
export const UsersLive: Layer.Layer<Access, DbError> = Layer.provide(AccessLive, DatabaseLive)

/**
 * A runtime for `layer`, built eagerly: a database that cannot be reached fails here, once, with the
 * error's message, rather than inside the first request.
 */
export const makeRuntime = async (
  layer: Layer.Layer<AppServices | Db>
): Promise<AppRuntime & ManagedRuntime.ManagedRuntime<AppServices | Db, never>> => {
  const rt = ManagedRuntime.make(layer)
  await rt.runtime()
  return rt
}

/** `makeRuntime(makeAppLive(db, options))`: the runtime tests and benches build over their database. */
export const makeAppRuntime = (
  db: Layer.Layer<Db, DbError>,
  options: AppOptions = {}
): Promise<AppRuntime & ManagedRuntime.ManagedRuntime<AppServices | Db, never>> => makeRuntime(makeAppLive(db, options))
