/**
 * `kintsugi-runtime/kernel`: the kernel as an Effect layer for an orchestrator. `KernelLive(config)`
 * provides the contract's `AgentRuntime`; the job runs in this process (see docs/kernel.md).
 */
export { KernelLive, RUNTIME_VERSION, type KernelConfig } from "./Kernel.ts"
export { decodeJob, type JobDecodeFailure } from "./decodeJob.ts"
export type { RetryPolicy } from "./retryPolicy.ts"
export type { SandboxConfig, SandboxMode } from "../tools/Sandbox.ts"
export { AgentRuntime, JobRefused, type JobBoundary, type JobHandle, type JobOutcome } from "../contract/AgentRuntime.ts"
