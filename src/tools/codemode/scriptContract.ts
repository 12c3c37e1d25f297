/** What a codemode script run is given and gives back: limits, host calls, options and result (shared by QuickJsSandbox.ts and ScriptRun.ts). */

export interface SandboxLimits {
  /** Wall-clock limit: an interrupt deadline for running code and a host timer for a parked script. */
  readonly timeoutMs: number
  /**
   * Memory the script may use: the growth allowed to its instance's linear memory (a fixed wasm
   * maximum; QuickJS's own limit, set to the same, bounds only single allocations in this build).
   */
  readonly memoryBytes: number
  /** QuickJS's stack limit; deep native recursion (a deeply nested JSON.parse) may hit the host's first. */
  readonly stackBytes: number
  /** Host function calls (tool calls) a script may make. */
  readonly maxHostCalls: number
  /** Promise jobs a script may run in all (an endless `await` chain ends here or at the deadline). */
  readonly maxJobs: number
  /** Characters of printed output kept; the rest is counted, never copied out of the VM. */
  readonly maxOutputChars: number
  /** Longest JSON argument string a host call accepts. */
  readonly maxArgChars: number
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  timeoutMs: 30_000,
  memoryBytes: 64 * 1024 * 1024,
  stackBytes: 256 * 1024,
  maxHostCalls: 500,
  maxJobs: 1_000_000,
  maxOutputChars: 32_000,
  maxArgChars: 64 * 1024
}

/** What a host function answers: the tool's text, or its error message (a rejected promise inside). */
export type HostReply = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly message: string }

/** Runs one host function call; `signal` aborts when the script ends first. Must not reject. */
export type HostCall = (name: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<HostReply>

export interface RunOptions {
  readonly script: string
  /** Names callable as `tools.<name>(args)`. */
  readonly functions: ReadonlyArray<string>
  readonly call: HostCall
  readonly limits: SandboxLimits
  /** Ends the run (job abort or timeout outside). */
  readonly signal?: AbortSignal
  /** Called while the script runs, for the idle watchdog. */
  readonly onProgress?: () => void
}

export interface ScriptResult {
  /** ok: the script's promise settled; the rest ended it early. */
  readonly status: "ok" | "error" | "timeout" | "limit" | "aborted"
  /** Why it failed (absent when ok). */
  readonly message?: string
  /** Printed text kept (at most maxOutputChars). */
  readonly output: string
  /** Printed characters not kept. */
  readonly droppedChars: number
  readonly hostCalls: number
}
