/**
 * The process tools (shell, git) of one job. Kept apart from ProcessRunner.ts so the runner does not
 * import the tools that import its types (an import cycle).
 */
import { makeGitTool } from "./git.ts"
import type { ProcessRunnerShape } from "./ProcessRunner.ts"
import { makeShellTool } from "./shell.ts"
import type { KernelTool } from "./Tool.ts"

/** Shell and git, both running through `runner`. */
export const processTools = (runner: ProcessRunnerShape): ReadonlyArray<KernelTool> => [makeShellTool(runner), makeGitTool(runner)]
