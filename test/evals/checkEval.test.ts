/**
 * An eval's checks read only what the job left in its own output directory: a link planted by the
 * (hostile) job to a host file is never followed, so a host file's text can neither pass nor fail an
 * eval. The other checks name each problem.
 */
import { describe, expect, test } from "bun:test"
import { linkSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { JobRow } from "../../src/worker/JobStore.ts"
import { checkEval } from "../../src/worker/evals/checkEval.ts"

const base = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-checkeval-")))
process.on("exit", () => rmSync(base, { recursive: true, force: true }))
const HOST_SECRET = "HOST-SECRET-7f3a"

const job = (over: Partial<JobRow> = {}): JobRow =>
  ({
    status: "completed",
    reason: null,
    message: null,
    summary: "All done.",
    costUsd: 0.01,
    usage: { turns: 3 },
    grounding: { grounded: 1, ungrounded: 0, unknown: 0, required: false },
    ...over
  }) as JobRow

const outDirWith = (name: string, files: Record<string, string>) => {
  const dir = join(base, name)
  mkdirSync(dir)
  for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text)
  return dir
}

describe("checkEval", () => {
  test("a symlink or hard link the job planted to a host file is not read: contains fails, not-contains passes", async () => {
    const secret = join(base, "host-secret.txt")
    writeFileSync(secret, `${HOST_SECRET}\n`)
    const outDir = outDirWith("planted", {})
    symlinkSync(secret, join(outDir, "report.md"))
    linkSync(secret, join(outDir, "hard.md"))
    const evidence = { job: job(), outputs: ["report.md", "hard.md"], grounding: undefined, outDir }
    const problems = await checkEval(
      {
        contains: [{ file: "report.md", text: HOST_SECRET }, { file: "hard.md", text: HOST_SECRET }, { text: HOST_SECRET }],
        "not-contains": [{ text: HOST_SECRET }]
      },
      evidence
    )
    expect(problems).toEqual([
      `report.md: not a regular file, so it does not contain "${HOST_SECRET}"`,
      `hard.md: not a regular file, so it does not contain "${HOST_SECRET}"`,
      `neither the summary nor any output contains "${HOST_SECRET}"`
    ])
    expect(await checkEval({ files: ["report.md"] }, evidence)).toEqual(["report.md: not a regular file"])
  })

  test("each missed expectation is named: failed job, missing and unwritten files, bad JSON, grounding, cost, turns", async () => {
    const outDir = outDirWith("named", { "data.json": "{oops", "stray.md": "x" })
    const problems = await checkEval(
      { files: ["report.md", "data.json", "stray.md"], grounding: "clean", "max-cost-usd": 0.005, "max-turns": 2 },
      {
        job: job({ status: "failed", reason: "error", message: "boom", costUsd: 0.02, usage: { turns: 5 } }),
        outputs: ["data.json"],
        grounding: {
          type: "grounding",
          seq: 1,
          at: "",
          grounded: 0,
          ungrounded: 1,
          unknown: 1,
          required: false,
          citations: [
            { status: "ungrounded", path: "src/a.ts", firstLine: 9, lastLine: 12, file: "report.md", at: 1 },
            { status: "unknown", path: "nope.ts", firstLine: 1, lastLine: 1, file: null, at: 1 }
          ]
        },
        outDir
      }
    )
    expect(problems).toEqual([
      "the job failed (error): boom",
      "report.md: missing",
      "data.json: not valid JSON",
      "stray.md: not written by the job",
      "grounding: 1 ungrounded and 1 unknown citation(s): src/a.ts:9-12 (ungrounded), nope.ts:1 (unknown)",
      "cost $0.0200 is over the ceiling of $0.0050",
      "5 turns, more than the 2 allowed"
    ])
  })
})
