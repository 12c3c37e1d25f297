/**
 * Output contracts (issue 17): an agent's `outputs:` are checked before `job.completed`; the model gets
 * one chance to fix a violation in the same job; a job that still violates ends failed/error naming
 * each problem. Real job child, scripted model.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expectEndedWith, runAgent, startOpenAIServer, type ScriptedServer, type Step } from "kintsugi-runtime/testing"
import { inspectOutput } from "../../src/kernel/outputContract.ts"

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

/**
 * Runs `script` (one step of a loop of file operations) in another process for 4 s; resolves once
 * `begun` sees its first change; `steps` is the count of steps it printed when it ended.
 */
const churn = async (script: string, begun: () => boolean): Promise<{ readonly steps: Promise<number> }> => {
  const proc = Bun.spawn(["bun", "-e", `const fs = require("fs"); const end = Date.now() + 4000; let i = 0; for (; Date.now() < end; i++) { ${script} } fs.writeSync(1, i + "\\n")`], {
    stdout: "pipe",
    stderr: "inherit"
  })
  cleanups.push(() => proc.kill())
  const deadline = Date.now() + 10_000
  while (!begun()) {
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error("the churn process never began")
    await Bun.sleep(0)
  }
  // In an object: an async function returning the promise itself would wait for it.
  const steps = (async () => {
    expect(await proc.exited).toBe(0)
    return Number(await new Response(proc.stdout).text())
  })()
  return { steps }
}

/** Every state `inspectOutput` gives for `file` during 1.5 s, with how often. */
const inspectFor = async (file: string, outDir: string): Promise<Record<string, number>> => {
  const kinds: Record<string, number> = {}
  const until = Date.now() + 1500
  while (Date.now() < until) {
    const state = await inspectOutput(file, outDir)
    const kind = state.kind === "text" ? `text ${state.text}` : state.kind
    kinds[kind] = (kinds[kind] ?? 0) + 1
  }
  return kinds
}

describe("an output changed while it is checked", () => {
  // Jobs of one project may share an outDir: another job's write (temp file + rename) can replace the
  // file between the check's open and its stat, leaving the opened inode with no link. The check reads
  // what the path holds now instead of calling the output "not a regular file" (which cost the job a
  // turn to "fix" it, and failed a test of eight concurrent jobs under load).
  test("a file replaced over and over by another process: every check reads its text", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-replaced-")))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, "report.md")
    writeFileSync(file, "hello")
    // Replaced as the write tool does, about every millisecond.
    const first = statSync(file).ino
    const replaced = await churn(
      `const t = ${JSON.stringify(dir)} + "/.t" + i; fs.writeFileSync(t, "hello"); fs.renameSync(t, ${JSON.stringify(file)}); Bun.sleepSync(1)`,
      () => statSync(file, { throwIfNoEntry: false })?.ino !== first
    )
    const kinds = await inspectFor(file, dir)
    expect(await replaced.steps).toBeGreaterThan(300)
    expect(Object.keys(kinds)).toEqual(["text hello"])
    expect(kinds["text hello"]).toBeGreaterThan(300)
  })

  // A job's shell can swap a directory of its outDir for a link out of it between the check of the
  // path and its open: what is read is judged by the open descriptor, never by the path checked before.
  test("a directory swapped for a link out of outDir and back: no check reads the file outside", async () => {
    const base = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-swapped-")))
    cleanups.push(() => rmSync(base, { recursive: true, force: true }))
    const outDir = join(base, "out")
    const outside = join(base, "host")
    for (const d of [join(outDir, "real"), outside]) mkdirSync(d, { recursive: true })
    writeFileSync(join(outDir, "real", "report.md"), "inside")
    writeFileSync(join(outside, "report.md"), "SECRET")
    const sub = join(outDir, "sub")
    renameSync(join(outDir, "real"), sub)
    const link = join(outDir, "link")
    symlinkSync(outside, link)
    // `sub` is the real directory, then a link to the outside, then the directory again, by renames.
    const [subPath, parked, linkPath] = [sub, join(outDir, "real"), link].map((p) => JSON.stringify(p))
    const swaps = await churn(
      `fs.renameSync(${subPath}, ${parked}); fs.renameSync(${linkPath}, ${subPath}); fs.renameSync(${subPath}, ${linkPath}); fs.renameSync(${parked}, ${subPath})`,
      () => existsSync(join(outDir, "real"))
    )
    const kinds = await inspectFor(join(sub, "report.md"), outDir)
    expect(await swaps.steps).toBeGreaterThan(300)
    expect(kinds["text inside"]).toBeGreaterThan(0)
    expect(kinds["text SECRET"]).toBeUndefined()
  })
})
