/**
 * The one place the browser tests get their Chromium: CHROMIUM_PATH, else Debian's `chromium`, else
 * the Chromium that the `@sparticuz/chromium` dev dependency ships, unpacked once per user and version.
 */
import {
  accessSync,
  constants,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync
} from "node:fs"
import { homedir } from "node:os"
import { dirname, join } from "node:path"
import { pipeline } from "node:stream/promises"
import { brotliDecompressSync, createBrotliDecompress } from "node:zlib"
import { chromium, type Browser } from "playwright-core"

/** Our flags for every browser test (the bundled build needs none of `@sparticuz/chromium`'s `args`). */
export const BROWSER_ARGS: ReadonlyArray<string> = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

/** Where Debian's package puts it; `chromium` on PATH is tried next. */
const SYSTEM_CHROMIUM = "/usr/bin/chromium"

/** The choice made from the environment, before anything is unpacked or launched. */
export type ChromiumChoice = { readonly source: "CHROMIUM_PATH" | "system"; readonly path: string } | { readonly source: "bundled" }

const isExecutableFile = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}

const onPath = (env: Record<string, string | undefined>, isExecutable: (path: string) => boolean): string | undefined =>
  (env["PATH"] ?? "")
    .split(":")
    .filter((d) => d !== "")
    .map((d) => join(d, "chromium"))
    .find(isExecutable)

/**
 * KINTSUGI_TEST_BROWSER: unset/`auto` = CHROMIUM_PATH, else Debian's chromium, else the bundled one;
 * `system` = CHROMIUM_PATH or Debian's, never the bundled one; `bundled` = always the bundled one.
 * Throws with what to do when the setting is unknown or the named browser is missing.
 */
export const chooseChromium = (
  env: Record<string, string | undefined> = process.env,
  isExecutable: (path: string) => boolean = isExecutableFile
): ChromiumChoice => {
  const mode = env["KINTSUGI_TEST_BROWSER"] ?? "auto"
  if (mode !== "auto" && mode !== "system" && mode !== "bundled") {
    throw new Error(`KINTSUGI_TEST_BROWSER=${mode} is not one of auto, system, bundled.`)
  }
  if (mode === "bundled") return { source: "bundled" }
  const explicit = env["CHROMIUM_PATH"]
  if (explicit !== undefined && explicit !== "") {
    if (!isExecutable(explicit))
      throw new Error(`Chromium not found at ${explicit} (CHROMIUM_PATH): point it at a Chromium binary, or unset it.`)
    return { source: "CHROMIUM_PATH", path: explicit }
  }
  const system = isExecutable(SYSTEM_CHROMIUM) ? SYSTEM_CHROMIUM : onPath(env, isExecutable)
  if (system !== undefined) return { source: "system", path: system }
  if (mode === "system") {
    throw new Error("KINTSUGI_TEST_BROWSER=system but Debian's chromium is missing: apt-get install chromium, or set CHROMIUM_PATH.")
  }
  return { source: "bundled" }
}

const packageDir = (): string => join(dirname(Bun.resolveSync("@sparticuz/chromium", import.meta.dir)), "..")

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

const xmlText = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** The bundled browser unpacked, and what it needs in its environment to start here. */
export interface BundledChromium {
  readonly path: string
  /** Its fontconfig file, and its own NSS and expat libraries where the system has none. */
  readonly env: Readonly<Record<string, string>>
}

/** Undefined when the binary starts with `env`, else what the loader said. */
const startFailure = (path: string, env: Record<string, string>): string | undefined => {
  const r = Bun.spawnSync([path, "--version"], { env: { ...process.env, ...env }, stdout: "ignore", stderr: "pipe" })
  return r.exitCode === 0 ? undefined : r.stderr.toString().trim() || `exit ${r.exitCode}`
}

/**
 * The system's libnss3, libnspr4 and libexpat1 when it has them (the bundled copies, built for Amazon
 * Linux 2023, need glibc 2.34), else the bundled ones.
 */
const launchEnv = (dir: string): Record<string, string> => {
  const path = join(dir, "chromium")
  const fonts = { FONTCONFIG_FILE: join(dir, "fonts.conf") }
  const withSystemLibs = startFailure(path, fonts)
  if (withSystemLibs === undefined) return fonts
  const own = { ...fonts, LD_LIBRARY_PATH: [join(dir, "lib"), process.env["LD_LIBRARY_PATH"] ?? ""].filter((p) => p !== "").join(":") }
  const withOwnLibs = startFailure(path, own)
  if (withOwnLibs === undefined) return own
  throw new Error(
    `The bundled Chromium (${path}) does not start: ${withSystemLibs}; with its own libraries: ${withOwnLibs}. ` +
      "Install Debian's chromium (apt-get install chromium), or set CHROMIUM_PATH."
  )
}

/**
 * Unpacks the bundled Chromium into `<cacheRoot>/kintsugi/chromium-<version>/` unless it is there.
 * Each process unpacks into its own `.partial-<pid>-…` directory and renames it into place, so a
 * reader never sees a half-written binary and concurrent test processes cannot collide (the loser of
 * the rename drops its copy). `@sparticuz/chromium`'s own `executablePath()` is not used: it writes
 * to a fixed `/tmp/chromium` and hands a second process the file while the first is still writing it.
 */
export const unpackBundledChromium = async (
  cacheRoot: string = process.env["XDG_CACHE_HOME"] || join(homedir(), ".cache"),
  /** Test hook: runs when this process's copy is complete, before it is renamed into place. */
  beforeRename: () => Promise<void> = async () => {}
): Promise<BundledChromium> => {
  const pkg = packageDir()
  const version = (JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { version: string }).version
  const parent = join(cacheRoot, "kintsugi")
  const final = join(parent, `chromium-${version}`)
  const path = join(final, "chromium")
  if (existsSync(path)) return { path, env: launchEnv(final) }
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error(
      `The bundled Chromium runs on linux/x64 only (this is ${process.platform}/${process.arch}): install chromium, or set CHROMIUM_PATH.`
    )
  }
  console.error(`Unpacking the Chromium of @sparticuz/chromium ${version} into ${final} (once per user and version).`)
  mkdirSync(parent, { recursive: true, mode: 0o700 })
  // Copies left by a process that died while unpacking.
  for (const name of readdirSync(parent)) {
    const m = /^chromium-.*\.partial-(\d+)-/.exec(name)
    if (m !== null && !isAlive(Number(m[1]))) rmSync(join(parent, name), { recursive: true, force: true })
  }
  const partial = join(parent, `chromium-${version}.partial-${process.pid}-${crypto.randomUUID()}`)
  mkdirSync(partial, { mode: 0o700 })
  const untar = (archive: string, glob: string) =>
    new Bun.Archive(brotliDecompressSync(readFileSync(join(pkg, "bin", archive)))).extract(partial, { glob })
  try {
    await pipeline(
      createReadStream(join(pkg, "bin", "chromium.br")),
      createBrotliDecompress({ chunkSize: 2 ** 21 }),
      createWriteStream(join(partial, "chromium"), { mode: 0o700 })
    )
    // Open Sans, so pages have text with a width even where the machine has no fonts at all.
    await untar("fonts.tar.br", "fonts/**")
    await untar("al2023.tar.br", "lib/**")
    writeFileSync(
      join(partial, "fonts.conf"),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
        `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n` +
        `  <dir>${xmlText(join(final, "fonts"))}</dir>\n  <cachedir>${xmlText(join(final, "fontconfig-cache"))}</cachedir>\n</fontconfig>\n`
    )
    await beforeRename()
    try {
      renameSync(partial, final)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if ((code !== "ENOTEMPTY" && code !== "EEXIST") || !existsSync(path)) throw e
    }
    return { path, env: launchEnv(final) }
  } finally {
    rmSync(partial, { recursive: true, force: true })
  }
}

let bundled: Promise<BundledChromium> | undefined

/** Launches headless Chromium (by default as `chooseChromium` says) with our flags plus `extraArgs`. */
export const launchChromium = async (
  extraArgs: ReadonlyArray<string> = [],
  choice: ChromiumChoice = chooseChromium()
): Promise<Browser> => {
  const args = [...BROWSER_ARGS, ...extraArgs]
  if (choice.source !== "bundled") return chromium.launch({ executablePath: choice.path, args })
  bundled ??= unpackBundledChromium()
  const b = await bundled
  return chromium.launch({ executablePath: b.path, args, env: { ...process.env, ...b.env } })
}
