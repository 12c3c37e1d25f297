import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { zipSync } from "fflate"
import { parseAgentPackage, serializeAgentPackage } from "../../src/agents/AgentPackage.ts"
import { agentsValidate } from "../../src/agents/validateCommand.ts"
import { writeZip } from "../../src/agents/zip.ts"
import { createPackageFiles, SUPPORT_BOT_MD, valueOf } from "./fixtures.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

let tmp = ""
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-agents-validate-"))
})
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

const runWith = async (env: Record<string, string>, target: string) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const code = await agentsValidate(target, { out: (l) => out.push(l), err: (l) => err.push(l) }, env)
  return { code, out, err }
}
// The sandbox mode is explicit: the default (auto) adds no note about process tools. No installation:
// MCP grants are a note (validateCommandMcp.test.ts checks them against a registry).
const run = (target: string) => runWith({ KINTSUGI_DATA_DIR: path.join(tmp, "no-installation") }, target)

const writeTree = (dir: string, files: ReadonlyArray<{ path: string; content: string | Uint8Array }>) => {
  for (const f of files) {
    const p = path.join(dir, f.path)
    fs.mkdirSync(path.dirname(p), { recursive: true })
    fs.writeFileSync(p, f.content)
  }
  return dir
}

describe("kintsugi agents validate", () => {
  test("a single <name>.md: ok line, shared skills as a note", async () => {
    const file = path.join(tmp, "support-bot.md")
    fs.writeFileSync(file, SUPPORT_BOT_MD)
    expect(await run(file)).toEqual({
      code: 0,
      out: ["note: shared skills are checked when the agent is installed: house-style", "ok: support-bot v3 (runtime)"],
      err: []
    })
  })

  test("with KINTSUGI_SANDBOX=off, granted process tools get a note that they run unconfined", async () => {
    const file = path.join(tmp, "support-bot.md")
    fs.writeFileSync(file, SUPPORT_BOT_MD)
    expect((await runWith({ KINTSUGI_SANDBOX: "off" }, file)).out).toEqual([
      "note: shared skills are checked when the agent is installed: house-style",
      "note: shell would run unconfined here (KINTSUGI_SANDBOX=off): as the runtime's user, able to read and write anything it can",
      "ok: support-bot v3 (runtime)"
    ])
    fs.writeFileSync(file, SUPPORT_BOT_MD.replace("  - shell\n", ""))
    expect((await runWith({ KINTSUGI_SANDBOX: "off" }, file)).out.join("\n")).not.toContain("unconfined")
  })

  test("a package folder, read recursively; MCP servers are a note too", async () => {
    const dir = writeTree(
      path.join(tmp, "pkg"),
      createPackageFiles({ "support-bot.md": SUPPORT_BOT_MD.replace("  - shell", "  - mcp__kb__search") })
    )
    const r = await run(dir)
    expect(r.code).toBe(0)
    expect(r.out).toEqual([
      "note: shared skills are checked when the agent is installed: house-style",
      "note: MCP servers are checked when the agent is installed: kb",
      "ok: support-bot v3 (runtime)"
    ])
  })

  test("symbolic links inside a folder are not followed", async () => {
    const dir = writeTree(path.join(tmp, "linked"), createPackageFiles())
    fs.writeFileSync(path.join(tmp, "secret.txt"), "canary-secret")
    fs.symlinkSync(path.join(tmp, "secret.txt"), path.join(dir, "scripts", "leak.sh"))
    fs.symlinkSync(tmp, path.join(dir, "commands", "up"))
    const r = await run(dir)
    expect(r.code).toBe(1)
    expect(r.out).toContain("commands/up: symbolic links are not followed")
    expect(r.out).toContain("scripts/leak.sh: symbolic links are not followed")
    expect(r.out.join("\n")).not.toContain("canary-secret")
  })

  test("an exported zip, also wrapped in one folder", async () => {
    const pkg = valueOf(parseAgentPackage(createPackageFiles()))
    const flat = path.join(tmp, "support-bot.zip")
    fs.writeFileSync(flat, writeZip(serializeAgentPackage(pkg)))
    expect((await run(flat)).out.at(-1)).toBe("ok: support-bot v3 (runtime)")
    const wrapped = path.join(tmp, "wrapped.zip")
    fs.writeFileSync(wrapped, writeZip(serializeAgentPackage(pkg).map((f) => ({ ...f, path: `support-bot/${f.path}` }))))
    expect((await run(wrapped)).code).toBe(0)
  })

  test("a zip with bad names prints every problem and exits 1", async () => {
    const file = path.join(tmp, "bad.zip")
    fs.writeFileSync(file, zipSync({ "../../x.md": new Uint8Array(1), "/abs.md": new Uint8Array(1) }))
    expect(await run(file)).toEqual({
      code: 1,
      out: ["../../x.md: `..` segments are not allowed", "/abs.md: absolute paths are not allowed"],
      err: []
    })
  })

  test("every problem of a bad package, one per line, with control characters escaped", async () => {
    const text = SUPPORT_BOT_MD.replace("thinking: medium", "thinking: extreme").replace("  - shell", '  - "sh\\e[31mell"')
    const dir = writeTree(path.join(tmp, "bad"), createPackageFiles({ "support-bot.md": text, "skills/Bad Name/SKILL.md": "x" }))
    const r = await run(dir)
    expect(r.code).toBe(1)
    expect(r.out).toEqual(
      expect.arrayContaining([
        "support-bot.md#thinking: must be one of off, minimal, low, medium, high, xhigh, max",
        expect.stringMatching(/^support-bot\.md#tools\.2: unknown tool "sh\\u001b\[31mell"/),
        expect.stringMatching(/^skills\/Bad Name\/SKILL\.md: local skill name "Bad Name" must match/)
      ])
    )
    expect(r.out.join("\n")).not.toContain("\u001b")
    expect(r.out.some((l) => l.startsWith("ok:"))).toBe(false)
  })

  test("an unreadable target exits 2", async () => {
    const missing = await run(path.join(tmp, "nope.md"))
    expect(missing.code).toBe(2)
    expect(missing.err[0]).toStartWith("error: cannot read ")
    const txt = path.join(tmp, "notes.txt")
    fs.writeFileSync(txt, "hello")
    expect((await run(txt)).code).toBe(2)
  })
})
