/**
 * Output contracts: an agent's `outputs:` are checked before `job.completed`; the model gets
 * one chance to fix a violation in the same job; a job that still violates ends failed/error naming
 * each problem. Real job child, scripted model.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expectEndedWith, runAgent, startOpenAIServer, type ScriptedServer, type Step } from "kintsugi-runtime/testing"
import { inspectOutput } from "../../src/kernel/outputContract.ts"
import { replacedFile, swappedDirectory, tally } from "../support/fileChurn.ts"

setDefaultTimeout(60_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const AGENT = `---
name: contracted
version: 1
description: Writes report.json and summary.md.
tools: [read, write]
outputs: [report.json, summary.md]
---
Write report.json and summary.md.
`

const agentFile = (): string => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-contract-")))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, "contracted.md"), AGENT)
  return join(dir, "contracted.md")
}

const serve = async (steps: ReadonlyArray<Step>): Promise<ScriptedServer> => {
  const server = await startOpenAIServer(steps)
  cleanups.push(() => server.stop())
  return server
}

const write = (path: string, content: string): Step => ({ kind: "turn", toolCalls: [{ name: "write", arguments: { path, content } }] })

describe("output contracts", () => {
  test("a violation fixed by the model in its second try completes", async () => {
    const server = await serve([
      write("report.json", "{ not json"),
      { kind: "turn", text: "done" },
      write("report.json", '{ "ok": true }'),
      write("summary.md", "# Summary\n"),
      { kind: "turn", text: "fixed" }
    ])
    const run = await runAgent({ agent: agentFile(), server, task: "Report.", fixture: { "a.ts": "x\n" } })
    expect(expectEndedWith(run, "completed")).toMatchObject({ summary: "fixed" })
    expect(run.job.agent).toMatchObject({ outputs: ["report.json", "summary.md"] })
    // The nudge named both problems, as the user turn after the first final answer.
    const nudged = server.requests[2]?.rawBody ?? ""
    expect(nudged).toContain("output contract")
    expect(nudged).toContain("report.json: not valid JSON")
    expect(nudged).toContain("summary.md: missing")
    expect(server.requests.length).toBe(5)
  })

  test("a violation not fixed fails (error) naming each problem; no third chance", async () => {
    const server = await serve([
      write("report.json", "{ not json"),
      { kind: "turn", text: "done" },
      { kind: "turn", text: "still done" },
      { kind: "turn", text: "never asked" }
    ])
    const run = await runAgent({ agent: agentFile(), server, task: "Report.", fixture: { "a.ts": "x\n" } })
    const failed = expectEndedWith(run, "error")
    const message = failed.type === "job.failed" ? failed.message : ""
    expect(message).toContain("report.json: not valid JSON")
    expect(message).toContain("summary.md: missing")
    expect(server.requests.length).toBe(3)
    expect(run.events.some((e) => e.type === "grounding")).toBe(false)
  })

  test("a contract met at once completes with no extra turn", async () => {
    const server = await serve([write("report.json", "[]"), write("summary.md", "ok\n"), { kind: "turn", text: "done" }])
    const run = await runAgent({ agent: agentFile(), server, task: "Report.", fixture: { "a.ts": "x\n" } })
    expectEndedWith(run, "completed")
    expect(server.requests.length).toBe(3)
  })
})

/** Every state `inspectOutput` gives for `file` during 1.5 s, with how often. */
const inspectFor = (file: string, outDir: string): Promise<Record<string, number>> =>
  tally(() => inspectOutput(file, outDir).then((state) => (state.kind === "text" ? `text ${state.text}` : state.kind)))

describe("an output changed while it is checked", () => {
  // Jobs of one project may share an outDir: another job's write (temp file + rename) can replace the
  // file between the check's open and its stat, leaving the opened inode with no link. The check reads
  // what the path holds now instead of calling the output "not a regular file" (which cost the job a
  // turn to "fix" it, and failed a test of eight concurrent jobs under load).
  test("a file replaced over and over by another process: every check reads its text", async () => {
    const churn = await replacedFile()
    cleanups.push(churn.stop)
    const kinds = await inspectFor(churn.file, churn.dir)
    expect(await churn.steps).toBeGreaterThan(300)
    expect(Object.keys(kinds)).toEqual(["text hello"])
    expect(kinds["text hello"]).toBeGreaterThan(300)
  })

  // A job's shell can swap a directory of its outDir for a link out of it between the check of the
  // path and its open: what is read is judged by the open descriptor, never by the path checked before.
  test("a directory swapped for a link out of outDir and back: no check reads the file outside", async () => {
    const churn = await swappedDirectory()
    cleanups.push(churn.stop)
    const kinds = await inspectFor(join(churn.sub, "report.md"), churn.outDir)
    expect(await churn.steps).toBeGreaterThan(300)
    expect(kinds["text inside"]).toBeGreaterThan(0)
    expect(kinds["text SECRET"]).toBeUndefined()
  })
})
