/**
 * Name → the job's AgentDefinition, as the worker needs it at job start: `AgentStore.definition` (a
 * built-in first, else an enabled custom agent at its current version, with shared skills embedded as
 * they are now). Unknown, disabled, member and invalid agents fail with the reason.
 */
import { Effect } from "effect"
import type { AgentDefinition } from "../contract/AgentDefinition.ts"
import { AgentStore } from "./AgentStore.ts"
import type { AgentUnavailable } from "./errors.ts"

export const resolveAgentDefinition = (name: string): Effect.Effect<AgentDefinition, AgentUnavailable, AgentStore> =>
  Effect.flatMap(AgentStore, (store) => store.definition(name))
