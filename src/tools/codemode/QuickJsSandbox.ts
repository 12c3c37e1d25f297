/**
 * Runs one untrusted script in a fresh QuickJS instance and runtime (sync release build, promise-based
 * host functions, no asyncify) under memory, stack, time, host-call, job and output limits (security rule 11).
 */
import { newQuickJsInstance, type QuickJsInstance } from "./quickJsModule.ts"
import type { RunOptions, ScriptResult } from "./scriptContract.ts"
import { ScriptRun } from "./ScriptRun.ts"

// The types live in a leaf module so ScriptRun.ts can use them without importing this file back.
export { DEFAULT_SANDBOX_LIMITS, type HostCall, type RunOptions, type SandboxLimits, type ScriptResult } from "./scriptContract.ts"

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** Runs `options.script`; never rejects, never throws: every way it ends is a `ScriptResult`. */
export const runScript = async (options: RunOptions): Promise<ScriptResult> => {
  let instance: QuickJsInstance
  try {
    instance = await newQuickJsInstance(options.limits.memoryBytes)
  } catch (e) {
    return {
      status: "error",
      message: `codemode is unavailable: QuickJS did not load (${messageOf(e)})`,
      output: "",
      droppedChars: 0,
      hostCalls: 0
    }
  }
  return new Promise<ScriptResult>((resolve) => {
    try {
      new ScriptRun(instance, options, resolve).start()
    } catch (e) {
      // The runtime or context could not be created; the instance is dropped with whatever it holds.
      resolve({ status: "error", message: `codemode is unavailable: ${messageOf(e)}`, output: "", droppedChars: 0, hostCalls: 0 })
    }
  })
}
