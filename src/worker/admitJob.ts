/**
 * Whether a job request may be queued: the one check of POST /api/jobs, the portal's run form and
 * their re-runs. Every problem at once — the JobInput schema, the workspace against the job roots
 * (JobRoots.decodeJob) and the agent (unknown, disabled, member-only or invalid): a request that can
 * only fail is refused here instead of becoming a failed job record.
 */
import { Effect, Either } from "effect"
import type { AgentStore } from "../agents/AgentStore.ts"
import { resolveAgentDefinition } from "../agents/resolveAgentDefinition.ts"
import type { SkillStore } from "../agents/SkillStore.ts"
import type { Problem } from "../contract/Problem.ts"
import { JobRoots } from "./JobRoots.ts"
import type { JobInput } from "./JobStore.ts"

const agentOf = (body: unknown): string | undefined => {
  const agent = body !== null && typeof body === "object" ? (body as Record<string, unknown>)["agent"] : undefined
  return typeof agent === "string" && agent !== "" ? agent : undefined
}

/** The decoded job, or every problem of the request (paths as in JobInput: `agent`, `workspace.root`, …). */
export const admitJob = (body: unknown): Effect.Effect<Either.Either<JobInput, ReadonlyArray<Problem>>, never, JobRoots | AgentStore | SkillStore> =>
  Effect.gen(function* () {
    const decoded = yield* (yield* JobRoots).decodeJob(body)
    const name = agentOf(body)
    const agentProblems: Array<Problem> =
      name === undefined
        ? []
        : yield* resolveAgentDefinition(name).pipe(
            Effect.as([]),
            Effect.catchTag("AgentUnavailable", (e) => Effect.succeed([{ path: "agent", message: e.message }]))
          )
    if (Either.isLeft(decoded)) return Either.left([...agentProblems, ...decoded.left])
    return agentProblems.length > 0 ? Either.left(agentProblems) : decoded
  })
