/**
 * The grounding check (docs/grounding.md): citation formats, range coverage, and real jobs
 * through the job child with a scripted model — a report citing lines it never read is flagged (and
 * fails under `grounding: required`), a report whose citations were all read is clean, and a cited
 * path outside the workspace is `unknown` (never probed on the host).
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { isShown, jsonCitations, textCitations } from "../../src/kernel/grounding.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { expectEndedWith, runAgent, startOpenAIServer, type ScriptedServer } from "kintsugi-runtime/testing"

setDefaultTimeout(60_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const tempDir = (): string => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-grounding-")))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

describe("citation formats", () => {
  test("path:line and path:start-end in text, with the line they are written on; not URLs, versions or times", () => {
    const text = [
      "# Report",
      "- Orders are stored in `src/db/orders.ts:12` and read at ./src/api.py:40-52.",
      "See https://example.com:8443/x, version 1.2.3:4, at 12:30, host 127.0.0.1:5432.",
      "Makefile:3 and lib/x:7"
    ].join("\n")
    expect(textCitations(text, "report.md")).toEqual([
      { path: "src/db/orders.ts", firstLine: 12, lastLine: 12, file: "report.md", at: 2 },
      { path: "src/api.py", firstLine: 40, lastLine: 52, file: "report.md", at: 2 },
      { path: "lib/x", firstLine: 7, lastLine: 7, file: "report.md", at: 4 }
    ])
  })

  test("JSON evidence objects { path, line, endLine? }, located at the line naming the path", () => {
    const json = JSON.stringify(
      {
        stores: [{ name: "orders", evidence: [{ path: "src/a.ts", line: 3, endLine: 5 }] }],
        injectionAttempts: [{ path: "src/b.ts", line: 9, summary: "x" }]
      },
      null,
      2
    )
    const found = jsonCitations(json, "report.json") ?? []
    expect(found.map((c) => [c.path, c.firstLine, c.lastLine])).toEqual([
      ["src/a.ts", 3, 5],
      ["src/b.ts", 9, 9]
    ])
    const lines = json.split("\n")
    expect(lines[(found[0]?.at ?? 0) - 1]).toContain('"src/a.ts"')
    expect(lines[(found[1]?.at ?? 0) - 1]).toContain('"src/b.ts"')
    expect(jsonCitations("{ not json", "x.json")).toBeUndefined()
  })

  test("a range is shown only when every line of it was, across several reads; null = to the end", () => {
    const r = (firstLine: number, lastLine: number | null) => ({ path: "a", firstLine, lastLine })
    expect(isShown([r(1, 10)], 3, 10)).toBe(true)
    expect(isShown([r(1, 10)], 3, 11)).toBe(false)
    expect(isShown([r(20, 30), r(1, 10), r(11, 19)], 5, 25)).toBe(true)
    expect(isShown([r(1, 10), r(12, 19)], 5, 15)).toBe(false)
    expect(isShown([r(50, null)], 60, 900)).toBe(true)
    expect(isShown([r(50, null)], 49, 60)).toBe(false)
  })
})

const agent = (required: boolean) => `---
name: reporter
version: 1
description: Reads a file and writes a report with citations.
tools: [read, grep, write]
${required ? "grounding: required\n" : ""}---
Read the code, then write report.md and report.json citing path:line.
`

// Ten lines; the job is shown lines 1-3 (read with a limit) and line 7 (grep, no context).
const FIXTURE = { "app.ts": Array.from({ length: 10 }, (_, i) => `export const v${i + 1} = ${i + 1} // line ${i + 1}`).join("\n") + "\n" }

const serve = async (report: string, json: unknown, summary: string): Promise<ScriptedServer> => {
  const server = await startOpenAIServer([
    { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/app.ts", offset: 1, limit: 3 } }] },
    { kind: "turn", toolCalls: [{ name: "grep", arguments: { pattern: "v7 =", path: "src" } }] },
    {
      kind: "turn",
      toolCalls: [
        { name: "write", arguments: { path: "report.md", content: report } },
        { name: "write", arguments: { path: "report.json", content: JSON.stringify(json, null, 2) } }
      ]
    },
    { kind: "turn", text: summary }
  ])
  cleanups.push(() => server.stop())
  return server
}

type Grounding = Extract<JobEvent, { type: "grounding" }>
const groundingOf = (events: ReadonlyArray<JobEvent>): Grounding => {
  const g = events.find((e): e is Grounding => e.type === "grounding")
  if (g === undefined) throw new Error("no grounding event")
  return g
}

const UNGROUNDED_REPORT =
  "# Values\n\n- v2 is defined at src/app.ts:2.\n- v8 and v9 are at src/app.ts:8-9.\n- helpers live in src/helpers.ts:4.\n"
const UNGROUNDED_JSON = {
  evidence: [
    { path: "src/app.ts", line: 7 },
    { path: "/etc/hostname", line: 1 }
  ]
}

describe("grounding of real jobs", () => {
  test("a report citing lines it never read is flagged; cited paths outside the workspace are unknown", async () => {
    const server = await serve(UNGROUNDED_REPORT, UNGROUNDED_JSON, "Done: see src/app.ts:1-3.")
    const run = await runAgent({ agent: writeAgent(false), server, task: "Report.", fixture: FIXTURE })
    expectEndedWith(run, "completed")
    const g = groundingOf(run.events)
    // Grounded: src/app.ts:2 (report.md), src/app.ts:7 (report.json, via grep), src/app.ts:1-3 (summary).
    expect({ grounded: g.grounded, ungrounded: g.ungrounded, unknown: g.unknown, required: g.required }).toEqual({
      grounded: 3,
      ungrounded: 1,
      unknown: 2,
      required: false
    })
    expect(g.citations.filter((c) => c.status !== "grounded")).toEqual([
      { status: "ungrounded", path: "src/app.ts", firstLine: 8, lastLine: 9, file: "report.md", at: 4 },
      { status: "unknown", path: "src/helpers.ts", firstLine: 4, lastLine: 4, file: "report.md", at: 5 },
      { status: "unknown", path: "/etc/hostname", firstLine: 1, lastLine: 1, file: "report.json", at: 8 }
    ])
    expect(g.citations.find((c) => c.file === null)).toMatchObject({ status: "grounded", at: 1 })
    // The job span carries the counts only.
    const jobSpan = run.events.find((e) => e.type === "span" && e.name === "kintsugi.job")
    expect(jobSpan).toMatchObject({ attributes: { "grounding.grounded": 3, "grounding.ungrounded": 1, "grounding.unknown": 2 } })
    expect(JSON.stringify(jobSpan)).not.toContain("src/app.ts")
    // The grounding event precedes the terminal event.
    expect(run.events.findIndex((e) => e.type === "grounding")).toBeLessThan(run.events.findIndex((e) => e.type === "job.completed"))
  })

  test("under grounding: required the same report fails (error) naming each ungrounded citation", async () => {
    const server = await serve(UNGROUNDED_REPORT, UNGROUNDED_JSON, "Done.")
    const run = await runAgent({ agent: writeAgent(true), server, task: "Report.", fixture: FIXTURE })
    const failed = expectEndedWith(run, "error")
    expect(run.exitCode).toBe(1)
    expect(failed.type === "job.failed" ? failed.message : "").toContain("src/app.ts:8-9 (in report.md line 4)")
    expect(groundingOf(run.events)).toMatchObject({ ungrounded: 1, required: true })
    expect(run.job.agent).toMatchObject({ grounding: "required" })
  })

  test("a report whose citations were all read is clean, and completes under grounding: required", async () => {
    const report = "# Values\n\n- v1..v3 at src/app.ts:1-3\n- v7 at `src/app.ts:7`\n"
    const server = await serve(report, { evidence: [{ path: "src/app.ts", line: 2, endLine: 3 }] }, "See src/app.ts:2.")
    const run = await runAgent({ agent: writeAgent(true), server, task: "Report.", fixture: FIXTURE })
    expectEndedWith(run, "completed")
    expect(groundingOf(run.events)).toMatchObject({ grounded: 4, ungrounded: 0, unknown: 0, required: true })
  })
})

const writeAgent = (required: boolean): string => {
  const path = join(tempDir(), "reporter.md")
  writeFileSync(path, agent(required))
  return path
}
