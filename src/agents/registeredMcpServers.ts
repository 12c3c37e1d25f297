/**
 * The installation's registered MCP server names for `kintsugi agents validate`, when they can be read:
 * `DATABASE_URL`, else an embedded database in the data dir that no running serve holds. Never migrates,
 * never creates a data dir, reads names only (no header, no secret key).
 */
import { Effect } from "effect"
import fs from "node:fs"
import path from "node:path"
import { dataDirLockHolder, makeDbLayer } from "../db/Db.ts"
import { pendingMigrations } from "../db/migrations.ts"
import { selectMcpServerNames } from "../providers/McpServers.ts"

/** The names, or why they could not be read (`undefined`: there is no installation to ask). */
export type McpRegistry = { readonly names: ReadonlySet<string> } | { readonly unavailable: string | undefined }

const HINT = "pass --mcp-servers <a,b> to check against a list"

const readNames = (layer: ReturnType<typeof makeDbLayer>, where: string): Promise<McpRegistry> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const pending = yield* pendingMigrations()
      if (pending.length > 0) {
        return {
          unavailable: `the database at ${where} has ${pending.length} pending migration${pending.length === 1 ? "" : "s"} (kintsugi migrate applies them)`
        }
      }
      return { names: yield* selectMcpServerNames }
    }).pipe(
      Effect.catchTags({
        SqlError: () => Effect.succeed({ unavailable: `the database at ${where} is not migrated (kintsugi migrate)` }),
        MigrationError: (e) => Effect.succeed({ unavailable: e.message })
      }),
      Effect.provide(layer),
      Effect.catchTag("DbError", (e) => Effect.succeed({ unavailable: `${e.message}; ${HINT}` }))
    )
  )

/**
 * Reads the registered MCP server names of the installation `env` describes: the `DATABASE_URL` server,
 * else `${KINTSUGI_DATA_DIR:-.kintsugi}/data` when it holds a database and no live process holds its lock.
 * `{ unavailable }` says why not (pending migrations, a running serve, an unreachable server); never rejects.
 */
export const registeredMcpServers = async (env: Readonly<Record<string, string | undefined>>): Promise<McpRegistry> => {
  const url = env["DATABASE_URL"]?.trim() ?? ""
  if (url !== "") return readNames(makeDbLayer({ url }), "DATABASE_URL")
  const dataDir = path.resolve(env["KINTSUGI_DATA_DIR"] || ".kintsugi", "data")
  if (!fs.existsSync(path.join(dataDir, "PG_VERSION"))) return { unavailable: undefined }
  const holder = dataDirLockHolder(dataDir)
  if (holder !== undefined) {
    return { unavailable: `the embedded database at ${dataDir} is in use by process ${holder} (a running kintsugi serve); ${HINT}` }
  }
  return readNames(makeDbLayer({ dataDir }), dataDir)
}
