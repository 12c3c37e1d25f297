/**
 * Agent Skill resource files reach jobs: a job queued through the API, running in a real job
 * child against a scripted model, reads its shared skill's resources at /skills/<skill>/<path> with
 * read, ls, grep and find; the prompt names the path; another skill's resources are not there; write and
 * edit cannot change them (nor shell, sandboxed); names that could escape are refused at import.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { writeZip } from "../../src/agents/zip.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { toolResultsOf } from "../../src/testing/toolResultsOf.ts"
import { bwrapWorks, BWRAP_SKIP_REASON } from "../support/sandbox.ts"
import { useServicesApp } from "../support/servicesHarness.ts"

setDefaultTimeout(120_000)

const h = useServicesApp()

const GUIDE = "# Guide\nHouse rule 42: name every file in kebab-case.\n"
const SECRET = "OTHER-SKILL-PRIVATE-7731\n"

const importSkill = async (name: string, files: Record<string, string>) => {
  const r = await h.api("POST", "/api/admin/agents/import", {
    files: [
      { path: `${name}/SKILL.md`, content: `---\nname: ${name}\ndescription: The ${name} skill.\n---\nFollow the ${name} guide.\n` },
      ...Object.entries(files).map(([path, content]) => ({ path: `${name}/${path}`, content }))
    ]
  })
  if (r.status !== 201) throw new Error(`importing ${name}: ${r.status} ${r.text}`)
}

const systemPromptOf = (body: unknown): string => {
  const messages = (body as { messages: Array<{ role: string; content: unknown }> }).messages
  const system = messages.find((m) => m.role === "system" || m.role === "developer")
  return typeof system?.content === "string" ? system.content : JSON.stringify(system?.content ?? "")
}
/** tool.result events in call order (a turn's read-only calls run at once and settle in any order). */
const toolResults = (events: ReadonlyArray<JobEvent>) => {
  const calls = events.flatMap((e) => (e.type === "tool.call" ? [e.callId] : []))
  return events.flatMap((e) => (e.type === "tool.result" ? [e] : [])).sort((a, b) => calls.indexOf(a.callId) - calls.indexOf(b.callId))
}

describe("skill resource files in jobs", () => {
  test("read, ls, grep and find see the listed skill's files at /skills; another skill's are absent; write and edit are refused", async () => {
    await importSkill("house-guide", { "references/guide.md": GUIDE, "scripts/check.sh": "#!/bin/sh\necho ok\n" })
    await importSkill("other-skill", { "references/secret.md": SECRET })
    const server = await h.agent(
      "guide-reader",
      { tools: ["read", "ls", "grep", "find", "write", "edit", "codemode"], skills: ["house-guide"] },
      [
        {
          kind: "turn",
          toolCalls: [
            { name: "read", arguments: { path: "/skills/house-guide/references/guide.md" } },
            { name: "ls", arguments: { path: "/skills" } },
            { name: "grep", arguments: { pattern: "House rule", path: "/skills" } },
            { name: "find", arguments: { pattern: "**/*", path: "/skills/house-guide" } },
            { name: "read", arguments: { path: "/skills/other-skill/references/secret.md" } },
            { name: "read", arguments: { path: "/skills/house-guide/../other-skill/references/secret.md" } },
            { name: "write", arguments: { path: "/skills/house-guide/references/guide.md", content: "replaced\n" } },
            { name: "edit", arguments: { path: "/skills/house-guide/references/guide.md", edits: [{ oldText: "42", newText: "43" }] } },
            { name: "ls", arguments: { path: "/skills/.." } }
          ]
        },
        { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "/skills/house-guide/references/guide.md" } }] },
        {
          kind: "turn",
          toolCalls: [
            {
              name: "codemode",
              arguments: {
                script:
                  'print((await tools.read({ path: "/skills/house-guide/scripts/check.sh" })).includes("echo ok") ? "inner read ok" : "missing")'
              }
            }
          ]
        },
        { kind: "turn", text: "Read the guide." }
      ]
    )
    // The skill's page lists the files where jobs read them.
    const skillPage = await h.api("GET", "/agent-skills/house-guide")
    expect(skillPage.status).toBe(200)
    expect(skillPage.text).toContain("<code>/skills/house-guide/references/guide.md</code>")
    const { job, events } = await h.runJob("guide-reader", undefined)
    expect(job.status).toBe("completed")
    // The job child's copy is gone once the job has ended.
    expect(readdirSync(tmpdir()).filter((d) => d.startsWith("kintsugi-skills-"))).toEqual([])
    const [read, ls, grep, find, other, dotdot, write, edit, above] = toolResultsOf(server.requests[1]!)
    expect(read).toContain("House rule 42")
    expect(ls).toBe("/skills/\nhouse-guide/")
    expect(grep).toContain("/skills/house-guide/references/guide.md:2: House rule 42")
    expect(find?.split("\n")).toEqual(["/skills/house-guide/references/guide.md", "/skills/house-guide/scripts/check.sh"])
    // The other skill's files were never handed to this job: nothing to read, by name or by `..`.
    for (const r of [other, dotdot]) {
      expect(r).toContain("file not found")
      expect(r).not.toContain("OTHER-SKILL-PRIVATE")
    }
    expect(JSON.stringify(server.requests.map((r) => r.body))).not.toContain("OTHER-SKILL-PRIVATE")
    // The folder holding /skills on the host is not readable: /skills is the top.
    expect(above).toContain("outside the readable workspace")
    // Writes go to the output directory only.
    expect(write).toContain("outside")
    expect(edit).toMatch(/outside|does not exist in the output directory/)
    // The file is unchanged afterwards, and no tool reported it as an output.
    expect(toolResultsOf(server.requests[2]!).at(-1)).toContain("House rule 42")
    expect(events.filter((e) => e.type === "output")).toEqual([])
    // codemode's inner calls go through the same confined tools.
    expect(toolResultsOf(server.requests[3]!).at(-1)).toBe("inner read ok")
    expect(
      toolResults(events)
        .filter((e) => e.success)
        .map((e) => e.tool)
    ).toEqual(["read", "ls", "grep", "find", "read", "codemode"])
    // The prompt says where the files are, beside the skill, with each file's path.
    const prompt = systemPromptOf(server.requests[0]!.body)
    expect(prompt).toContain("read-only under /skills/house-guide/")
    expect(prompt).toContain("- /skills/house-guide/references/guide.md\n- /skills/house-guide/scripts/check.sh\n</skill>")
    expect(prompt).not.toContain("other-skill")

    // An agent that lists no skill with resources has no /skills at all.
    const plain = await h.agent("no-skills", { tools: ["read", "ls"] }, [
      {
        kind: "turn",
        toolCalls: [
          { name: "read", arguments: { path: "/skills/house-guide/references/guide.md" } },
          { name: "ls", arguments: { path: "/skills" } }
        ]
      },
      { kind: "turn", text: "Nothing." }
    ])
    expect((await h.runJob("no-skills", undefined)).job.status).toBe("completed")
    for (const r of toolResultsOf(plain.requests[1]!)) expect(r).toContain("outside the readable workspace")
  })

  test.skipIf(!bwrapWorks)(`shell sees the files read-only at /skills in the sandbox ${BWRAP_SKIP_REASON}`, async () => {
    const server = await h.agent("guide-shell", { tools: ["shell"], skills: ["house-guide"] }, [
      {
        kind: "turn",
        toolCalls: [
          {
            name: "shell",
            arguments: {
              command:
                "cat /skills/house-guide/references/guide.md; echo x > /skills/house-guide/references/guide.md || echo WRITE-REFUSED; ls /skills"
            }
          }
        ]
      },
      { kind: "turn", text: "Done." }
    ])
    const { job } = await h.runJob("guide-shell", undefined)
    expect(job.status).toBe("completed")
    const [out] = toolResultsOf(server.requests[1]!)
    expect(out).toContain("House rule 42")
    expect(out).toContain("WRITE-REFUSED")
    expect(out).not.toContain("other-skill")
  })
})

describe("resource names are checked at import", () => {
  test("a ZIP holding a symbolic link is refused naming the entry, as are `..`, absolute and backslash names; nothing stored", async () => {
    const zip = writeZip([
      { path: "linky/SKILL.md", content: "---\nname: linky\ndescription: Has a link.\n---\nBody.\n" },
      { path: "linky/references/passwd", content: "/etc/passwd" }
    ])
    markSymlink(zip, "linky/references/passwd")
    const r = await h.api("POST", "/api/admin/agents/import", { zip: Buffer.from(zip).toString("base64") })
    expect(r.status).toBe(400)
    expect(r.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems).toEqual([
      { path: "linky/references/passwd", message: expect.stringContaining("symbolic links are not allowed") }
    ])
    expect((await h.api("GET", "/api/admin/agent-skills/linky")).status).toBe(404)

    const named = await h.api("POST", "/api/admin/agents/import", {
      files: [
        { path: "SKILL.md", content: "---\nname: escaping\ndescription: Tries to escape.\n---\nBody.\n" },
        { path: "../x", content: "a" },
        { path: "references/../../x", content: "b" },
        { path: "/etc/x", content: "c" },
        { path: "references\\x", content: "d" }
      ]
    })
    expect(named.status).toBe(400)
    const problems = named.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems
    expect(problems.map((p) => p.path).sort()).toEqual(["../x", "/etc/x", "references/../../x", "references\\x"])
    expect((await h.api("GET", "/api/admin/agent-skills/escaping")).status).toBe(404)
  })
})

/** Marks one central-directory entry of `zip` as a Unix symbolic link (what `zip -y` writes for a link). */
const markSymlink = (zip: Uint8Array, name: string): void => {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength)
  const wanted = new TextEncoder().encode(name)
  for (let p = 0; p + 46 < zip.length; p++) {
    if (view.getUint32(p, true) !== 0x02014b50) continue
    const nameLength = view.getUint16(p + 28, true)
    const entry = zip.subarray(p + 46, p + 46 + nameLength)
    if (entry.length === wanted.length && entry.every((b, i) => b === wanted[i])) {
      view.setUint16(p + 4, (3 << 8) | 20, true)
      view.setUint32(p + 38, (0o120777 << 16) >>> 0, true)
      return
    }
  }
  throw new Error(`no central entry ${name}`)
}
