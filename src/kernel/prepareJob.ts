/**
 * Turns an untrusted job document into a job the loop can run, or refuses it with every problem at
 * once: schema problems, deny patterns that re2js cannot compile, workspace paths that are missing
 * or overlap or lie outside the envelope's boundary, an unknown provider or model, tools this runtime
 * cannot create.
 */
import type { Api, Model } from "@earendil-works/pi-ai"
import { Effect, Either } from "effect"
import { duplicateSkillProblems, KERNEL_TOOLS } from "../contract/AgentDefinition.ts"
import { JobRefused, type JobBoundary } from "../contract/AgentRuntime.ts"
import { JobSpec, Workspace as JobSpecWorkspace } from "../contract/JobSpec.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { compileDenyPatterns, type DenyMatcher } from "../tools/denyPatterns.ts"
import { mcpGrantProblems } from "../tools/mcp/mcpTools.ts"
import type { ResolvedWorkspace } from "../tools/Tool.ts"
import { resolveWorkspace } from "../tools/Workspace.ts"
import { boundaryCheck, canonicalBoundary } from "../tools/workspaceBoundary.ts"
import type { JobModels } from "./PiAiModels.ts"
import { supportedThinking } from "./PiAiModels.ts"
import { chooseThinking, type ThinkingChoice } from "./thinking.ts"

/** Kernel tools this runtime can create today; the rest of KERNEL_TOOLS is refused by name. */
export const AVAILABLE_TOOLS: ReadonlyArray<string> = ["read", "ls", "grep", "find", "write", "edit", "shell", "git"]

export interface PreparedJob {
  readonly spec: JobSpec
  readonly workspace: ResolvedWorkspace
  readonly model: Model<Api>
  readonly thinking: ThinkingChoice
  /** Tool names the agent gets, in a stable order (the prompt prefix depends on it). */
  readonly toolNames: ReadonlyArray<string>
  /** The agent's denyCommandPatterns, compiled with re2js. */
  readonly deny: DenyMatcher
}

/** Reads a nested field of an untrusted document, or undefined. */
const pluck = (doc: unknown, ...keys: ReadonlyArray<string>): unknown =>
  keys.reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), doc)
const strings = (v: unknown): ReadonlyArray<string> | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === "string") ? (v as ReadonlyArray<string>) : undefined

/**
 * Names the schema accepts but this runtime cannot create yet (unknown names are schema problems), and
 * MCP grants naming a server the job does not list (the servers' tools are checked when they connect).
 */
const toolProblems = (job: unknown): Array<Problem> => {
  const problems: Array<Problem> = []
  const servers = pluck(job, "mcp", "servers")
  const serverNames = Array.isArray(servers) ? servers.map((s) => pluck(s, "name")) : []
  const tools = strings(pluck(job, "agent", "tools"))
  tools?.forEach((name, i) => {
    if ((KERNEL_TOOLS as ReadonlyArray<string>).includes(name) && !AVAILABLE_TOOLS.includes(name)) {
      problems.push({ path: `agent.tools.${i}`, message: `tool "${name}" is not available in this runtime version yet` })
    }
  })
  problems.push(...mcpGrantProblems(tools, serverNames)) // [mcp] issue 11
  return problems
}

/** The process tools (shell, git) a job grants, with where: no `tools` list grants every kernel tool. */
export const processToolGrants = (job: unknown): ReadonlyArray<{ readonly path: string; readonly name: string }> => {
  const agent = pluck(job, "agent")
  if (agent !== null && typeof agent === "object" && !Object.hasOwn(agent, "tools")) {
    return [{ path: "agent.tools", name: "shell and git (granted by default when no tools are listed)" }]
  }
  return (strings(pluck(job, "agent", "tools")) ?? []).flatMap((name, i) =>
    name === "shell" || name === "git" ? [{ path: `agent.tools.${i}`, name }] : []
  )
}

/**
 * Every problem of `job` at once, or the prepared job. The checks beyond the schema run on whatever
 * part of the document is well-formed, so one refusal lists schema and workspace problems together.
 * `extra` are problems found outside (e.g. the sandbox a granted process tool needs).
 */
export const prepareJob = (
  job: unknown,
  jobModels: JobModels,
  boundary?: JobBoundary,
  extra: ReadonlyArray<Problem> = []
): Effect.Effect<PreparedJob, JobRefused> =>
  Effect.gen(function* () {
    const decoded = decodeAll(JobSpec)(job)
    const problems: Array<Problem> = Either.isLeft(decoded)
      ? decoded.left.filter((p) => p.message !== "skill names must be unique")
      : []
    problems.push(...extra)
    problems.push(...duplicateSkillProblems(pluck(job, "agent", "skills"), "agent.skills"))
    problems.push(...toolProblems(job))
    const compiled = compileDenyPatterns(strings(pluck(job, "agent", "denyCommandPatterns")) ?? [])
    if (Either.isLeft(compiled)) {
      for (const p of compiled.left) problems.push({ path: `agent.denyCommandPatterns.${p.index}`, message: p.message })
    }
    const ws = decodeAll(JobSpecWorkspace)(pluck(job, "workspace"))
    const workspace = Either.isRight(ws)
      ? yield* resolveWorkspace(ws.right, boundary === undefined ? undefined : boundaryCheck(yield* canonicalBoundary(boundary))).pipe(
          Effect.catchTag("WorkspaceInvalid", (invalid) => {
            problems.push(...invalid.problems)
            return Effect.succeed(undefined)
          })
        )
      : undefined
    const provider = pluck(job, "model", "provider")
    const id = pluck(job, "model", "id")
    const model = typeof provider === "string" && typeof id === "string" ? jobModels.find(provider, id) : undefined
    if (model === undefined && typeof provider === "string" && typeof id === "string" && provider !== "" && id !== "") {
      problems.push({ path: "model", message: `no model "${id}" in a provider config with id "${provider}"` })
    }
    if (problems.length > 0 || Either.isLeft(decoded) || Either.isLeft(compiled) || workspace === undefined || model === undefined) {
      return yield* Effect.fail(new JobRefused({ problems }))
    }
    const spec = decoded.right
    const requested = spec.model.thinking ?? spec.agent.thinking ?? "off"
    const granted = spec.agent.tools ?? AVAILABLE_TOOLS
    const toolNames = KERNEL_TOOLS.filter((t) => granted.includes(t))
    return { spec, workspace, model, thinking: chooseThinking(requested, supportedThinking(model)), toolNames, deny: compiled.right }
  })
