/**
 * The job child as a Bun bytecode bundle: built from the sources at first start into the
 * data dir's cache, keyed on a content hash of everything it is built from (src/, package.json,
 * bun.lock, the Bun version), so a bundle never outlives the sources it came from. The build runs in a
 * separate process (jobChildBuild.ts: the bundle, and beside it bundles of the SDKs only some jobs use)
 * into a private directory that is renamed into place: two processes starting at once both build, one
 * rename wins, nobody ever sees half a bundle.
 */
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync
} from "node:fs"
import { join, resolve } from "node:path"

/** The installation: the directory holding package.json and src/. */
export const INSTALL_DIR = resolve(import.meta.dir, "..", "..", "..")

/** The builders run Bun by its absolute path (process.execPath) and need no PATH of the server's: a fixed one. */
const BUILD_PATH = "/usr/local/bin:/usr/bin:/bin"
/** What the bundle is built from. */
export const JOB_CHILD_SOURCE = join(INSTALL_DIR, "src", "jobChild", "entry.ts")
const SRC_DIR = join(INSTALL_DIR, "src")
/** The build (a script of the sources, so part of the key): the bundle and its split-off SDK bundles. */
const BUILDER = join(INSTALL_DIR, "src", "worker", "child", "jobChildBuild.ts")
const BUNDLE_FILE = "entry.js"
const PREFIX = "job-child-"

const sourceFiles = (): Array<string> =>
  (readdirSync(SRC_DIR, { recursive: true }) as Array<string>).filter((f) => f.endsWith(".ts")).sort()

/**
 * A cheap fingerprint of the sources (paths, sizes, modification times): when it is unchanged, so is
 * `sourceKey` — it tells a caller when the key must be computed again.
 */
export const sourceFingerprint = (): string => {
  const parts: Array<string> = [Bun.version]
  for (const f of sourceFiles()) {
    const st = statSync(join(SRC_DIR, f))
    parts.push(`${f}:${st.size}:${st.mtimeMs}`)
  }
  for (const f of ["package.json", "bun.lock"]) {
    const st = statSync(join(INSTALL_DIR, f), { throwIfNoEntry: false })
    parts.push(`${f}:${st?.size ?? -1}:${st?.mtimeMs ?? -1}`)
  }
  return Bun.hash(parts.join("\n")).toString(16)
}

/** The content hash the bundle is keyed on: every source file, package.json, bun.lock, Bun's version and revision. */
export const sourceKey = (): string => {
  const h = new Bun.CryptoHasher("sha256")
  h.update(`bun ${Bun.version} ${Bun.revision}\n`)
  for (const f of sourceFiles()) {
    h.update(`${f}\n`)
    h.update(readFileSync(join(SRC_DIR, f)))
  }
  for (const f of ["package.json", "bun.lock"]) {
    h.update(`${f}\n`)
    if (existsSync(join(INSTALL_DIR, f))) h.update(readFileSync(join(INSTALL_DIR, f)))
  }
  return h.digest("hex").slice(0, 32)
}

/**
 * Where bundles (and Bun's transpiler cache for children started from the sources) are kept: in the
 * installation (node_modules/.cache/kintsugi, shared by every data dir) when it is writable, else in
 * the data dir (`<dataDir>/cache`).
 */
export const jobChildCacheDir = (dataDir: string): string => {
  try {
    accessSync(join(INSTALL_DIR, "node_modules"), constants.W_OK)
    return INSTALL_CACHE
  } catch {
    return resolve(dataDir, "cache")
  }
}

/** The installation's cache: where `bun src/worker/child/jobChildBundle.ts` (the Dockerfile's step) puts the bundle ahead. */
export const INSTALL_CACHE = join(INSTALL_DIR, "node_modules", ".cache", "kintsugi")

/** The built bundle of `key`: the one made at install (`installCache`, INSTALL_CACHE unless told) first, else the one in `cacheDir`. */
export const findBundle = (cacheDir: string, key: string, installCache: string = INSTALL_CACHE): string | undefined =>
  builtBundle(installCache, key) ?? builtBundle(cacheDir, key)

/** Bun's transpiler cache for job children started from the sources (BUN_RUNTIME_TRANSPILER_CACHE_PATH). */
export const transpilerCacheDir = (cacheDir: string): string => join(cacheDir, "transpiler")

/** Where the bundle of `key` lives under `cacheDir`, whether or not it was built. */
export const bundleEntry = (cacheDir: string, key: string): string => join(cacheDir, `${PREFIX}${key}`, BUNDLE_FILE)

/** The bundle's entry when it is built (a complete directory: it only ever appears by rename), else undefined. */
export const builtBundle = (cacheDir: string, key: string): string | undefined => {
  const entry = bundleEntry(cacheDir, key)
  return existsSync(entry) && existsSync(`${entry}.jsc`) ? entry : undefined
}

export class BundleBuildFailed extends Error {
  override readonly name = "BundleBuildFailed"
}

/**
 * Builds the bundle of `key` under `cacheDir` unless it is there; returns its entry. Bundles of other
 * keys are removed once the new one is in place. Fails (BundleBuildFailed) when `bun build` does;
 * the caller then keeps starting the child from the sources.
 */
export const ensureBundle = async (cacheDir: string, key: string, signal?: AbortSignal): Promise<string> => {
  const ready = builtBundle(cacheDir, key)
  if (ready !== undefined) return ready
  mkdirSync(cacheDir, { recursive: true })
  const final = join(cacheDir, `${PREFIX}${key}`)
  const tmp = `${final}.tmp-${process.pid}-${Math.random().toString(16).slice(2)}`
  try {
    // pi-ai keeps its modules lazy inside a bundle; src/kernel imports them from their own modules
    // (not the package index) so the bundle initialises them before use (see PiAiModels.ts).
    // `bun build --target=bun --format=cjs --bytecode` of JOB_CHILD_SOURCE, with the SDKs only some
    // jobs use in bundles of their own beside it (jobChildBuild.ts).
    const build = Bun.spawn([process.execPath, BUILDER, tmp], {
      cwd: INSTALL_DIR,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
      env: { PATH: BUILD_PATH }
    })
    signal?.addEventListener("abort", () => build.kill("SIGKILL"), { once: true })
    const [stderr, code] = await Promise.all([new Response(build.stderr).text(), build.exited])
    if (code !== 0 || !existsSync(join(tmp, BUNDLE_FILE)) || !existsSync(join(tmp, `${BUNDLE_FILE}.jsc`))) {
      throw new BundleBuildFailed(
        `bun build of the job child failed (exit ${code}): ${stderr.trim().split("\n").slice(-3).join(" ").slice(0, 500)}`
      )
    }
    try {
      renameSync(tmp, final)
    } catch (e) {
      // Another process put the same bundle in place first: theirs is as good as ours.
      if (builtBundle(cacheDir, key) === undefined) throw e
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
  removeOtherBundles(cacheDir, key)
  return bundleEntry(cacheDir, key)
}

/**
 * Whether a live process runs from `dir`: its command line names a file inside it (a job child of that
 * bundle, `bun <dir>/entry.js run-job`, which loads the SDK bundles beside its entry lazily, when a
 * job first needs one). Without /proc (not Linux) nothing is seen to be.
 */
const runningFrom = (dir: string): boolean => {
  let pids: Array<string>
  try {
    pids = readdirSync("/proc")
  } catch {
    return false
  }
  const inside = `${dir}/`
  for (const pid of pids) {
    if (pid.charCodeAt(0) < 48 || pid.charCodeAt(0) > 57) continue
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "latin1").includes(inside)) return true
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return false
}

/**
 * Removes the bundles of other sources under `cacheDir` and what builders that died half-way left
 * behind; a bundle a live process still runs from stays (until a later build finds it unused).
 */
export const removeOtherBundles = (cacheDir: string, key: string): void => {
  for (const name of readdirSync(cacheDir)) {
    if (!name.startsWith(PREFIX) || name === `${PREFIX}${key}` || name.endsWith(".building")) continue
    const builder = /\.tmp-(\d+)-/.exec(name)?.[1]
    const path = join(cacheDir, name)
    if (builder !== undefined ? !pidAlive(Number(builder)) : !runningFrom(path)) rmSync(path, { recursive: true, force: true })
  }
}

/** The pid in a lock file, or 0 when there is none (no file, or not a number). */
const lockHolder = (file: string): number => {
  try {
    const pid = Number(readFileSync(file, "utf8").trim())
    return Number.isInteger(pid) && pid > 0 ? pid : 0
  } catch {
    return 0
  }
}

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Takes the build lock of `key` (`<cacheDir>/job-child-<key>.building`, holding our pid): true when
 * we may build; false while a live process holds it. A lock left by a dead process is taken over.
 */
const takeBuildLock = (cacheDir: string, key: string): boolean => {
  mkdirSync(cacheDir, { recursive: true })
  const file = join(cacheDir, `${PREFIX}${key}.building`)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx")
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return true
    } catch {
      const holder = lockHolder(file)
      if (holder > 0 && pidAlive(holder)) return false
      rmSync(file, { force: true })
    }
  }
  return false
}

/**
 * Starts building the bundle of `key` in a detached process (it finishes even when this process
 * ends first, e.g. a short \`kintsugi run\`), unless it is built or being built. Returns at once.
 */
export const startBundleBuild = (cacheDir: string, key: string): void => {
  if (builtBundle(cacheDir, key) !== undefined) return
  const lock = join(cacheDir, `${PREFIX}${key}.building`)
  const holder = lockHolder(lock)
  if (holder > 0 && pidAlive(holder)) return
  const builder = Bun.spawn([process.execPath, import.meta.path, cacheDir, key], {
    cwd: INSTALL_DIR,
    stdio: ["ignore", "ignore", "ignore"],
    env: { PATH: BUILD_PATH },
    detached: true
  })
  builder.unref()
}

/** `bun jobChildBundle.ts <cacheDir> <key>`: the detached builder of startBundleBuild. */
const buildUnderLock = async (cacheDir: string, key: string): Promise<number> => {
  if (!takeBuildLock(cacheDir, key)) return 0
  try {
    await ensureBundle(cacheDir, key)
    return 0
  } catch {
    return 1
  } finally {
    rmSync(join(cacheDir, `${PREFIX}${key}.building`), { force: true })
  }
}

/**
 * `bun src/worker/child/jobChildBundle.ts`: builds the bundle of the sources at install (the Dockerfile's
 * step) into INSTALL_CACHE, and prints its path. With `<cacheDir> <key>`: the detached builder of
 * startBundleBuild.
 */
if (import.meta.main) {
  const [cacheDir, key] = process.argv.slice(2)
  if (cacheDir === undefined) {
    void ensureBundle(INSTALL_CACHE, sourceKey()).then(
      (entry) => console.log(`job child bundle: ${entry}`),
      (e: unknown) => {
        console.error(e instanceof Error ? e.message : String(e))
        process.exit(1)
      }
    )
  } else {
    if (key === undefined || !/^[0-9a-f]{32}$/.test(key)) process.exit(2)
    void buildUnderLock(cacheDir, key).then((code) => process.exit(code))
  }
}
