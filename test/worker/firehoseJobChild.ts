/**
 * A stand-in job child that prints `job.count` message deltas and its completion as fast as it can,
 * then says "written" on stderr once all of it is in its stdout pipe, and exits.
 */
import type { JobEvent } from "../../src/contract/JobEvent.ts"

const { job } = JSON.parse(await Bun.stdin.text()) as { job: { count: string } }
const count = Number(job.count)
const at = new Date().toISOString()
const lines: Array<string> = []
const line = (event: JobEvent) => lines.push(JSON.stringify(event))
for (let seq = 0; seq < count; seq++) line({ type: "message.delta", seq, at, text: `delta ${seq} ${"x".repeat(80)}` })
line({ type: "job.completed", seq: count, at, summary: "done" })
await Bun.write(Bun.stdout, `${lines.join("\n")}\n`)
process.stderr.write("written\n")
