/**
 * Job roots for tests: one canonical temporary job root per test process (removed at exit), and a
 * JobRoots layer configured through a ConfigProvider (never process.env) for the app runtimes.
 */
import { ConfigProvider, Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { JobRoots, makeJobRootsFromConfig } from "../../src/worker/JobRoots.ts"

let shared: string | undefined

/** The process's job root, created on first use. Workspaces of jobs sent to the API belong inside it. */
export const testJobRoot = (): string => {
  if (shared === undefined) {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-roots-")))
    process.on("exit", () => rmSync(root, { recursive: true, force: true }))
    shared = root
  }
  return shared
}

/**
 * A fresh temp dir (removed at exit) holding a stand-in data dir `state/` with a key file and embedded
 * database files, as a server's would look: what the job boundary must keep workspaces out of.
 */
export const createFakeDataDir = (prefix: string, key: string): { readonly base: string; readonly dataDir: string } => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), prefix)))
  process.on("exit", () => rmSync(base, { recursive: true, force: true }))
  const dataDir = join(base, "state")
  mkdirSync(join(dataDir, "data"), { recursive: true })
  writeFileSync(join(dataDir, "secret.key"), key)
  writeFileSync(join(dataDir, "data", "PG_VERSION"), "15\n")
  return { base, dataDir }
}

/** A fresh directory inside the test job root. */
export const createRootDir = (prefix = "ws-"): string => realpathSync(mkdtempSync(join(testJobRoot(), prefix)))

/** JobRootsLive over `KINTSUGI_JOB_ROOTS` = `roots` (default: the test job root) and `KINTSUGI_DATA_DIR` = `dataDir`, when given. */
export const testJobRoots = (roots: ReadonlyArray<string> = [testJobRoot()], dataDir?: string) =>
  Layer.effect(
    JobRoots,
    makeJobRootsFromConfig.pipe(
      // Only this layer reads the map: the rest of the runtime keeps its own configuration.
      Effect.withConfigProvider(
        ConfigProvider.fromMap(
          new Map([["KINTSUGI_JOB_ROOTS", roots.join(":")], ...(dataDir === undefined ? [] : [["KINTSUGI_DATA_DIR", dataDir] as const])])
        )
      )
    )
  )
