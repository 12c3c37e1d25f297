/**
 * Data-dir templates for the embedded database: a new data dir starts as a private copy of a migrated
 * template instead of running initdb (slow) and every migration. A template is built once per
 * PGlite version and migration set (the key hashes both), in a private build dir that is renamed into
 * place only when complete (PGlite closed cleanly), and is never opened again: it is made read-only and
 * only ever copied. Templates live in `KINTSUGI_DB_TEMPLATES` (default `$XDG_CACHE_HOME/kintsugi/db-templates`,
 * else `~/.cache/…`); "off" disables them. A template dir that is a symlink, not ours, or open to
 * other users is ignored (the data dir is then initialised by initdb).
 */
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { listMigrations, migrationsDir } from "./migrations.ts"

/** Where templates live, or undefined when disabled (process.env by default: read by the synchronous and promise-based helpers below, outside any Effect runtime). */
const templatesRoot = (env: Record<string, string | undefined> = process.env): string | undefined => {
  const given = env["KINTSUGI_DB_TEMPLATES"]
  if (given === "off") return undefined
  if (given !== undefined && given !== "") return path.resolve(given)
  const cache =
    env["XDG_CACHE_HOME"] !== undefined && env["XDG_CACHE_HOME"] !== "" ? env["XDG_CACHE_HOME"] : path.join(os.homedir(), ".cache")
  return path.join(cache, "kintsugi", "db-templates")
}

/** The template's name: PGlite's version and every migration file's name and content. */
export const templateKey = (dir: string = migrationsDir): string => {
  const hash = createHash("sha256").update("migrated\0")
  const pglite = path.join(path.dirname(fileURLToPath(import.meta.resolve("@electric-sql/pglite"))), "..", "package.json")
  hash.update(String((JSON.parse(fs.readFileSync(pglite, "utf8")) as { version?: unknown }).version))
  for (const file of Effect.runSync(listMigrations(dir))) hash.update(`\0${file.id}_${file.name}\0`).update(fs.readFileSync(file.path))
  return `migrated-${hash.digest("hex").slice(0, 16)}`
}

/** A directory only this user can reach: ours, no symlink, no group/other permission bits. */
const isPrivateDir = (p: string): boolean => {
  try {
    const st = fs.lstatSync(p)
    return st.isDirectory() && (st.mode & 0o077) === 0 && (process.getuid === undefined || st.uid === process.getuid())
  } catch {
    return false
  }
}

/** `root`, created 0700 if missing; undefined when it (or its making) is not private. */
const privateRoot = (root: string): string | undefined => {
  try {
    fs.mkdirSync(root, { recursive: true, mode: 0o700 })
  } catch {
    return undefined
  }
  return isPrivateDir(root) ? root : undefined
}

/** The ready template's data dir for the current key, or undefined. */
export const findTemplate = (root: string | undefined = templatesRoot(), key: string = templateKey()): string | undefined => {
  if (root === undefined || !isPrivateDir(root)) return undefined
  const dir = path.join(root, key)
  return isPrivateDir(dir) && fs.existsSync(path.join(dir, "ready")) && fs.existsSync(path.join(dir, "data", "PG_VERSION"))
    ? path.join(dir, "data")
    : undefined
}

/** Copies a template data dir: directories 0700, files 0600, nothing but directories and regular files. */
const copyTree = (from: string, to: string) => {
  fs.mkdirSync(to, { mode: 0o700 })
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const src = path.join(from, entry.name)
    const dst = path.join(to, entry.name)
    if (entry.isDirectory()) copyTree(src, dst)
    else if (entry.isFile()) {
      fs.copyFileSync(src, dst, fs.constants.COPYFILE_EXCL)
      fs.chmodSync(dst, 0o600)
    }
  }
}

const setTreeMode = (dir: string, dirMode: number, fileMode: number) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    if (entry.isDirectory()) setTreeMode(p, dirMode, fileMode)
    else if (entry.isFile()) fs.chmodSync(p, fileMode)
  }
  fs.chmodSync(dir, dirMode)
}

/**
 * Seeds `dataDir` (the caller holds its lock) from the ready template when it holds no database yet:
 * copied beside it, then renamed into place. "seeded", "exists" (a database or other content is
 * already there), or "no-template".
 */
export const seedDataDir = (dataDir: string, template: string | undefined): "seeded" | "exists" | "no-template" => {
  if (fs.existsSync(path.join(dataDir, "PG_VERSION"))) return "exists"
  let empty = true
  try {
    empty = fs.readdirSync(dataDir).length === 0
  } catch {
    empty = true
  }
  if (!empty) return "exists"
  if (template === undefined) return "no-template"
  const staging = `${dataDir}.seeding-${randomBytes(6).toString("hex")}`
  try {
    copyTree(template, staging)
    if (fs.existsSync(dataDir)) fs.rmdirSync(dataDir) // empty, checked above
    fs.renameSync(staging, dataDir)
    return "seeded"
  } finally {
    fs.rmSync(staging, { recursive: true, force: true })
  }
}

/**
 * Builds the template for `key` with `build` (which must create a migrated data dir at the path it is
 * given and close it cleanly) unless it exists; concurrent builders each use a private build dir and
 * the first rename wins. Returns the template's data dir, or undefined when templates are disabled.
 */
export const ensureTemplate = async (
  build: (dataDir: string) => Promise<void>,
  root: string | undefined = templatesRoot(),
  key: string = templateKey()
): Promise<string | undefined> => {
  if (root === undefined || privateRoot(root) === undefined) return undefined
  const found = findTemplate(root, key)
  if (found !== undefined) return found
  sweepBuilds(root)
  const target = path.join(root, key)
  const building = `${target}.building-${process.pid}-${randomBytes(4).toString("hex")}`
  try {
    fs.mkdirSync(building, { mode: 0o700 })
    await build(path.join(building, "data"))
    fs.writeFileSync(path.join(building, "ready"), "")
    // Read-only from here on: a template is only ever copied.
    setTreeMode(path.join(building, "data"), 0o500, 0o400)
    fs.chmodSync(path.join(building, "ready"), 0o400)
    fs.chmodSync(building, 0o500)
    fs.renameSync(building, target)
  } catch (e) {
    if (findTemplate(root, key) === undefined) throw e
  } finally {
    removeTree(building)
  }
  return findTemplate(root, key)
}

/** Removes a (possibly read-only) tree. */
const removeTree = (dir: string) => {
  if (!fs.existsSync(dir)) return
  try {
    setTreeMode(dir, 0o700, 0o600)
  } catch {
    // Best effort: rm below reports nothing either way.
  }
  fs.rmSync(dir, { recursive: true, force: true })
}

/** Build dirs left by a process that is gone. */
const sweepBuilds = (root: string) => {
  for (const name of fs.readdirSync(root)) {
    const pid = Number(/\.building-(\d+)-/.exec(name)?.[1] ?? NaN)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    let alive = true
    try {
      process.kill(pid, 0)
    } catch (e) {
      alive = typeof e === "object" && e !== null && "code" in e && e.code === "EPERM"
    }
    if (!alive) removeTree(path.join(root, name))
  }
}
