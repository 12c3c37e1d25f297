/**
 * The composition root: every service layer of the server wired in one place, over a Db layer.
 * `kintsugi serve` and the CLI use it with the configured database; tests with a test database.
 */
import { Layer, ManagedRuntime } from "effect"
import { AccessLive } from "./access/Access.ts"
import { AgentStoreLive } from "./agents/AgentStore.ts"
import { SkillStoreLive } from "./agents/SkillStore.ts"
import type { Db, DbError } from "./db/Db.ts"
import type { AppRuntime, AppServices } from "./http/route.ts"

/** The application services over a database. */
export const appLayer = (db: Layer.Layer<Db, DbError>): Layer.Layer<AppServices | Db, DbError> =>
  Layer.mergeAll(Layer.provideMerge(AgentStoreLive, SkillStoreLive), AccessLive).pipe(Layer.provideMerge(db))

/**
 * A runtime for the HTTP app. Its layer is built eagerly: a database that cannot be reached fails
 * here, once, with the DbError's message, rather than inside the first request.
 */
export const makeAppRuntime = async (db: Layer.Layer<Db, DbError>): Promise<AppRuntime & ManagedRuntime.ManagedRuntime<AppServices | Db, never>> => {
  const rt = ManagedRuntime.make(Layer.orDie(appLayer(db)))
  await rt.runtime()
  return rt
}
