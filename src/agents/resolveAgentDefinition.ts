/**
 * Name → the job's AgentDefinition, as the worker needs it at job start: a built-in first, else an
 * enabled custom agent at its current version, with shared skills embedded as they are now (a skill
 * edit applies at the next job). Unknown, disabled, member and invalid agents fail with the reason.
 */
import { Effect } from "effect"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import { AgentStore } from "./AgentStore.ts"
import { AgentUnavailable } from "./errors.ts"
import { SkillStore } from "./SkillStore.ts"
import { toAgentDefinition } from "./validateAgent.ts"

export const resolveAgentDefinition = (
  name: string
): Effect.Effect<AgentDefinition, AgentUnavailable, AgentStore | SkillStore> =>
  Effect.gen(function* () {
    const store = yield* AgentStore
    const skills = yield* SkillStore
    const view = yield* Effect.catchTag(store.get(name), "AgentNotFound", () =>
      Effect.fail(new AgentUnavailable({ name, reason: "unknown", problems: [] }))
    )
    if (!view.enabled) return yield* Effect.fail(new AgentUnavailable({ name, reason: "disabled", problems: [] }))
    if (view.audience !== "runtime") return yield* Effect.fail(new AgentUnavailable({ name, reason: "member", problems: [] }))
    if (view.problems.length > 0) return yield* Effect.fail(new AgentUnavailable({ name, reason: "invalid", problems: view.problems }))
    const version = typeof view.version === "number" ? view.version : Number.parseInt(String(view.version), 10) || 1
    return toAgentDefinition(view.package, { version, sharedSkills: yield* skills.contents })
  })
