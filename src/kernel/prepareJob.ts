/**
 * The environment's checks of a typed job (ARCHITECTURE §4): workspace paths that are missing,
 * overlap or lie outside the envelope's boundary, an unknown provider or model, tools this runtime
 * cannot create, MCP grants of servers the job does not list, process tools without their sandbox.
 * Every problem at once; the spec is not decoded again (decodeJob.ts did that once).
 */
import type { Api, Model } from "@earendil-works/pi-ai"
import { Effect, Either } from "effect"
import { KERNEL_TOOLS } from "../contract/AgentDefinition.ts"
import { JobRefused, type JobBoundary } from "../contract/AgentRuntime.ts"
import type { JobSpec } from "../contract/JobSpec.ts"
import type { Problem } from "../contract/Problem.ts"
import { compileDenyPatterns, type DenyMatcher } from "../tools/denyPatterns.ts"
import { mcpGrantProblems } from "../tools/mcp/mcpGrants.ts"
import type { SandboxShape, SandboxStatus } from "../tools/Sandbox.ts"
import type { ResolvedWorkspace } from "../tools/Tool.ts"
import { resolveWorkspace } from "../job/confinement.ts"
import { boundaryCheck, canonicalBoundary } from "../tools/workspaceBoundary.ts"
import type { JobParts } from "./decodeJob.ts"
import type { JobModels } from "./PiAiModels.ts"
import { supportedThinking } from "./PiAiModels.ts"
import { chooseThinking, type ThinkingChoice } from "./thinking.ts"

export interface PreparedJob {
  readonly spec: JobSpec
  readonly workspace: ResolvedWorkspace
  readonly model: Model<Api>
  readonly thinking: ThinkingChoice
  /** Tool names the agent gets, in a stable order (the prompt prefix depends on it). */
  readonly toolNames: ReadonlyArray<string>
  /** The agent's denyCommandPatterns, compiled with re2js. */
  readonly deny: DenyMatcher
  /** How shell and git run; undefined when the job grants neither. */
  readonly sandbox: SandboxStatus | undefined
  /** Per shared skill, the paths of its resource files under /skills/<skill>/ (absent: none). */
  readonly skillFiles?: ReadonlyMap<string, ReadonlyArray<string>>
}

/** What the checks consult: the job's models, the envelope's boundary, the sandbox. */
export interface JobEnvironment {
  readonly jobModels: JobModels
  /** Problems of the provider configs themselves (duplicate ids, unknown built-in providers). */
  readonly providerProblems: ReadonlyArray<Problem>
  readonly boundary: JobBoundary | undefined
  readonly sandbox: SandboxShape
}

/**
 * MCP grants naming a server the job does not list (the servers' tools are checked when they connect;
 * unknown tool names are schema problems, and every kernel tool is created).
 */
const toolProblems = (parts: JobParts): ReadonlyArray<Problem> => mcpGrantProblems(parts.agent?.tools, parts.mcp?.servers)

/** The process tools (shell, git) an agent grants, with where: no `tools` list grants every kernel tool. */
const processToolGrants = (agent: JobSpec["agent"]): ReadonlyArray<{ readonly path: string; readonly name: string }> =>
  agent.tools === undefined
    ? [{ path: "agent.tools", name: "shell and git (granted by default when no tools are listed)" }]
    : agent.tools.flatMap((name, i) => (name === "shell" || name === "git" ? [{ path: `agent.tools.${i}`, name }] : []))

/** What the environment checks found for a job's parts. */
interface Checked {
  readonly problems: ReadonlyArray<Problem>
  readonly workspace: ResolvedWorkspace | undefined
  readonly model: Model<Api> | undefined
  readonly sandbox: SandboxStatus | undefined
}

/** Every problem the environment finds with `parts`: a whole spec, or what decoded of a refused one. */
export const checkJob = (parts: JobParts, env: JobEnvironment): Effect.Effect<Checked> =>
  Effect.gen(function* () {
    const problems: Array<Problem> = [...env.providerProblems, ...toolProblems(parts)]
    // Only a job granting shell or git needs the sandbox (and pays for the one-time probe).
    const grants = parts.agent === undefined ? [] : processToolGrants(parts.agent)
    const refusal = grants.length === 0 ? undefined : yield* env.sandbox.refusal
    if (refusal !== undefined) problems.push(...grants.map((g) => ({ path: g.path, message: `${g.name} ${refusal}` })))
    const check = env.boundary === undefined ? undefined : boundaryCheck(yield* canonicalBoundary(env.boundary))
    const workspace =
      parts.workspace === undefined
        ? undefined
        : yield* resolveWorkspace(parts.workspace, check).pipe(
            Effect.catchTag("WorkspaceInvalid", (invalid) => {
              problems.push(...invalid.problems)
              return Effect.succeed(undefined)
            })
          )
    const model = parts.model === undefined ? undefined : env.jobModels.find(parts.model.provider, parts.model.id)
    if (parts.model !== undefined && model === undefined) {
      problems.push({ path: "model", message: `no model "${parts.model.id}" in a provider config with id "${parts.model.provider}"` })
    }
    const sandbox = grants.length === 0 || refusal !== undefined ? undefined : yield* env.sandbox.status
    return { problems, workspace, model, sandbox }
  })

/** The prepared job, or a refusal listing every problem the environment finds. */
export const prepareJob = (spec: JobSpec, env: JobEnvironment): Effect.Effect<PreparedJob, JobRefused> =>
  Effect.gen(function* () {
    const { problems, workspace, model, sandbox } = yield* checkJob(spec, env)
    // decodeJob refused patterns re2js cannot compile; compiled again here for the matcher.
    const deny = compileDenyPatterns(spec.agent.denyCommandPatterns ?? [])
    if (problems.length > 0 || workspace === undefined || model === undefined || Either.isLeft(deny)) {
      const denyProblems = Either.isLeft(deny)
        ? deny.left.map((p) => ({ path: `agent.denyCommandPatterns.${p.index}`, message: p.message }))
        : []
      return yield* Effect.fail(new JobRefused({ problems: [...problems, ...denyProblems] }))
    }
    const requested = spec.model.thinking ?? spec.agent.thinking ?? "off"
    const granted: ReadonlyArray<string> = spec.agent.tools ?? KERNEL_TOOLS
    const toolNames = KERNEL_TOOLS.filter((t) => granted.includes(t))
    return { spec, workspace, model, thinking: chooseThinking(requested, supportedThinking(model)), toolNames, deny: deny.right, sandbox }
  })
