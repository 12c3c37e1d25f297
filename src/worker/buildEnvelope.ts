/**
 * Resolves everything a job needs at its start into the job child's envelope: the agent's current
 * version (embedded whole), the binding (project, then installation default), the provider config
 * with its key decrypted, the job boundary. A binding or agent change therefore applies to the next job, not this one.
 */
import { Effect, Schema } from "effect"
import type { AgentStore } from "../agents/AgentStore.ts"
import { resolveAgentDefinition } from "../agents/resolveAgentDefinition.ts"
import type { SkillStore } from "../agents/SkillStore.ts"
import type { JobEnvelope } from "../contract/AgentRuntime.ts"
import type { JobSpec } from "../contract/JobSpec.ts"
import { mcpServersOf } from "../agents/validateAgent.ts"
import { Bindings } from "../providers/Bindings.ts"
import { McpServers } from "../providers/McpServers.ts"
import { ProviderStore } from "../providers/ProviderStore.ts"
import { JobRoots } from "./JobRoots.ts"
import type { JobRow } from "./JobStore.ts"

/** The job could not be set up; the message says why (it becomes the job's failure message). */
export class JobSetupFailed extends Schema.TaggedError<JobSetupFailed>()("JobSetupFailed", { message: Schema.String }) {}

export interface ResolvedJob {
  readonly envelope: JobEnvelope
  readonly agentVersion: string
  readonly model: string
  /** The agent's tool grants (kernel tools and MCP grants). */
  readonly tools: ReadonlyArray<string>
}

export const buildEnvelope = (
  job: JobRow
): Effect.Effect<ResolvedJob, JobSetupFailed, AgentStore | SkillStore | Bindings | ProviderStore | McpServers | JobRoots> =>
  Effect.gen(function* () {
    const agent = yield* resolveAgentDefinition(job.agentName)
    const binding = yield* (yield* Bindings).resolve(job.agentName, job.projectId)
    const providers = yield* (yield* ProviderStore).configs([binding.providerId])
    // The MCP servers the agent names travel with their headers decrypted, on the child's stdin only.
    const servers = yield* (yield* McpServers).configs(mcpServersOf(agent.tools))
    const spec: JobSpec = {
      agent,
      task: job.task,
      model: { provider: binding.providerId, id: binding.modelId, ...(binding.thinking === null ? {} : { thinking: binding.thinking }) },
      workspace: job.workspace,
      limits: job.limits,
      ...(servers.length === 0 ? {} : { mcp: { servers } }),
      metadata: { ...job.metadata, jobId: job.id, ...(job.projectId === "" ? {} : { projectId: job.projectId }) }
    }
    // The job child checks the workspace against this again: the paths may have changed since the API checked them.
    const boundary = yield* (yield* JobRoots).boundaryFor(job.projectId)
    return {
      envelope: { job: spec, providers, boundary },
      agentVersion: String(agent.version),
      model: `${binding.providerId}/${binding.modelId}`,
      tools: agent.tools ?? []
    }
  }).pipe(
    Effect.catchTags({
      AgentUnavailable: (e) => Effect.fail(new JobSetupFailed({ message: e.message })),
      BindingNotFound: (e) => Effect.fail(new JobSetupFailed({ message: e.message })),
      McpServerNotFound: (e) => Effect.fail(new JobSetupFailed({ message: `the agent names an MCP server that is not registered: ${e.message}` })),
      ProviderNotFound: (e) => Effect.fail(new JobSetupFailed({ message: `the agent's binding names a provider that no longer exists: ${e.message}` }))
    })
  )
