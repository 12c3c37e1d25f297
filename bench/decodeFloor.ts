/**
 * The decode floor of bench/coldStart.ts: the least a job child that keeps to the architecture does
 * before `job.started` (every external input through its Effect Schema): read the envelope on stdin,
 * decode it with the contract's decoders (the ones jobChildRun.ts uses), write a `job.started` line.
 * No kernel, no workspace checks, no sandbox probe, no pi-ai. Built into a bytecode bundle exactly as
 * the job child is (buildJobChild with this entry), so the row is that floor's cost on this machine.
 */
import { Either } from "effect"
import { writeSync } from "node:fs"
import { JobEnvelope } from "../src/contract/AgentRuntime.ts"
import { decodeAll } from "../src/contract/Problem.ts"
import { decodeJob } from "../src/kernel/decodeJob.ts"
import { RUNTIME_VERSION } from "../src/kernel/runtimeVersion.ts"

// No top-level await: the bundle is CommonJS, as the job child's.
void Bun.stdin.text().then((text) => {
  const envelope = decodeAll(JobEnvelope)(JSON.parse(text))
  const job = Either.isRight(envelope) ? decodeJob(envelope.right.job) : undefined
  if (job === undefined || Either.isLeft(job)) {
    writeSync(2, "decode floor: the envelope does not decode\n")
    process.exit(2)
  }
  const { agent, metadata } = job.right
  writeSync(1, `${JSON.stringify({ type: "job.started", seq: 0, at: new Date().toISOString(), runtimeVersion: RUNTIME_VERSION, agentId: agent.id, agentVersion: agent.version, metadata: metadata ?? {} })}\n`)
  process.exit(0)
})
