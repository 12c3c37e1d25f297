/** The kernel tool registry: only the tools in the agent's allowlist are created, in allowlist order. */
import { CODEMODE_READ_TOOLS, makeCodemode } from "./codemode/codemode.ts"
import { fileTools } from "./fileTools.ts"
import type { ProcessRunnerShape } from "./ProcessRunner.ts"
import { processTools } from "./processTools.ts"
import type { KernelTool } from "./Tool.ts"

/** `codemodeExtra`: tools a codemode script may call besides the read tools (the job's read-only MCP tools). */
export const createKernelTools = (
  names: ReadonlyArray<string>,
  runner: ProcessRunnerShape,
  codemodeExtra: ReadonlyArray<KernelTool> = []
): ReadonlyArray<KernelTool> => {
  const all = new Map([...fileTools, ...processTools(runner)].map((t) => [t.name, t]))
  if (names.includes("codemode")) all.set("codemode", makeCodemode([...CODEMODE_READ_TOOLS, ...codemodeExtra]))
  return names.flatMap((n) => {
    const tool = all.get(n)
    return tool === undefined ? [] : [tool]
  })
}
