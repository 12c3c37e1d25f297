/**
 * `kintsugi agents validate <file|dir|zip>`: the format checks of an agent package offline. Shared
 * skills and MCP servers belong to an installation, so references to them are notes, not problems.
 */
import { Effect, Either } from "effect"
import { lstat, readdir, readFile, stat } from "node:fs/promises"
import { basename, join } from "node:path"
import type { Problem } from "../contract/Problem.ts"
import { MAX_PACKAGE_FILE_BYTES, MAX_PACKAGE_FILES, PACKAGE_PATH, parsePackageDraft, type RawPackageFile } from "./AgentPackage.ts"
import { sandboxConfigFromEnv } from "../tools/Sandbox.ts"
import { mcpServersOf } from "./agentChecks.ts"
import { displayName } from "./packagePaths.ts"
import { DEFAULT_ZIP_CAPS, readZip, unwrapSingleFolder } from "./zip.ts"

export interface CommandIo {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
}

const stdio: CommandIo = {
  out: (line) => void process.stdout.write(`${line}\n`),
  err: (line) => void process.stderr.write(`${line}\n`)
}

export const VALIDATE_USAGE = [
  "usage: kintsugi agents validate <file|dir|zip>",
  "  <name>.md        a single agent file",
  "  <dir>            a package folder (read recursively; symbolic links are not followed)",
  "  <package>.zip    an exported package (one enclosing folder is allowed)",
  "exit: 0 valid, 1 problems found, 2 usage error"
].join("\n")

/** Every terminal line goes through this: package text never reaches the terminal raw. */
const safe = (line: string) => displayName(line)

/** Depth of folders read below the package root; the format itself needs two. */
const MAX_DIR_DEPTH = 8

/** Reads a package folder without following links: regular files only, capped in count and size. */
const readPackageDir = async (root: string): Promise<{ files: Array<RawPackageFile>; problems: Array<Problem> }> => {
  const files: Array<RawPackageFile> = []
  const problems: Array<Problem> = []
  let seen = 0
  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true })
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`
      const full = join(dir, entry.name)
      if (++seen > MAX_PACKAGE_FILES) {
        problems.push({ path: PACKAGE_PATH, message: `more than ${MAX_PACKAGE_FILES} files` })
        return
      }
      const st = await lstat(full)
      if (st.isSymbolicLink()) problems.push({ path: displayName(path), message: "symbolic links are not followed" })
      else if (st.isDirectory()) {
        if (depth >= MAX_DIR_DEPTH) problems.push({ path: displayName(path), message: `folders nested deeper than ${MAX_DIR_DEPTH}` })
        else await walk(full, path, depth + 1)
      } else if (!st.isFile()) problems.push({ path: displayName(path), message: "not a regular file" })
      else if (st.size > MAX_PACKAGE_FILE_BYTES) {
        problems.push({ path: displayName(path), message: `larger than ${MAX_PACKAGE_FILE_BYTES} bytes (${st.size})` })
      } else files.push({ path, content: new Uint8Array(await readFile(full)) })
      if (seen > MAX_PACKAGE_FILES) return
    }
  }
  await walk(root, "", 0)
  return { files, problems }
}

const isZip = (path: string, bytes: Uint8Array) =>
  path.toLowerCase().endsWith(".zip") || (bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes[2] === 3 || bytes[2] === 5))

type Loaded = { readonly files: Array<RawPackageFile>; readonly problems: Array<Problem> } | { readonly usage: string }

const load = async (target: string): Promise<Loaded> => {
  let info
  try {
    info = await stat(target)
  } catch (e) {
    return { usage: `cannot read ${target}: ${e instanceof Error ? e.message : String(e)}` }
  }
  if (info.isDirectory()) return readPackageDir(target)
  if (!info.isFile()) return { usage: `${target} is not a file or folder` }
  if (info.size > DEFAULT_ZIP_CAPS.maxZipBytes) return { usage: `${target} is larger than ${DEFAULT_ZIP_CAPS.maxZipBytes} bytes` }
  const bytes = new Uint8Array(await readFile(target))
  if (isZip(target, bytes)) {
    const entries = await Effect.runPromise(Effect.either(readZip(bytes)))
    if (Either.isLeft(entries)) return { files: [], problems: [...entries.left.problems] }
    return { files: unwrapSingleFolder(entries.right), problems: [] }
  }
  if (!target.toLowerCase().endsWith(".md")) return { usage: `${target}: expected a <name>.md file, a package folder or a .zip` }
  return { files: [{ path: basename(target), content: bytes }], problems: [] }
}

/**
 * Runs the command on its arguments (after `agents validate`). Prints every problem as
 * `path: message`, then notes; or the notes and `ok: <name> v<version> (<audience>)`. Returns the exit
 * code: 0 valid, 1 problems, 2 usage error (including an unreadable target). Never throws for bad input.
 * `env` gives KINTSUGI_SANDBOX: with `off`, granted process tools get a note that they run unconfined.
 */
export const agentsValidateMain = async (
  args: ReadonlyArray<string>,
  io: CommandIo = stdio,
  env: Readonly<Record<string, string | undefined>> = process.env
): Promise<number> => {
  if (args.length === 1 && (args[0] === "-h" || args[0] === "--help")) {
    io.out(VALIDATE_USAGE)
    return 0
  }
  const target = args[0]
  if (args.length !== 1 || target === undefined || target.startsWith("-")) {
    io.err(VALIDATE_USAGE)
    return 2
  }
  const loaded = await load(target)
  if ("usage" in loaded) {
    io.err(safe(`error: ${loaded.usage}`))
    return 2
  }
  const parsed = loaded.files.length > 0 || loaded.problems.length === 0 ? parsePackageDraft(loaded.files) : undefined
  const problems = [...loaded.problems, ...(parsed?.problems ?? [])]
  for (const p of problems) io.out(safe(`${p.path}: ${p.message}`))
  const skills = (parsed?.draft.skills ?? []).filter((s): s is string => typeof s === "string")
  if (skills.length > 0) io.out(safe(`note: shared skills are checked when the agent is installed: ${skills.join(", ")}`))
  const tools = (parsed?.draft.tools ?? []).filter((s): s is string => typeof s === "string")
  const servers = parsed?.draft.audience === "runtime" ? mcpServersOf(tools) : []
  if (servers.length > 0) io.out(safe(`note: MCP servers are checked when the agent is installed: ${servers.join(", ")}`))
  const granted = parsed?.draft.tools === undefined ? ["shell", "git"] : tools.filter((t) => t === "shell" || t === "git")
  if (parsed !== undefined && granted.length > 0 && sandboxConfigFromEnv(env).mode === "off") {
    io.out(`note: ${granted.join(" and ")} would run unconfined here (KINTSUGI_SANDBOX=off): as the runtime's user, able to read and write anything it can`)
  }
  const pkg = parsed?.pkg
  if (problems.length > 0 || pkg === undefined) return 1
  io.out(safe(`ok: ${pkg.name} v${pkg.version} (${pkg.audience})`))
  return 0
}
