/**
 * The one decoder of untrusted job documents (the job child's stdin): a typed `JobSpec`, or every
 * problem at once with the parts that did decode, so the environment checks can still run on them.
 * Inside the kernel a spec is typed and never decoded again.
 */
import { Either, Schema } from "effect"
import { AgentDefinition, duplicateSkillProblems } from "../contract/AgentDefinition.ts"
import { JobHistory, JobMcp, JobResume, JobMetadata, JobModel, type JobSpec, JobTask, Limits, Workspace } from "../contract/JobSpec.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { compileDenyPatterns } from "../tools/denyPatterns.ts"

/** The parts of a job document that decoded; a whole spec is one too. */
export type JobParts = { readonly [K in keyof JobSpec]?: JobSpec[K] }

/** A refused document: every problem, and what of it decoded (never a raw value). */
export interface JobDecodeFailure {
  readonly problems: ReadonlyArray<Problem>
  readonly parts: JobParts
}

const OPTIONAL = new Set<string>(["mcp", "metadata", "history", "resume"])
/** One schema per top-level field, each the one JobSpec uses: decoding part by part keeps what is well-formed. */
const PART_SCHEMAS = {
  agent: AgentDefinition,
  task: JobTask,
  model: JobModel,
  workspace: Workspace,
  limits: Limits,
  mcp: JobMcp,
  metadata: JobMetadata,
  history: JobHistory,
  resume: JobResume
} satisfies Record<keyof JobSpec, Schema.Schema.Any>

const KEYS = Object.keys(PART_SCHEMAS) as Array<keyof JobSpec>
/** The document's top level: an object (its keys are checked against KEYS, its parts one by one). */
const Top = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** The two agent fields checked beyond the schema, read leniently so they are checked even when the agent is malformed. */
const AgentExtras = Schema.Struct({
  skills: Schema.optional(Schema.Unknown),
  denyCommandPatterns: Schema.optional(Schema.Array(Schema.Unknown))
})

const prefixed = (prefix: string, problems: ReadonlyArray<Problem>): Array<Problem> =>
  problems.map((p) => ({ path: p.path === "(root)" ? prefix : `${prefix}.${p.path}`, message: p.message }))

/** Problems the agent's schema cannot see: duplicate skill names (also beside a malformed skill) and deny patterns re2js refuses. */
const agentExtraProblems = (agent: unknown): Array<Problem> => {
  const extras = Schema.decodeUnknownOption(AgentExtras)(agent)
  if (extras._tag === "None") return []
  const problems = duplicateSkillProblems(extras.value.skills, "agent.skills")
  const patterns = extras.value.denyCommandPatterns ?? []
  if (patterns.every((p): p is string => typeof p === "string")) {
    const compiled = compileDenyPatterns(patterns)
    if (Either.isLeft(compiled)) {
      for (const p of compiled.left) problems.push({ path: `agent.denyCommandPatterns.${p.index}`, message: p.message })
    }
  }
  return problems
}

/** A resume goes on from a history, and counts no more of its messages as answered than it holds. */
const resumeProblems = (parts: JobParts, historyGiven: boolean): Array<Problem> => {
  const { resume, history } = parts
  if (resume === undefined) return []
  if (!historyGiven) return [{ path: "resume", message: "needs a history: the conversation the job resumes from" }]
  if (history !== undefined && resume.answeredMessages > history.messages.length) {
    return [
      {
        path: "resume.answeredMessages",
        message: `must not exceed the history's ${history.messages.length} messages, got ${resume.answeredMessages}`
      }
    ]
  }
  return []
}

/**
 * Decodes an untrusted job document. Refuses with every problem at once: schema problems (unknown
 * tools and invalid skill names among them), duplicate skill names and deny patterns re2js cannot
 * compile. Environment checks (workspace, model, sandbox) are `AgentRuntime.start`'s.
 */
export const decodeJob = (input: unknown): Either.Either<JobSpec, JobDecodeFailure> => {
  const top = Schema.decodeUnknownEither(Top)(input)
  if (Either.isLeft(top) || Array.isArray(input)) {
    return Either.left({ problems: [{ path: "(root)", message: "must be a JSON object" }], parts: {} })
  }
  const problems: Array<Problem> = Object.keys(top.right)
    .filter((k) => !(KEYS as Array<string>).includes(k))
    .map((k) => ({ path: k, message: `is unexpected, expected one of ${KEYS.join(", ")}` }))
  const parts: Record<string, unknown> = {}
  for (const [key, schema] of Object.entries(PART_SCHEMAS) as Array<[keyof JobSpec, Schema.Schema<unknown, unknown>]>) {
    if (!Object.hasOwn(top.right, key)) {
      if (!OPTIONAL.has(key)) problems.push({ path: key, message: "is missing" })
      continue
    }
    const part = decodeAll(schema)(top.right[key])
    if (Either.isRight(part)) parts[key] = part.right
    // The schema's own uniqueness message is replaced by one problem per duplicate (agentExtraProblems).
    else
      problems.push(
        ...prefixed(
          key,
          part.left.filter((p) => p.message !== "skill names must be unique")
        )
      )
  }
  if (Object.hasOwn(top.right, "agent")) problems.push(...agentExtraProblems(top.right.agent))
  problems.push(...resumeProblems(parts as JobParts, Object.hasOwn(top.right, "history")))
  if (problems.length > 0) return Either.left({ problems, parts: parts as JobParts })
  return Either.right(parts as JobSpec)
}
