/**
 * Whether a job request may be queued: the one check of POST /api/jobs, the portal's run form and
 * their re-runs. Every problem at once — the JobInput schema, the workspace against the job roots
 * (JobRoots.decodeJob) and the agent (unknown, disabled, member-only or invalid; with `agentVersion`, that
 * stored version, which must exist): a request that can
 * only fail is refused here instead of becoming a failed job record.
 */
import { Effect, Either } from "effect"
import { AgentStore } from "../agents/AgentStore.ts"
import { resolveAgentDefinition } from "../agents/resolveAgentDefinition.ts"
import type { SkillStore } from "../agents/SkillStore.ts"
import type { Problem } from "../contract/Problem.ts"
import { JobRoots } from "./JobRoots.ts"
import type { JobInput } from "./JobStore.ts"

const field = (body: unknown, key: string): unknown => (body !== null && typeof body === "object" ? (body as Record<string, unknown>)[key] : undefined)
const agentOf = (body: unknown): string | undefined => {
  const agent = field(body, "agent")
  return typeof agent === "string" && agent !== "" ? agent : undefined
}
/** `agentVersion` when it is a version number (the schema reports anything else). */
const versionOf = (body: unknown): number | undefined => {
  const v = field(body, "agentVersion")
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined
}

/** The decoded job, or every problem of the request (paths as in JobInput: `agent`, `workspace.root`, …). */
export const admitJob = (body: unknown): Effect.Effect<Either.Either<JobInput, ReadonlyArray<Problem>>, never, JobRoots | AgentStore | SkillStore> =>
  Effect.gen(function* () {
    const decoded = yield* (yield* JobRoots).decodeJob(body)
    const name = agentOf(body)
    const version = versionOf(body)
    const agentProblems: Array<Problem> =
      name === undefined
        ? []
        : yield* (version === undefined ? resolveAgentDefinition(name) : Effect.flatMap(AgentStore, (s) => s.definitionAt(name, version))).pipe(
            Effect.as([]),
            Effect.catchTag("AgentUnavailable", (e) => Effect.succeed([{ path: "agent", message: e.message }]))
          )
    if (Either.isLeft(decoded)) return Either.left([...agentProblems, ...decoded.left])
    return agentProblems.length > 0 ? Either.left(agentProblems) : decoded
  })
