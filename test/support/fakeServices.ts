/**
 * Service handlers for tests of the services channel itself: `memory_search` and `memory_save` that
 * record each call with its grant and answer with what they saw; granted only in projects listed in
 * `enabled` (mutable, so a test can turn a project off mid-job).
 */
import { Effect, Layer } from "effect"
import { MemorySaveInput, MemorySearchInput } from "../../src/tools/services/memoryTools.ts"
import { type ServiceHandler, ServiceHandlers } from "../../src/worker/Services.ts"
import type { ServiceGrant } from "../../src/worker/ServiceTokens.ts"

export interface FakeServices {
  readonly layer: Layer.Layer<ServiceHandlers>
  readonly calls: Array<{ readonly tool: string; readonly input: unknown; readonly grant: ServiceGrant }>
  readonly enabled: Set<string>
}

export const createFakeServices = (enabled: ReadonlyArray<string>): FakeServices => {
  const calls: FakeServices["calls"] = []
  const on = new Set(enabled)
  const handler = (name: string, params: ServiceHandler["params"]): ServiceHandler => ({
    name,
    params,
    refusal: ({ projectId }) => Effect.succeed(on.has(projectId) ? undefined : `memory is not enabled for project "${projectId}"`),
    handle: (input, grant) =>
      Effect.sync(() => {
        calls.push({ tool: name, input, grant })
        return { text: `${name} in ${grant.projectId} for ${grant.agentId}: ${JSON.stringify(input)}`, isError: false }
      })
  })
  return {
    layer: Layer.succeed(ServiceHandlers, [handler("memory_search", MemorySearchInput), handler("memory_save", MemorySaveInput)]),
    calls,
    enabled: on
  }
}
