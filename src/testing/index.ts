/**
 * `kintsugi-runtime/testing`: what an agent author's `bun test` suite needs. Scripted model servers,
 * `runAgent` (a package on a fixture workspace through the real job child) and expectation helpers.
 */
export * from "./scriptedServers.ts"
export { AgentPackageInvalid, loadAgentDefinition, runAgent, SCRIPTED_API_KEY, type AgentRun, type RunAgentOptions } from "./runAgent.ts"
export { toolResultsOf } from "./toolResultsOf.ts"
export { expectEndedWith, expectRead, expectWrote } from "./expectations.ts"
export type { JobEvent, TerminalEvent } from "../contract/JobEvent.ts"
export { expectSameRun, replayJob, type ReplayOptions, type ReplayRun } from "./replayJob.ts"
