/**
 * The job child as a Bun bytecode bundle (issue 15): built from the sources at first start into the
 * data dir's cache, keyed on a content hash of everything it is built from (src/, package.json,
 * bun.lock, the Bun version), so a bundle never outlives the sources it came from. The build runs in a
 * separate `bun build` process into a private directory that is renamed into place: two processes
 * starting at once both build, one rename wins, nobody ever sees half a bundle.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs"
import { join, resolve } from "node:path"

/** The installation: the directory holding package.json and src/. */
export const INSTALL_DIR = resolve(import.meta.dir, "..", "..")
/** What the bundle is built from. */
export const JOB_CHILD_SOURCE = join(INSTALL_DIR, "src", "jobChildEntry.ts")
const SRC_DIR = join(INSTALL_DIR, "src")
const BUNDLE_FILE = "jobChildEntry.js"
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
export const ensureBundle = async (cacheDir: string, key: string): Promise<string> => {
  const ready = builtBundle(cacheDir, key)
  if (ready !== undefined) return ready
  mkdirSync(cacheDir, { recursive: true })
  const final = join(cacheDir, `${PREFIX}${key}`)
  const tmp = `${final}.tmp-${process.pid}-${Math.random().toString(16).slice(2)}`
  try {
    // pi-ai keeps its modules lazy inside a bundle; src/kernel imports them from their own modules
    // (not the package index) so the bundle initialises them before use (see PiAiModels.ts).
    const build = Bun.spawn(
      [process.execPath, "build", "--target=bun", "--format=cjs", "--bytecode", `--outdir=${tmp}`, JOB_CHILD_SOURCE],
      { cwd: INSTALL_DIR, stdin: "ignore", stdout: "ignore", stderr: "pipe", env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" } }
    )
    const [stderr, code] = await Promise.all([new Response(build.stderr).text(), build.exited])
    if (code !== 0 || !existsSync(join(tmp, BUNDLE_FILE)) || !existsSync(join(tmp, `${BUNDLE_FILE}.jsc`))) {
      throw new BundleBuildFailed(`bun build of the job child failed (exit ${code}): ${stderr.trim().split("\n").slice(-3).join(" ").slice(0, 500)}`)
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
  for (const name of readdirSync(cacheDir)) {
    if (name.startsWith(PREFIX) && name !== `${PREFIX}${key}` && !name.includes(".tmp-")) rmSync(join(cacheDir, name), { recursive: true, force: true })
  }
  return bundleEntry(cacheDir, key)
}
