/**
 * Request bodies are decoded, never plucked: a malformed field is a 400 naming it (path and message),
 * and nothing is saved or queued.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { createAgent, createAgentFiles, useApi } from "../support/api.ts"

setDefaultTimeout(60_000)
const api = useApi()

describe("decoded bodies", () => {
  test("an agent save's note: not text, or too long, is 400 naming `note`; nothing is saved", async () => {
    await createAgent(api, "noted")
    const save = (note: unknown) =>
      api.request("PUT", "/api/admin/agents/noted", { token: api.manager.token, json: { ...createAgentFiles("noted"), note } })
    for (const [note, message] of [
      [5, "must be text"],
      ["x".repeat(2001), "is longer than 2,000 characters"]
    ] as const) {
      const r = await save(note)
      expect(r.status).toBe(400)
      expect(r.json<{ error: { code: string; problems: unknown } }>().error).toMatchObject({
        code: "bad-request",
        problems: [{ path: "note", message }]
      })
    }
    const versions = (await api.request("GET", "/api/admin/agents/noted/versions", { token: api.manager.token })).json<{
      versions: Array<unknown>
    }>().versions
    expect(versions).toHaveLength(1)
    expect((await save("a short note")).status).toBe(200)
  })

  test("a job request whose agentVersion is not a version number is 400 naming it, with the agent still checked", async () => {
    const r = await api.request("POST", "/api/jobs", {
      token: api.manager.token,
      json: {
        agent: "no-such-agent",
        task: "t",
        agentVersion: "two",
        workspace: { root: "/nowhere", readOnly: ["."], outDir: "out" },
        limits: { timeoutSec: 10 }
      }
    })
    expect(r.status).toBe(400)
    const paths = r.json<{ error: { problems: Array<{ path: string }> } }>().error.problems.map((p) => p.path)
    expect(paths).toContain("agentVersion")
    expect(paths).toContain("agent")
  })
})
