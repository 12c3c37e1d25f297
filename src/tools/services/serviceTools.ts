/**
 * Service tools: kernel tools whose work is done by the worker behind the services channel (memory,
 * web). A service tool is a name, an input schema and a description; adding one (web_search, web_fetch)
 * is one more `ServiceToolDef` in `SERVICE_TOOL_DEFS`, and one handler on the worker's side.
 */
import { Effect } from "effect"
import { defineTool, type KernelTool } from "../Tool.ts"
import { MEMORY_TOOL_DEFS } from "./memoryTools.ts"
import type { ServiceChannel } from "./ServiceChannel.ts"
import { WEB_TOOL_DEFS } from "./webTools.ts"
import type { ServiceToolDef } from "./ServiceToolDef.ts"

export type { ServiceToolDef } from "./ServiceToolDef.ts"

/** Every service tool this runtime can create, by name. */
export const SERVICE_TOOL_DEFS: ReadonlyArray<ServiceToolDef> = [...MEMORY_TOOL_DEFS, ...WEB_TOOL_DEFS]

/** The kernel tool of one definition: input checked here, then one call of the channel. */
export const makeServiceTool = (def: ServiceToolDef, channel: ServiceChannel): KernelTool =>
  defineTool({
    name: def.name,
    description: def.description,
    params: def.params,
    ...(def.readOnly === undefined ? {} : { readOnly: def.readOnly }),
    ...(def.lane === undefined ? {} : { lane: def.lane }),
    execute: (input) => Effect.map(channel.call(def.name, input, def.timeoutMs), (text) => ({ text }))
  })

/** The service tools among `names` this runtime knows, in `names` order. */
export const createServiceTools = (names: ReadonlyArray<string>, channel: ServiceChannel): ReadonlyArray<KernelTool> =>
  names.flatMap((n) => {
    const def = SERVICE_TOOL_DEFS.find((d) => d.name === n)
    return def === undefined ? [] : [makeServiceTool(def, channel)]
  })
