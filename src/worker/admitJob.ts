/**
 * Whether a job request may be queued: the one check of POST /api/jobs, the portal's run form and
 * their re-runs. Every problem at once — the JobInput schema, the workspace against the job roots
 * (JobRoots.decodeJob) and the agent (unknown, disabled, member-only, invalid, or with no model binding
 * for the job's project; with `agentVersion`, that stored version, which must exist): a request that can
 * only fail is refused here instead of becoming a failed job record.
 */
import { Effect, Either, Option, Schema } from "effect"
import { AgentStore } from "../agents/AgentStore.ts"
import { resolveAgentDefinition } from "../agents/resolveAgentDefinition.ts"
import type { SkillStore } from "../agents/SkillStore.ts"
import type { Problem } from "../contract/Problem.ts"
import { Bindings } from "../providers/Bindings.ts"
import { JobRoots } from "./JobRoots.ts"
import type { JobInput } from "./JobStore.ts"

/**
 * The fields the agent check needs, each decoded on its own: a field that does not decode is absent here
 * (JobRoots.decodeJob reports it), and the others still count.
 */
const agentField = Schema.decodeUnknownOption(Schema.Struct({ agent: Schema.NonEmptyString }))
const projectField = Schema.decodeUnknownOption(Schema.Struct({ project: Schema.NonEmptyString }))
const versionField = Schema.decodeUnknownOption(Schema.Struct({ agentVersion: Schema.Int.pipe(Schema.positive()) }))

/** An agent no binding resolves for: it could only fail at job start, so it is refused here, saying what to do. */
const unbound = (agent: string, project: string | undefined): Problem => ({
  path: "agent",
  message: `${
    project === undefined
      ? `agent "${agent}" is not bound to a model`
      : `agent "${agent}" has no model binding for project "${project}" and no installation default`
  }: bind it to a provider in Bindings (/agents/${encodeURIComponent(agent)}/binding), then start the job again`
})

/** The decoded job, or every problem of the request (paths as in JobInput: `agent`, `workspace.root`, …). */
export const admitJob = (
  body: unknown
): Effect.Effect<Either.Either<JobInput, ReadonlyArray<Problem>>, never, JobRoots | AgentStore | SkillStore | Bindings> =>
  Effect.gen(function* () {
    const decoded = yield* (yield* JobRoots).decodeJob(body)
    const name = Option.getOrUndefined(Option.map(agentField(body), (b) => b.agent))
    const project = Option.getOrUndefined(Option.map(projectField(body), (b) => b.project))
    const version = Option.getOrUndefined(Option.map(versionField(body), (b) => b.agentVersion))
    const bindings = yield* Bindings
    const agentProblems: Array<Problem> =
      name === undefined
        ? []
        : yield* (
            version === undefined ? resolveAgentDefinition(name) : Effect.flatMap(AgentStore, (s) => s.definitionAt(name, version))
          ).pipe(
            Effect.zipRight(bindings.resolve(name, project ?? "")),
            Effect.as([]),
            Effect.catchTags({
              AgentUnavailable: (e) => Effect.succeed([{ path: "agent", message: e.message }]),
              BindingNotFound: () => Effect.succeed([unbound(name, project)])
            })
          )
    if (Either.isLeft(decoded)) return Either.left([...agentProblems, ...decoded.left])
    return agentProblems.length > 0 ? Either.left(agentProblems) : decoded
  })
