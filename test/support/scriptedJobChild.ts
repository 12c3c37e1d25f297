/**
 * A stand-in job child for the worker's settlement tests: `job.mode` in the envelope says what it does
 * ("refuse", "report-jit": refuses naming its BUN_JSC_ variables, "garbage-then-exit", "wait-for-sigterm": reports `aborted` on SIGTERM after writing `job.marker`).
 */
import { writeFileSync } from "node:fs"

const { job } = JSON.parse(await Bun.stdin.text()) as { job: { mode: string; marker?: string } }
const at = () => new Date().toISOString()
const line = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`)

if (job.mode === "refuse") {
  line({
    type: "job.refused",
    problems: [
      { path: "task", message: "must not be empty" },
      { path: "model", message: "is unknown" }
    ]
  })
  process.exit(2)
}
if (job.mode === "report-jit") {
  const jit = Object.entries(process.env)
    .filter(([k]) => k.startsWith("BUN_JSC_"))
    .sort()
  line({ type: "job.refused", problems: [{ path: "env", message: jit.map(([k, v]) => `${k}=${v}`).join(" ") }] })
  process.exit(2)
}
if (job.mode === "garbage-then-exit") {
  process.stdout.write("not json at all\n")
  process.exit(3)
}
process.on("SIGTERM", () => {
  if (job.marker !== undefined) writeFileSync(job.marker, "sigterm")
  line({ type: "job.failed", seq: 0, at: at(), reason: "aborted", message: "the job was aborted" })
  process.exit(1)
})
process.stderr.write("ready\n")
setInterval(() => {}, 1000)
