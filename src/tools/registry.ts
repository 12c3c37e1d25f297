/**
 * The kernel tool registry: only the tools in the agent's allowlist are created, in allowlist order.
 * codemode's module (and QuickJS behind it) is loaded only for an agent granted codemode.
 */
import { Effect, Option } from "effect"
import { fileTools } from "./fileTools.ts"
import type { ProcessRunnerShape } from "./ProcessRunner.ts"
import { processTools } from "./processTools.ts"
import type { KernelTool } from "./Tool.ts"

/** `codemodeExtra`: tools a codemode script may call besides the read tools (the job's read-only MCP tools). */
export const createKernelTools = (
  names: ReadonlyArray<string>,
  runner: ProcessRunnerShape,
  codemodeExtra: ReadonlyArray<KernelTool> = []
): Effect.Effect<ReadonlyArray<KernelTool>> =>
  Effect.map(
    names.includes("codemode") ? Effect.map(Effect.promise(() => import("./codemode/codemode.ts")), Option.some) : Effect.succeed(Option.none()),
    (codemode) => {
      const all = new Map([...fileTools, ...processTools(runner)].map((t) => [t.name, t]))
      if (Option.isSome(codemode)) all.set("codemode", codemode.value.makeCodemode([...codemode.value.CODEMODE_READ_TOOLS, ...codemodeExtra]))
      return names.flatMap((n) => {
        const tool = all.get(n)
        return tool === undefined ? [] : [tool]
      })
    }
  )
