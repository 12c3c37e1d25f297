/**
 * Where a command finds the installation it reads or changes. The data dir resolves the same way
 * whatever the shell's current folder: KINTSUGI_DATA_DIR when set (a relative value is taken from the
 * installation directory, the folder holding this program's package.json), else that folder's
 * `.kintsugi`. `src/cli.ts` pins the result in the environment before any command reads it.
 */
import { existsSync } from "node:fs"
import { join, resolve } from "node:path"

/** The installation directory: the folder holding package.json and src/. */
export const INSTALL_DIR = resolve(import.meta.dir, "..", "..")

/** The data dir for a KINTSUGI_DATA_DIR value (unset or empty: the installation's `.kintsugi`), absolute. */
export const resolveDataDir = (configured: string | undefined, installDir: string = INSTALL_DIR): string =>
  configured === undefined || configured.trim() === "" ? join(installDir, ".kintsugi") : resolve(installDir, configured)

/** Sets KINTSUGI_DATA_DIR in `env` to its absolute data dir, so that every layer reading it agrees. */
export const pinDataDir = (env: Record<string, string | undefined>): void => {
  env["KINTSUGI_DATA_DIR"] = resolveDataDir(env["KINTSUGI_DATA_DIR"])
}

/**
 * Why there is no installation to open (no DATABASE_URL, and no embedded database in `dataDir`), naming
 * where the command looked; undefined when there is one. A database held by a live process is an
 * installation (opening it then says who holds it). Creates nothing.
 */
export const missingInstallation = async (options: {
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly serverUrl: string
}): Promise<string | undefined> => {
  if (options.databaseUrl !== undefined && options.databaseUrl.trim() !== "") return undefined
  const data = join(options.dataDir, "data")
  if (existsSync(join(data, "PG_VERSION"))) return undefined
  // Loaded only here: the database module is heavy for a command that answers from a server.
  const { dataDirLockHolder } = await import("../db/Db.ts")
  if (dataDirLockHolder(data) !== undefined) return undefined
  return (
    `no kintsugi installation found: no server answers at ${options.serverUrl} and the data dir ${options.dataDir} holds no database; ` +
    "start `kintsugi serve` (or run `kintsugi migrate`) for this installation, or set KINTSUGI_DATA_DIR, DATABASE_URL or KINTSUGI_URL"
  )
}
