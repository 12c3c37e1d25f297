/**
 * What the agent editor offers, from the services that own it: kernel tools, shared skills and
 * reserved names (AgentStore), registered MCP servers (McpServers), and the thinking levels of the
 * model bound to the agent (its installation-default binding, ProviderStore).
 */
import { Effect, Either } from "effect"
import { AgentStore, type AgentView } from "../../agents/AgentStore.ts"
import { MCP_GRANT } from "../../contract/AgentDefinition.ts"
import { McpServers } from "../../providers/McpServers.ts"
import { ProviderStore } from "../../providers/ProviderStore.ts"
import type { EditorOptions } from "../../../views/pages/editorFields.ts"

interface EditorContext extends EditorOptions {
  readonly reservedNames: ReadonlyArray<string>
}

/** The grants a server offers: all of its tools, then each tool its administrator allowed by name. */
const grantsOf = (server: { readonly name: string; readonly allowedTools: ReadonlyArray<string> }): Array<string> =>
  [`mcp__${server.name}__*`, ...server.allowedTools.map((t) => `mcp__${server.name}__${t}`)].filter((g) => MCP_GRANT.test(g))

/** The model of the agent's installation-default binding and its thinking levels; null when unbound or gone. */
const boundModelOf = (agent: AgentView | null) =>
  Effect.gen(function* () {
    const binding = agent?.binding ?? null
    if (binding === null) return null
    const provider = yield* Effect.either((yield* ProviderStore).get(binding.providerId))
    const model = Either.isRight(provider) ? provider.right.models.find((m) => m.id === binding.modelId) : undefined
    return model === undefined ? null : { label: `${binding.providerId} / ${binding.modelId}`, thinkingLevels: model.thinkingLevels }
  })

export const editorContext = (agent: AgentView | null) =>
  Effect.gen(function* () {
    const c = yield* (yield* AgentStore).context
    const servers = yield* (yield* McpServers).list
    const context: EditorContext = {
      kernelTools: c.kernelTools,
      sharedSkills: c.sharedSkills,
      reservedNames: c.reservedNames,
      mcpServers: servers.map((s) => ({ name: s.name, grants: grantsOf(s) })),
      boundModel: yield* boundModelOf(agent)
    }
    return context
  })

/** The tools offered as checkboxes, for the form model. */
export const offeredTools = (c: EditorOptions) => ({ kernelTools: c.kernelTools, mcpGrants: c.mcpServers.flatMap((s) => s.grants) })
