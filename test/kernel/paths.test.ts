/**
 * The read-tool path cases of security.md through the real job child: every escape attempt ends as
 * `tool.result success: false`, and the outside file's bytes appear in no request the model server got.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createEnvelope, createJob, createJobDirs, createProvider, runJobChild } from "../support/jobChild.ts"
import { startOpenAIServer, type Step } from "../support/scriptedServers.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const OUTSIDE_CANARY = "OUTSIDE-CANARY-b41d7e"
const outside = mkdtempSync(join(tmpdir(), "kintsugi-outside-"))
mkdirSync(join(outside, "deep", "src"), { recursive: true })
writeFileSync(join(outside, "secret.txt"), `${OUTSIDE_CANARY} plain\n`)
writeFileSync(join(outside, "deep", "src", "a.txt"), `${OUTSIDE_CANARY} deep\n`)
const dirs = createJobDirs({ "a.txt": "inside a\n" })
// A sibling whose name starts with the read-only root's name: prefix confusion.
mkdirSync(`${dirs.src}-evil`)
writeFileSync(join(`${dirs.src}-evil`, "x"), `${OUTSIDE_CANARY} sibling\n`)
symlinkSync(outside, join(dirs.src, "link"))
symlinkSync(join(outside, "deep"), join(dirs.src, "deeplink"))
afterAll(() => {
  dirs.cleanup()
  rmSync(outside, { recursive: true, force: true })
})

const attempts: ReadonlyArray<[string, Record<string, unknown>]> = [
  ["read", { path: "../../../../../../etc/passwd" }],
  ["read", { path: join(outside, "secret.txt") }],
  ["read", { path: "src-evil/x" }],
  ["read", { path: "../src-evil/x" }],
  ["read", { path: "src/link/secret.txt" }],
  ["read", { path: "src/deeplink/../src/a.txt" }],
  ["ls", { path: "src/link" }],
  ["grep", { pattern: "CANARY", path: "src/link" }],
  ["find", { pattern: "**/*.txt", path: "src/deeplink" }],
  ["read", { path: "out/../../secret.txt" }]
]

test("every escape attempt fails as a tool result and no outside byte reaches the model", async () => {
  const steps: Array<Step> = [
    ...attempts.map(([name, args]): Step => ({ kind: "turn", toolCalls: [{ name, arguments: args }] })),
    { kind: "turn", toolCalls: [{ name: "grep", arguments: { pattern: "CANARY" } }] },
    { kind: "turn", text: "nothing found" }
  ]
  const server = await startOpenAIServer(steps)
  try {
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]))
    expect(run.code).toBe(0)
    const results = run.events.filter((e) => e.type === "tool.result")
    expect(results.length).toBe(attempts.length + 1)
    results.slice(0, attempts.length).forEach((r, i) => {
      expect([i, r.type === "tool.result" && r.success]).toEqual([i, false])
    })
    for (const req of server.requests) {
      expect(req.rawBody).not.toContain(OUTSIDE_CANARY)
      expect(req.rawBody).not.toContain("root:x:0:0")
    }
    expect(run.stdout).not.toContain(OUTSIDE_CANARY)
  } finally {
    await server.stop()
  }
})
