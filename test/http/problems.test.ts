/**
 * Every problem at once: a package with many faults is one 400 listing each with its path, the same
 * from create, save, import and preview.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { createAgent, storeFingerprint, useApi } from "../support/api.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const api = useApi()

const FAULTY_MD = `---
name: faulty
version: 1
description: Has everything wrong.
tools:
  - read
  - teleport
skills:
  - Not A Skill
  - no-such-shared-skill
thinking: huge
deny-command-patterns:
  - "(a)\\\\1"
  - "(unclosed"
metadata:
  audience: runtime
---
Body.
`
const faultyFiles = () => ({
  files: [
    { path: "faulty.md", content: FAULTY_MD },
    { path: "skills/Bad_Name/SKILL.md", content: "A local skill with a bad name.\n" },
    { path: "notes.txt", content: "not a package file\n" }
  ]
})

const EXPECTED_PATHS = [
  "faulty.md#deny-command-patterns.0",
  "faulty.md#deny-command-patterns.1",
  "faulty.md#skills.0",
  "faulty.md#skills.1",
  "faulty.md#thinking",
  "faulty.md#tools.1",
  "notes.txt",
  "skills/Bad_Name/SKILL.md"
]

const pathsOf = (problems: ReadonlyArray<{ path: string; message: string }>) => [...new Set(problems.map((p) => p.path))].sort()

const expectAllProblems = (problems: ReadonlyArray<{ path: string; message: string }>) => {
  expect(pathsOf(problems)).toEqual(EXPECTED_PATHS)
  for (const p of problems) expect(p.message.length).toBeGreaterThan(0)
  const at = (path: string) =>
    problems
      .filter((p) => p.path === path)
      .map((p) => p.message)
      .join(" | ")
  expect(at("faulty.md#tools.1")).toContain('unknown tool "teleport"')
  expect(at("faulty.md#skills.0")).toContain("must match [a-z][a-z0-9-]*")
  expect(at("faulty.md#skills.1")).toBe('shared skill "no-such-shared-skill" does not exist')
  expect(at("faulty.md#thinking")).toBe("must be one of off, minimal, low, medium, high, xhigh, max")
  expect(at("skills/Bad_Name/SKILL.md")).toContain("must match [a-z][a-z0-9-]*")
}

describe("one 400 with every problem, each with its path", () => {
  test("create: bad skill names, an unknown tool, invalid deny patterns, a bad thinking level, a stray file", async () => {
    const before = await storeFingerprint(api)
    const r = await api.request("POST", "/api/admin/agents", { token: api.manager.token, json: faultyFiles() })
    expect(r.status).toBe(400)
    const error = r.json().error
    expect(error.code).toBe("agent-invalid")
    expect(error.message).toBe(`the agent package has ${error.problems.length} problems`)
    expect(error.problems.length).toBeGreaterThanOrEqual(8)
    expectAllProblems(error.problems)
    expect(await storeFingerprint(api)).toBe(before)
  })

  test("save, import and preview report the same problems", async () => {
    await createAgent(api, "faulty")
    const before = await storeFingerprint(api)
    const save = await api.request("PUT", "/api/admin/agents/faulty", { token: api.manager.token, json: faultyFiles() })
    expect(save.status).toBe(400)
    expectAllProblems(save.json().error.problems)
    const imported = await api.request("POST", "/api/admin/agents/import", { token: api.manager.token, json: faultyFiles() })
    expect(imported.status).toBe(400)
    expect(imported.json().error.problems).toEqual(save.json().error.problems)
    const preview = await api.request("POST", "/api/admin/agents/preview", { token: api.reader.token, json: faultyFiles() })
    expect(preview.status).toBe(200)
    expect(preview.json()).toEqual({ problems: save.json().error.problems, definition: null })
    expect(await storeFingerprint(api)).toBe(before)
  })

  test("a body that is not JSON → 400 at (body); JSON of the wrong shape → 400 at each field", async () => {
    const notJson = await api.request("POST", "/api/admin/agents", {
      token: api.manager.token,
      body: "{files:",
      headers: { "content-type": "application/json" }
    })
    expect(notJson.status).toBe(400)
    expect(notJson.json()).toEqual({
      error: { code: "bad-request", message: "the request has problems", problems: [{ path: "(body)", message: "is not valid JSON" }] }
    })
    const shape = await api.request("POST", "/api/admin/agents", {
      token: api.manager.token,
      json: { files: [{ path: 1 }, { content: "x" }], extra: true }
    })
    expect(shape.status).toBe(400)
    expect(pathsOf(shape.json().error.problems)).toEqual(["extra", "files.0.content", "files.0.path", "files.1.path"])
  })

  test("a declared body over 16 MiB → 413 before it is read", async () => {
    const r = await api.request("POST", "/api/admin/agents", {
      token: api.manager.token,
      body: "{}",
      headers: { "content-type": "application/json", "content-length": String(16 * 1024 * 1024 + 1) }
    })
    expect(r.status).toBe(413)
    expect(r.json()).toEqual({
      error: { code: "payload-too-large", message: `the request body is larger than the limit of ${16 * 1024 * 1024} bytes` }
    })
  })

  test("a streamed body without a length is read only up to the cap", async () => {
    const MiB = 1 << 20
    const chunk = new Uint8Array(MiB).fill(0x20)
    let pulled = 0
    // 64 MiB of spaces, handed out on demand: a reader that honours the cap stops pulling after 16 MiB.
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= 64 * MiB) return controller.close()
        pulled += chunk.length
        controller.enqueue(chunk)
      }
    })
    const r = await api.request("POST", "/api/admin/agents", {
      token: api.manager.token,
      body,
      headers: { "content-type": "application/json" }
    })
    expect(r.status).toBe(413)
    expect(r.json()).toEqual({
      error: { code: "payload-too-large", message: `the request body is larger than the limit of ${16 * MiB} bytes` }
    })
    expect(pulled).toBeLessThanOrEqual(18 * MiB)
  })
})
