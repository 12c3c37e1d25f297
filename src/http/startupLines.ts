/**
 * What `kintsugi serve` says while it starts, before it can answer: its role, which database it opens and how
 * (a server, the embedded one as it is, from the data-dir template, or a first initdb), and whether
 * job children start from a ready bytecode bundle or one being built.
 */
import { Config, Effect, Option, Redacted } from "effect"
import fs from "node:fs"
import path from "node:path"
import { findTemplate } from "../db/dataDirTemplate.ts"
import { findBundle, jobChildCacheDir, sourceKey } from "../worker/child/jobChildBundle.ts"
import { checkRole, describeRole, type RoleNeedsServer, type ServeRole } from "./serveRole.ts"

/** `host:port/database` of a postgres URL (never its password), or a placeholder when it is not one. */
const serverName = (url: string): string => {
  try {
    const u = new URL(url)
    return `${u.hostname === "" ? "localhost" : u.hostname}:${u.port === "" ? "5432" : u.port}${u.pathname.length > 1 ? u.pathname : ""}`
  } catch {
    return "(DATABASE_URL, not a URL)"
  }
}

/** How the database will be opened: a server, or the embedded one in `dataDir` with or without the template. */
export const describeDatabaseStart = (options: {
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly template: string | undefined
}): string => {
  if (options.databaseUrl !== undefined)
    return `database: connecting to PostgreSQL at ${serverName(options.databaseUrl)} and applying migrations…`
  const data = path.join(path.resolve(options.dataDir), "data")
  if (fs.existsSync(path.join(data, "PG_VERSION"))) return `database: opening the embedded database in ${data} and applying migrations…`
  if (options.template !== undefined) return `database: creating the embedded database in ${data} from the template ${options.template}…`
  return `database: creating the embedded database in ${data} (initdb and every migration; the first start on this machine takes a minute or two, the template for the next ones is built afterwards)…`
}

const dataDirConfig = Config.string("KINTSUGI_DATA_DIR").pipe(
  Config.withDefault(".kintsugi"),
  Effect.orElseSucceed(() => ".kintsugi")
)

/**
 * The role and `describeDatabaseStart` for the configuration (DATABASE_URL, KINTSUGI_DATA_DIR) and the
 * templates on this machine; fails with the reason when the role cannot run on that database.
 */
export const databaseStartLine = (role: ServeRole): Effect.Effect<string, RoleNeedsServer> =>
  Effect.gen(function* () {
    const url = yield* Config.option(Config.redacted("DATABASE_URL")).pipe(
      Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>())
    )
    const databaseUrl = Option.getOrUndefined(Option.filter(Option.map(url, Redacted.value), (u) => u.trim() !== ""))
    yield* checkRole(role, databaseUrl)
    const dataDir = yield* dataDirConfig
    return `${describeRole(role)}; ${describeDatabaseStart({ databaseUrl, dataDir, template: databaseUrl === undefined ? findTemplate() : undefined })}`
  })

/** Whether job children start from a ready bytecode bundle, or from the sources while it is built; an API process starts none. */
export const bundleLine = (role: ServeRole): Effect.Effect<string> =>
  role === "api" ? Effect.succeed("job children: none (this process runs no jobs)") : bundleReady

const bundleReady: Effect.Effect<string> = Effect.gen(function* () {
  const cacheDir = jobChildCacheDir(path.resolve(yield* dataDirConfig))
  return findBundle(cacheDir, sourceKey()) === undefined
    ? "job children: building their bytecode bundle in the background (the first jobs start from the sources meanwhile)"
    : "job children: the bytecode bundle for these sources is ready"
})
