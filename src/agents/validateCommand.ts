/**
 * `kintsugi agents validate <file|dir|zip>`: the format checks of an agent package. Shared skills are a
 * note; MCP grants are checked against `--mcp-servers` or the installation's registry when it can be read.
 */
import { basename, resolve } from "node:path"
import { parsePackageDraft } from "./AgentPackage.ts"
import { adaptAgentFiles, type ImportOptions, isClaudeOnlyTool, type ToolMapping } from "./interop.ts"
import { isSkillUpload, parseSkillFiles } from "./skillImport.ts"
import { sandboxConfigFromEnv } from "../tools/Sandbox.ts"
import type { McpRegistry } from "./registeredMcpServers.ts"
import { installationProblems, mcpServersOf } from "./validateAgent.ts"
import { loadPackageFiles } from "./loadPackageFiles.ts"
import { displayName } from "../contract/packagePaths.ts"

export interface CommandIo {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
}

const stdio: CommandIo = {
  out: (line) => void process.stdout.write(`${line}\n`),
  err: (line) => void process.stderr.write(`${line}\n`)
}

/** Every terminal line goes through this: package text never reaches the terminal raw. */
const safe = (line: string) => displayName(line)

/** What `agents validate` found: every problem, the warnings and notes, and the package when it is valid. */
interface ValidationReport {
  readonly problems: ReadonlyArray<{ readonly path: string; readonly message: string }>
  /** What an import would leave out: one line per Claude Code tool dropped. */
  readonly warnings: ReadonlyArray<string>
  readonly notes: ReadonlyArray<string>
  /** How tool names of a Claude Code file (or a skill's allowed-tools) were mapped; `to: null` = no equivalent. */
  readonly toolMapping: ReadonlyArray<ToolMapping>
  readonly package?: { readonly name: string; readonly version: string; readonly audience: string }
}

/** `--mcp-servers a,b` as a set (empty entries dropped: `""` = no server is registered). */
const parseMcpServerList = (list: string): ReadonlySet<string> =>
  new Set(
    list
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "")
  )

/**
 * Checks the package at `target`; `{ usage }` when it cannot be read at all. `env` gives
 * KINTSUGI_SANDBOX (with `off`, granted process tools get a note that they run unconfined) and the
 * installation whose registered MCP servers the grants are checked against, unless `mcpServers` is
 * given; the registry is read only when the package grants MCP tools. Unreadable registry: a note.
 * `strict` refuses Claude Code tools without an equivalent, as a strict import does.
 */
const validatePackage = async (
  target: string,
  env: Readonly<Record<string, string | undefined>>,
  mcpServers?: ReadonlySet<string>,
  options: ImportOptions = {}
): Promise<ValidationReport | { readonly usage: string }> => {
  const loaded = await loadPackageFiles(target)
  if ("usage" in loaded) return { usage: loaded.usage }
  if (isSkillUpload(loaded.files)) {
    // An Agent Skill: a SKILL.md, or its folder or ZIP; the folder's name names a skill without one.
    const folder =
      loaded.files.length > 0 && !target.toLowerCase().endsWith(".md") && !target.toLowerCase().endsWith(".zip")
        ? basename(resolve(target))
        : undefined
    const skill = parseSkillFiles(loaded.files, folder)
    const problems = [...loaded.problems, ...skill.problems]
    return {
      problems,
      warnings: [],
      notes: skill.notes,
      toolMapping: skill.toolMapping,
      ...(problems.length > 0 || skill.skill === undefined
        ? {}
        : { package: { name: skill.skill.name, version: skill.skill.version ?? "-", audience: "shared skill" } })
    }
  }
  // Claude Code subagent files are adapted first (tool names mapped, foreign keys kept in metadata).
  const adapted = adaptAgentFiles(loaded.files, options)
  const parsed = loaded.files.length > 0 || loaded.problems.length === 0 ? parsePackageDraft(adapted.files) : undefined
  const problems = [...loaded.problems, ...adapted.problems, ...(parsed?.problems ?? [])]
  const notes: Array<string> = [...adapted.notes]
  const skills = (parsed?.draft.skills ?? []).filter((s): s is string => typeof s === "string")
  if (skills.length > 0) notes.push(`shared skills are checked when the agent is installed: ${skills.join(", ")}`)
  const tools = (parsed?.draft.tools ?? []).filter((s): s is string => typeof s === "string")
  const servers = parsed?.draft.audience === "runtime" ? mcpServersOf(tools) : []
  if (parsed !== undefined && servers.length > 0) {
    const registry: McpRegistry =
      mcpServers !== undefined ? { names: mcpServers } : await import("./registeredMcpServers.ts").then((m) => m.registeredMcpServers(env))
    if ("names" in registry) problems.push(...installationProblems(parsed.draft, { mcpServers: registry.names }))
    else {
      notes.push(`MCP servers are checked when the agent is installed: ${servers.join(", ")}`)
      if (registry.unavailable !== undefined) notes.push(`the installation's MCP servers could not be read: ${registry.unavailable}`)
    }
  }
  const granted = parsed?.draft.tools === undefined ? ["shell", "git"] : tools.filter((t) => t === "shell" || t === "git")
  if (parsed !== undefined && granted.length > 0 && sandboxConfigFromEnv(env).mode === "off") {
    notes.push(
      `${granted.join(" and ")} would run unconfined here (KINTSUGI_SANDBOX=off): as the runtime's user, able to read and write anything it can`
    )
  }
  const pkg = parsed?.pkg
  return {
    problems,
    warnings: adapted.warnings,
    notes,
    toolMapping: adapted.toolMapping,
    ...(problems.length > 0 || pkg === undefined
      ? {}
      : { package: { name: pkg.name, version: String(pkg.version), audience: pkg.audience } })
  }
}

/**
 * Validates `target` (a file, folder or .zip). Prints every problem as `path: message`, then warnings
 * and notes; or those and `ok: <name> v<version> (<audience>)`; with `json`, one JSON object (the
 * ValidationReport). `mcpServers` (`a,b`) replaces the installation's registry; `strict` refuses what an
 * import would drop. Returns the exit code: 0 valid, 1 problems, 2 an unreadable target. Never throws
 * for bad input.
 */
export const agentsValidate = async (
  target: string,
  io: CommandIo = stdio,
  env: Readonly<Record<string, string | undefined>>,
  options: { readonly json?: boolean; readonly strict?: boolean; readonly mcpServers?: string | undefined } = {}
): Promise<number> => {
  const report = await validatePackage(target, env, options.mcpServers === undefined ? undefined : parseMcpServerList(options.mcpServers), {
    strict: options.strict
  })
  if ("usage" in report) {
    io.err(safe(`error: ${report.usage}`))
    return 2
  }
  if (options.json === true) io.out(JSON.stringify(report))
  else {
    for (const p of report.problems) io.out(safe(`${p.path}: ${p.message}`))
    for (const w of report.warnings) io.out(safe(`warning: ${w}`))
    for (const n of report.notes) io.out(safe(`note: ${n}`))
    const none = (from: string) => (options.strict !== true && isClaudeOnlyTool(from) ? "(dropped)" : "(none)")
    if (report.toolMapping.length > 0)
      io.out(safe(`tools: ${report.toolMapping.map((m) => `${m.from}→${m.to ?? none(m.from)}`).join(", ")}`))
    if (report.package !== undefined) io.out(safe(`ok: ${report.package.name} v${report.package.version} (${report.package.audience})`))
  }
  return report.package === undefined ? 1 : 0
}
