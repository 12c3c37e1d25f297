/**
 * The composition root: every service layer of the server wired in one place, over a Db layer.
 * `kintsugi serve` and the CLI use it with the configured database; tests with a test database.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { type ConfigProvider, Layer, ManagedRuntime } from "effect"
import { AccessLive } from "./access/Access.ts"
import { AgentStoreLive } from "./agents/AgentStore.ts"
import { SkillStoreLive } from "./agents/SkillStore.ts"
import type { Db, DbError } from "./db/Db.ts"
import type { AppRuntime, AppServices } from "./http/route.ts"
import { BindingsLive } from "./providers/Bindings.ts"
import { McpServersLive } from "./providers/McpServers.ts"
import { ProviderStoreLive } from "./providers/ProviderStore.ts"
import { SecretBoxLive, type SecretBox, type SecretKeyError } from "./providers/SecretBox.ts"
import { JobBusLive } from "./worker/JobBus.ts"
import { JobRootsLive, type JobRoots, type JobRootsInvalid } from "./worker/JobRoots.ts"
import { JobStoreLive } from "./worker/JobStore.ts"
import { WorkerLive } from "./worker/Worker.ts"

export type AppLayerError = DbError | SecretKeyError | JobRootsInvalid

/**
 * The application services over a database; `secrets` defaults to the configured key (KINTSUGI_SECRET_KEY
 * or the key file), `jobRoots` to the configured job roots (KINTSUGI_JOB_ROOTS).
 */
export const appLayer = (
  db: Layer.Layer<Db, DbError>,
  secrets: Layer.Layer<SecretBox, SecretKeyError> = SecretBoxLive,
  jobRoots: Layer.Layer<JobRoots, JobRootsInvalid, SqlClient> = JobRootsLive
): Layer.Layer<AppServices | Db, AppLayerError> => {
  const agents = Layer.provideMerge(AgentStoreLive, SkillStoreLive)
  const providers = Layer.mergeAll(Layer.provideMerge(BindingsLive, ProviderStoreLive), McpServersLive).pipe(Layer.provide(secrets))
  return Layer.mergeAll(agents, providers, AccessLive, JobStoreLive, JobBusLive, jobRoots).pipe(Layer.provideMerge(db))
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
    /** Runs the worker loops (KINTSUGI_WORKERS) in this runtime; their diagnostics go to `log`. */
    readonly worker?: { readonly log: (line: string) => void }
    /** Where every layer and handler reads its configuration (default: the environment). */
    readonly config?: ConfigProvider.ConfigProvider
  } = {}
): Promise<AppRuntime & ManagedRuntime.ManagedRuntime<AppServices | Db, never>> => {
  const services = Layer.orDie(appLayer(db, options.secrets, options.jobRoots))
  const layer = options.worker === undefined ? services : Layer.provideMerge(WorkerLive(options.worker.log), services)
  const rt = ManagedRuntime.make(options.config === undefined ? layer : Layer.provide(layer, Layer.setConfigProvider(options.config)))
  await rt.runtime()
  return rt
}
