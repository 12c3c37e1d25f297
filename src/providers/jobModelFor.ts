/**
 * The model and thinking level a job of an agent would really get now: the binding the worker would
 * resolve (the project's, else the installation default) and the kernel's thinking clamp on that model.
 */
import { Effect } from "effect"
import type { ThinkingLevel } from "../contract/AgentDefinition.ts"
import { chooseThinking, type ThinkingClamp } from "../kernel/thinking.ts"
import { Bindings } from "./Bindings.ts"
import { ProviderStore } from "./ProviderStore.ts"

export interface JobModel {
  /** The project asked about ('' = none: the installation default applies). */
  readonly projectId: string
  /** The binding a job would use, or null when there is none (no job can start). */
  readonly binding: {
    /** '' = the installation default. */
    readonly projectId: string
    readonly providerId: string
    readonly modelId: string
    readonly thinking: ThinkingLevel | null
  } | null
  /** The bound model's levels; null when the binding names a provider or model that is gone. */
  readonly modelLevels: ReadonlyArray<ThinkingLevel> | null
  /** The kernel's choice on the bound model; null without a usable binding. */
  readonly thinking: {
    readonly requested: ThinkingLevel
    /** Where the request came from: the binding's level overrides the agent's; neither = off. */
    readonly requestedFrom: "binding" | "agent" | "default"
    readonly effective: ThinkingLevel
    readonly clamped: ThinkingClamp
  } | null
  /** Why no job can run with this binding now, or null. */
  readonly problem: string | null
}

/** Same precedence as the worker's envelope and the kernel: binding level, else the agent's, else off. */
export const jobModelFor = (
  agentName: string,
  agentThinking: ThinkingLevel | undefined,
  projectId = ""
): Effect.Effect<JobModel, never, Bindings | ProviderStore> =>
  Effect.gen(function* () {
    const resolved = yield* Effect.either((yield* Bindings).resolve(agentName, projectId))
    if (resolved._tag === "Left") return { projectId, binding: null, modelLevels: null, thinking: null, problem: resolved.left.message }
    const b = resolved.right
    const binding = { projectId: b.projectId, providerId: b.providerId, modelId: b.modelId, thinking: b.thinking }
    const provider = yield* Effect.either((yield* ProviderStore).get(b.providerId))
    if (provider._tag === "Left") {
      const problem =
        provider.left._tag === "ProviderNotFound"
          ? `the binding names a provider that no longer exists: ${provider.left.message}`
          : provider.left.message
      return { projectId, binding, modelLevels: null, thinking: null, problem }
    }
    const model = provider.right.models.find((m) => m.id === b.modelId)
    if (model === undefined) {
      return {
        projectId,
        binding,
        modelLevels: null,
        thinking: null,
        problem: `the binding names a model that provider "${b.providerId}" no longer has: "${b.modelId}"`
      }
    }
    const requestedFrom = b.thinking !== null ? "binding" : agentThinking !== undefined ? "agent" : "default"
    const choice = chooseThinking(b.thinking ?? agentThinking ?? "off", model.thinkingLevels)
    return { projectId, binding, modelLevels: model.thinkingLevels, thinking: { ...choice, requestedFrom }, problem: null }
  })
