/**
 * Resolves everything a job needs at its start into the job child's envelope: the agent's current
 * version (embedded whole), the binding (project, then installation default), the provider config
 * with its key decrypted, the job boundary, the project's resource limits and whether it keeps
 * transcripts (the services channel then takes each turn); a continued job's history (its parent's
 * transcript replayed). A binding, agent or project
 * change therefore applies to the next job, not this one.
 */
import { Effect, Option, Schema } from "effect"
import { AgentStore } from "../agents/AgentStore.ts"
import { resolveAgentDefinition } from "../agents/resolveAgentDefinition.ts"
import { SkillStore } from "../agents/SkillStore.ts"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import type { JobEnvelope, SkillFile } from "../contract/AgentRuntime.ts"
import type { JobHistory, JobResume, Limits, JobSpec, ResourceLimits } from "../contract/JobSpec.ts"
import type { StoreError } from "../db/StoreError.ts"
import { mcpServersOf } from "../agents/validateAgent.ts"
import { Bindings } from "../providers/Bindings.ts"
import { McpServers } from "../providers/McpServers.ts"
import { ProviderStore } from "../providers/ProviderStore.ts"
import { requestedServiceTools, SERVICE_TOOL_GROUPS, SERVICE_TOOLS } from "../contract/AgentDefinition.ts"
import { JobRoots } from "./JobRoots.ts"
import type { JobRow, JobStore } from "./JobStore.ts"
import { Projects } from "./Projects.ts"
import { ServiceHandlers, ServicesEndpoint } from "./Services.ts"
import { ServiceTokens } from "./ServiceTokens.ts"
import { TRANSCRIPT_ENDPOINT } from "../tools/services/ServiceChannel.ts"
import { parentHistory } from "./transcripts/continuation.ts"
import { TranscriptStore } from "./transcripts/TranscriptStore.ts"
import { resumeOf } from "./transcripts/resume.ts"

/** The job could not be set up; the message says why (it becomes the job's failure message). */
export class JobSetupFailed extends Schema.TaggedError<JobSetupFailed>()("JobSetupFailed", { message: Schema.String }) {}

export interface ResolvedJob {
  readonly envelope: JobEnvelope
  /** Where a resumed job goes on from (also in the envelope's job); undefined for a job's first run. */
  readonly resume: JobResume | undefined
  readonly agentVersion: string
  readonly model: string
  /** The agent's tool grants (kernel tools and MCP grants). */
  readonly tools: ReadonlyArray<string>
  /** The memory and web tools the job got (its services token is bound to exactly these). */
  readonly serviceTools: ReadonlyArray<string>
}

/**
 * The service tools a job of `projectId` gets among those the agent asks for: each needs a handler in
 * this installation and a project that grants it (no project = none), in SERVICE_TOOLS order.
 */
const grantServiceTools = (
  projectId: string,
  agentId: string,
  asked: ReadonlyArray<string> | undefined
): Effect.Effect<ReadonlyArray<string>, never, ServiceHandlers> =>
  Effect.gen(function* () {
    const requested = requestedServiceTools(asked)
    if (projectId === "" || requested.length === 0) return []
    const handlers = yield* ServiceHandlers
    const granted: Array<string> = []
    for (const name of requested) {
      const handler = handlers.find((h) => h.name === name)
      if (handler !== undefined && (yield* handler.refusal({ projectId, agentId })) === undefined) granted.push(name)
    }
    return granted
  })

/** The agent's `tools` with its service tools and groups replaced by the ones granted (by name). */
const withServiceGrants = (tools: ReadonlyArray<string> | undefined, granted: ReadonlyArray<string>): ReadonlyArray<string> | undefined =>
  tools === undefined
    ? undefined
    : [...tools.filter((t) => !SERVICE_TOOLS.includes(t) && !Object.hasOwn(SERVICE_TOOL_GROUPS, t)), ...granted]

/**
 * The resource files of the shared skills the definition lists (only imported custom skills have any),
 * read now like the skills' text: the job sees them at /skills/<skill>/<path>.
 */
const skillFilesOf = (agent: AgentDefinition): Effect.Effect<ReadonlyArray<SkillFile>, never, SkillStore> =>
  Effect.map(
    Effect.flatMap(SkillStore, (s) => s.resources((agent.skills ?? []).map((k) => k.name))),
    (bySkill) =>
      [...bySkill].flatMap(([skill, files]) =>
        files.map((f) => ({ skill, path: f.path, contentBase64: Buffer.from(f.content).toString("base64") }))
      )
  )

const RESOURCE_KEYS: ReadonlyArray<keyof ResourceLimits> = ["memoryMb", "processes", "cpuSec", "tmpMb", "outDirMb"]

/** The job's limits with each resource at the lower of the job's own and the project's; absent on both = the server's. */
const lowerToProject = (limits: Limits, project: ResourceLimits): Limits => {
  const lowered: { -readonly [K in keyof ResourceLimits]: ResourceLimits[K] } = {}
  for (const key of RESOURCE_KEYS) {
    const values = [limits.resources?.[key], project[key]].filter((v) => v !== undefined)
    if (values.length > 0) lowered[key] = Math.min(...values)
  }
  return Object.keys(lowered).length === 0 ? limits : { ...limits, resources: lowered }
}

/** What the job's project sets for it; none for a job without a project or of a project id never created. */
const projectSettings = (projectId: string): Effect.Effect<{ resources: ResourceLimits; transcripts: boolean }, never, Projects> =>
  projectId === ""
    ? Effect.succeed({ resources: {}, transcripts: false })
    : Effect.flatMap(Projects, (p) => p.get(projectId)).pipe(
        Effect.map((project) => ({ resources: project.resources, transcripts: project.transcripts === "full" })),
        Effect.catchTag("ProjectNotFound", () => Effect.succeed({ resources: {}, transcripts: false }))
      )

/**
 * The history of a job continuing `parentId`. The transcript store is looked up, not required: a
 * worker runtime without one (no secret key to open transcripts) fails such a job at setup.
 */
const continuedFrom = (parentId: string): Effect.Effect<JobHistory, JobSetupFailed | StoreError> =>
  Effect.flatMap(Effect.serviceOption(TranscriptStore), (store) =>
    Option.isNone(store)
      ? Effect.fail(new JobSetupFailed({ message: "this worker cannot open transcripts, which a continued job starts from" }))
      : parentHistory(parentId).pipe(
          Effect.provideService(TranscriptStore, store.value),
          Effect.catchTag("JobNotContinuable", (e) => Effect.fail(new JobSetupFailed({ message: `the job it continues ${e.why}` })))
        )
  )

/**
 * Where a resumed job goes on from (its own transcript, resume.ts); a job resumed without a transcript
 * to go on from, or by a worker that cannot open transcripts, fails at setup.
 */
const resumedFrom = (job: JobRow): Effect.Effect<{ history: JobHistory; resume: JobResume }, JobSetupFailed | StoreError, JobStore> =>
  Effect.flatMap(Effect.serviceOption(TranscriptStore), (store) =>
    Option.isNone(store)
      ? Effect.fail(new JobSetupFailed({ message: "this worker cannot open transcripts, which a resumed job goes on from" }))
      : Effect.flatMap(Effect.provideService(resumeOf(job), TranscriptStore, store.value), (from) =>
          from === undefined
            ? Effect.fail(new JobSetupFailed({ message: "it cannot be resumed: its transcript is gone" }))
            : Effect.succeed(from)
        )
  )

/** The version a job runs: the one it ran before it was resumed, the one it is pinned to (an eval, a continuation), else the current one. */
const agentVersionOf = (job: JobRow): number | undefined => {
  const ran = Number(job.agentVersion)
  if (job.resumes.length > 0 && job.agentVersion !== null && Number.isInteger(ran)) return ran
  return job.agentVersionPin ?? undefined
}

/** What building a job's envelope reads: its agent, binding, provider, MCP servers, project, boundary and services token. */
export type EnvelopeServices =
  | AgentStore
  | SkillStore
  | Bindings
  | ProviderStore
  | McpServers
  | JobRoots
  | Projects
  | ServiceHandlers
  | ServiceTokens
  | ServicesEndpoint
  | JobStore

export const buildEnvelope = (job: JobRow): Effect.Effect<ResolvedJob, JobSetupFailed, EnvelopeServices> =>
  Effect.gen(function* () {
    const version = agentVersionOf(job)
    const resolved =
      version === undefined ? yield* resolveAgentDefinition(job.agentName) : yield* (yield* AgentStore).definitionAt(job.agentName, version)
    // Memory and web tools the project does not grant are not created: the job's definition names
    // only those it got, so `job.started` lists exactly what the job has.
    const serviceTools = yield* grantServiceTools(job.projectId, resolved.id, resolved.tools)
    const tools = withServiceGrants(resolved.tools, serviceTools)
    const { tools: _asked, ...rest } = resolved
    const agent: AgentDefinition = tools === undefined ? rest : { ...rest, tools }
    const binding = yield* (yield* Bindings).resolve(job.agentName, job.projectId)
    // A resumed job goes on with the model it ran on: its conversation is that model's.
    if (job.resumes.length > 0 && job.model !== null && job.model !== `${binding.providerId}/${binding.modelId}`) {
      return yield* new JobSetupFailed({
        message: `it cannot be resumed: the agent's binding now names ${binding.providerId}/${binding.modelId}, and it ran on ${job.model}`
      })
    }
    const providers = yield* (yield* ProviderStore).configs([binding.providerId])
    // The MCP servers the agent names travel with their headers decrypted, on the child's stdin only.
    const servers = yield* (yield* McpServers).configs(mcpServersOf(tools))
    const project = yield* projectSettings(job.projectId)
    // A resumed job goes on from its own transcript (which holds its parent's, when it continues one); a
    // continued job starts from its parent's. Opened here, handed over on the child's stdin only.
    const resumed = job.resumes.length > 0 ? yield* resumedFrom(job) : undefined
    const history = resumed?.history ?? (job.parentJobId === null ? undefined : yield* continuedFrom(job.parentJobId))
    const spec: JobSpec = {
      agent,
      task: job.task,
      model: { provider: binding.providerId, id: binding.modelId, ...(binding.thinking === null ? {} : { thinking: binding.thinking }) },
      workspace: job.workspace,
      // The job child lowers these again to the server's own settings, so neither may raise one.
      limits: lowerToProject(job.limits, project.resources),
      ...(servers.length === 0 ? {} : { mcp: { servers } }),
      metadata: { ...job.metadata, jobId: job.id, ...(job.projectId === "" ? {} : { projectId: job.projectId }) },
      ...(history === undefined ? {} : { history }),
      ...(resumed === undefined ? {} : { resume: resumed.resume })
    }
    // The job child checks the workspace against this again: the paths may have changed since the API checked them.
    const boundary = yield* (yield* JobRoots).boundaryFor(job.projectId)
    // A token for this job only, bound to what it got (its transcript endpoint too when the project keeps
    // transcripts); it travels on the child's stdin only.
    const services =
      serviceTools.length === 0 && !project.transcripts
        ? undefined
        : {
            url: yield* (yield* ServicesEndpoint).url,
            token: yield* (yield* ServiceTokens).mint({
              jobId: job.id,
              projectId: job.projectId,
              agentId: agent.id,
              // `memory-role: reviewer` in the package metadata: an independent reviewer.
              memoryRole: yield* Effect.map(Effect.option((yield* AgentStore).get(job.agentName)), (v) =>
                v._tag === "Some" && v.value.package.memoryRole === "reviewer" ? "reviewer" : null
              ),
              tools: project.transcripts ? [...serviceTools, TRANSCRIPT_ENDPOINT] : serviceTools
            }),
            ...(project.transcripts ? { transcript: true } : {})
          }
    const skillFiles = yield* skillFilesOf(agent)
    return {
      envelope: {
        job: spec,
        providers,
        boundary,
        ...(skillFiles.length === 0 ? {} : { skillFiles }),
        ...(services === undefined ? {} : { services })
      },
      resume: resumed?.resume,
      agentVersion: String(agent.version),
      model: `${binding.providerId}/${binding.modelId}`,
      tools: tools ?? [],
      serviceTools
    }
  }).pipe(
    Effect.catchTags({
      AgentUnavailable: (e) => Effect.fail(new JobSetupFailed({ message: e.message })),
      BindingNotFound: (e) => Effect.fail(new JobSetupFailed({ message: e.message })),
      McpServerNotFound: (e) =>
        Effect.fail(new JobSetupFailed({ message: `the agent names an MCP server that is not registered: ${e.message}` })),
      ProviderNotFound: (e) =>
        Effect.fail(new JobSetupFailed({ message: `the agent's binding names a provider that no longer exists: ${e.message}` })),
      StoreUnavailable: (e) => Effect.fail(new JobSetupFailed({ message: e.message })),
      RowInvalid: (e) => Effect.fail(new JobSetupFailed({ message: e.message }))
    })
  )
