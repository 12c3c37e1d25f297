/** The kernel tool registry: only the tools in the agent's allowlist are created, in allowlist order. */
import { fileTools } from "./fileTools.ts"
import { processTools, type ProcessRunnerShape } from "./ProcessRunner.ts"
import type { KernelTool } from "./Tool.ts"

export const createKernelTools = (names: ReadonlyArray<string>, runner: ProcessRunnerShape): ReadonlyArray<KernelTool> => {
  const all = new Map([...fileTools, ...processTools(runner)].map((t) => [t.name, t]))
  return names.flatMap((n) => {
    const tool = all.get(n)
    return tool === undefined ? [] : [tool]
  })
}
