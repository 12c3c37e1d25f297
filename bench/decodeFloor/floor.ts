/**
 * What the decode floor loads instead of the kernel: the envelope through the contract's decoders (the
 * ones jobChild/run.ts uses), then `job.started` and a `job.completed` that says nothing ran.
 */
import { Either } from "effect"
import { JobEnvelope } from "../../src/contract/AgentRuntime.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { decodeAll } from "../../src/contract/Problem.ts"
import type { JobChildExit } from "../../src/jobChild/exit.ts"
import { decodeJob } from "../../src/kernel/decodeJob.ts"
import { RUNTIME_VERSION } from "../../src/kernel/runtimeVersion.ts"

export const jobChildMain = async (stdin: Promise<string>, exit: JobChildExit): Promise<never> => {
  const envelope = decodeAll(JobEnvelope)(JSON.parse(await stdin))
  const job = Either.isRight(envelope) ? decodeJob(envelope.right.job) : undefined
  if (job === undefined || Either.isLeft(job)) {
    exit.writeRefusal(
      JSON.stringify({ type: "job.refused", problems: [{ path: "(stdin)", message: "the decode floor's envelope does not decode" }] })
    )
    return exit.exitJob(2)
  }
  const { agent, metadata } = job.right
  const at = () => new Date().toISOString()
  const events: ReadonlyArray<JobEvent> = [
    {
      type: "job.started",
      seq: 0,
      at: at(),
      runtimeVersion: RUNTIME_VERSION,
      agentId: agent.id,
      agentVersion: agent.version,
      metadata: metadata ?? {}
    },
    { type: "job.completed", seq: 1, at: at(), summary: "decode floor: nothing ran" }
  ]
  for (const event of events) exit.writeEvent(event)
  return exit.exitJob(0)
}
