/**
 * The kernel tool registry: only the tools in the agent's allowlist are created, in allowlist order.
 * Each tool's module is loaded only when the job is granted it (a job child evaluates what
 * its job's tools need, after `job.started`); codemode's (and QuickJS behind it) likewise.
 */
import { Effect } from "effect"
import type { ProcessRunnerShape } from "./ProcessRunner.ts"
import type { KernelTool } from "./Tool.ts"

type ToolLoader = (runner: ProcessRunnerShape, codemodeExtra: ReadonlyArray<KernelTool>) => Promise<KernelTool>

/** One loader per kernel tool name: a dynamic import, which the bundle keeps lazy. */
const LOADERS: ReadonlyMap<string, ToolLoader> = new Map<string, ToolLoader>([
  ["read", () => import("./read.ts").then((m) => m.read)],
  ["ls", () => import("./ls.ts").then((m) => m.ls)],
  ["grep", () => import("./grep.ts").then((m) => m.grep)],
  ["find", () => import("./find.ts").then((m) => m.find)],
  ["write", () => import("./write.ts").then((m) => m.write)],
  ["edit", () => import("./edit.ts").then((m) => m.edit)],
  ["shell", (runner) => import("./shell.ts").then((m) => m.makeShellTool(runner))],
  ["git", (runner) => import("./git.ts").then((m) => m.makeGitTool(runner))],
  ["codemode", (_, extra) => import("./codemode/codemode.ts").then((m) => m.makeCodemode([...m.CODEMODE_READ_TOOLS, ...extra]))]
])

/** `codemodeExtra`: tools a codemode script may call besides the read tools (the job's read-only MCP tools). */
export const createKernelTools = (
  names: ReadonlyArray<string>,
  runner: ProcessRunnerShape,
  codemodeExtra: ReadonlyArray<KernelTool> = []
): Effect.Effect<ReadonlyArray<KernelTool>> => {
  const granted = [...new Set(names)].flatMap((n) => {
    const load = LOADERS.get(n)
    return load === undefined ? [] : [[n, load] as const]
  })
  return Effect.map(
    Effect.promise(() => Promise.all(granted.map(async ([n, load]) => [n, await load(runner, codemodeExtra)] as const))),
    (loaded) => {
      const all = new Map(loaded)
      return names.flatMap((n) => {
        const tool = all.get(n)
        return tool === undefined ? [] : [tool]
      })
    }
  )
}
