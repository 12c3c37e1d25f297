/**
 * What an exported job test carries of the workspace: each file the job's source.read events name,
 * once, only inside a read-only entry (a symlink out of it is not followed), UTF-8 text within the
 * per-file cap; everything left out is named in the notes. A job without a transcript is refused.
 */
import { afterAll, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { AgentPackage } from "../../src/agents/packageSchema.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { exportFolder } from "../../src/http/api/exportTestFolder.ts"
import type { TranscriptTurn } from "../../src/job/Transcript.ts"

const root = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-export-folder-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
mkdirSync(join(root, "src"))
mkdirSync(join(root, "out"))
writeFileSync(join(root, "src", "a.ts"), "export const a = 1\n")
writeFileSync(join(root, "src", "big.txt"), "x".repeat(256 * 1024 + 1))
writeFileSync(join(root, "src", "blob.bin"), new Uint8Array([0xff, 0xfe, 0x00, 0x80]))
writeFileSync(join(root, "secret.txt"), "OUTSIDE-MARKER\n")
symlinkSync(join(root, "secret.txt"), join(root, "src", "link.txt"))

const at = "2026-12-07T00:00:00.000Z"
const read = (seq: number, path: string): JobEvent => ({ type: "source.read", seq, at, tool: "read", path, firstLine: 1, lastLine: null })
const events: ReadonlyArray<JobEvent> = [
  read(0, "src/a.ts"),
  read(1, "src/a.ts"),
  read(2, "src/big.txt"),
  read(3, "src/blob.bin"),
  read(4, "src/link.txt"),
  read(5, "secret.txt"),
  read(6, "src/gone.ts"),
  { type: "job.completed", seq: 7, at, summary: "Done." }
]
const turns: ReadonlyArray<TranscriptTurn> = [
  {
    turn: 1,
    instructionsHash: "a".repeat(64),
    toolsHash: "b".repeat(64),
    messages: [{ role: "user", content: "task" }],
    answer: { role: "assistant", content: [{ type: "text", text: "Done." }] }
  }
]
const pkg: AgentPackage = {
  name: "reader",
  version: 2,
  description: "Reads.",
  audience: "runtime",
  instructions: "Read.",
  localSkills: [],
  files: []
}
const job = {
  id: "job-1",
  agentName: "reader",
  agentVersion: 2,
  task: "Read it.",
  workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") }
}

test("only the files read inside the read-only entries, as text within the cap; the rest named", () => {
  const folder = exportFolder({ job, pkg, model: undefined, sharedSkills: new Map(), turns, events })
  if ("why" in folder) throw new Error(folder.why)
  const paths = folder.files.map((f) => f.path)
  expect(paths.filter((p) => p.startsWith("workspace/"))).toEqual(["workspace/src/a.ts"])
  expect(paths).toEqual(
    expect.arrayContaining(["package.json", "job.json", "model.json", "expected.json", "job.test.ts", "agent/reader.md"])
  )
  expect(JSON.stringify(folder.files)).not.toContain("OUTSIDE-MARKER")
  expect(folder.notes).toEqual([
    "workspace/secret.txt: left out (not a file inside a read-only entry of the job)",
    expect.stringContaining("workspace/src/big.txt: left out (262145 bytes"),
    "workspace/src/blob.bin: left out (not UTF-8 text)",
    "workspace/src/gone.ts: left out (no longer on disk)",
    "workspace/src/link.txt: left out (not a file inside a read-only entry of the job)"
  ])
  const recorded = JSON.parse(folder.files.find((f) => f.path === "job.json")?.content ?? "{}")
  expect(recorded.workspace).toEqual({ folder: "workspace", readOnly: [{ path: "src", kind: "dir" }], outDir: "out" })
  expect(folder.files.find((f) => f.path === "README.md")?.content).toContain("not UTF-8 text")
})

test("a job that kept no transcript is refused, saying so", () => {
  expect(exportFolder({ job, pkg, model: undefined, sharedSkills: new Map(), turns: [], events })).toEqual({
    why: expect.stringContaining("it kept no transcript")
  })
})
