/**
 * A 200-turn job in the real job child against a scripted model (127.0.0.1) with a 32k window: the
 * child's peak RSS (VmHWM from /proc, and getrusage after exit) and how many compactions it made, beside
 * the same job on a window big enough to need none.
 */
import { readFileSync } from "node:fs"
import type { JobEvent } from "../src/contract/JobEvent.ts"
import { createEnvelope, createJob, createJobDirs, createProvider, startJobChild } from "../test/support/jobChild.ts"
import { startOpenAIServer } from "../test/support/scriptedServers.ts"
import { createWindowedModel } from "../test/support/windowedModel.ts"

const TURNS = 200
const lines = Array.from({ length: 2000 }, (_, i) => `line ${i + 1}: export const value${i} = computeSomething(${i}, "${"v".repeat(24)}")`)
const dirs = createJobDirs({ "big.ts": `${lines.join("\n")}\n` })

/** VmHWM of a live process in KiB, or undefined once it is gone. */
const vmHwmKiB = (pid: number): number | undefined => {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return m === null ? undefined : Number(m[1])
  } catch {
    return undefined
  }
}

const run = async (window: number) => {
  const model = createWindowedModel(
    {
      api: "openai-completions",
      window,
      // Each turn reads 40 lines (about 3.4 KB, ~850 tokens) and writes a short note.
      turn: (n) =>
        n <= TURNS
          ? {
              text: `Step ${n}: checking the next block.`,
              toolCalls: [{ name: "read", arguments: { path: "src/big.ts", offset: ((n * 40) % 1960) + 1, limit: 40 } }]
            }
          : { text: "done" }
    },
    TURNS * 2 + 50
  )
  const server = await startOpenAIServer(model.steps)
  const job = createJob(dirs, { agent: { tools: ["read"] }, limits: { maxTurns: 0, idleTimeoutSec: 0, timeoutSec: 900 } })
  const t0 = performance.now()
  const child = startJobChild(createEnvelope(job, [createProvider(server, "openai-completions", { contextWindow: window })]))
  let hwm = 0
  const poll = setInterval(() => (hwm = Math.max(hwm, vmHwmKiB(child.proc.pid) ?? 0)), 20)
  // The high-water mark is final once the terminal event is out; read it before the child exits.
  void child.waitFor("job.completed").then(
    () => (hwm = Math.max(hwm, vmHwmKiB(child.proc.pid) ?? 0)),
    () => {}
  )
  const done = await child.done
  clearInterval(poll)
  const ms = performance.now() - t0
  await server.stop()
  const events: ReadonlyArray<JobEvent> = done.events
  const last = events[events.length - 1]
  if (last?.type !== "job.completed") throw new Error(`bench job did not complete: ${JSON.stringify(last)} ${done.stderr.slice(0, 500)}`)
  const usage = events.filter((e): e is Extract<JobEvent, { type: "usage" }> => e.type === "usage").pop()
  const maxRssBytes = child.proc.resourceUsage()?.maxRSS ?? NaN
  return {
    window,
    ms,
    hwmMiB: hwm / 1024,
    // Bun reports getrusage's ru_maxrss in bytes.
    rusageMiB: maxRssBytes / 1024 / 1024,
    compactions: usage?.compactions ?? NaN,
    summaries: usage?.compactionSummaries ?? NaN,
    peak: usage?.contextPeakPercent ?? NaN,
    requests: server.requests.length,
    lastPromptKiB:
      (server.requests.filter((r) => typeof r.body === "object" && r.body !== null && "tools" in r.body).pop()?.rawBody.length ?? 0) / 1024,
    costUsd: usage?.costUsd ?? NaN
  }
}

const rows = []
for (const window of [32_000, 1_000_000]) rows.push(await run(window))
dirs.cleanup()
console.log(`${TURNS}-turn job in the job child (read 40 lines per turn), scripted openai-completions model on 127.0.0.1`)
console.log("window     peak RSS (VmHWM / rusage)  compactions  summaries  context peak  requests  last prompt  cost      time")
for (const r of rows) {
  console.log(
    [
      String(r.window).padEnd(10),
      `${r.hwmMiB.toFixed(1)} / ${r.rusageMiB.toFixed(1)} MiB`.padEnd(26),
      String(r.compactions).padEnd(12),
      String(r.summaries).padEnd(10),
      `${r.peak.toFixed(1)} %`.padEnd(13),
      String(r.requests).padEnd(9),
      `${r.lastPromptKiB.toFixed(0)} KiB`.padEnd(12),
      `$${r.costUsd.toFixed(3)}`.padEnd(9),
      `${(r.ms / 1000).toFixed(1)} s`
    ].join(" ")
  )
}
