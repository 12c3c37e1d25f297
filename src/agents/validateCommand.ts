/**
 * `kintsugi agents validate <file|dir|zip>`: the format checks of an agent package offline. Shared
 * skills and MCP servers belong to an installation, so references to them are notes, not problems.
 */
import { parsePackageDraft } from "./AgentPackage.ts"
import { sandboxConfigFromEnv } from "../tools/Sandbox.ts"
import { mcpServersOf } from "./agentChecks.ts"
import { loadPackageFiles } from "./loadPackageFiles.ts"
import { displayName } from "./packagePaths.ts"

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
  const loaded = await loadPackageFiles(target)
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
