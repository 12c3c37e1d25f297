/**
 * `kintsugi run --continue <job> "<task>"` against a running server: the continuation starts through
 * POST /api/jobs/:id/continue and is followed to its end like any run; the server's refusal is named;
 * without a server, or with options that describe a job, one clear line.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { listen } from "../../src/http/serve.ts"
import type { ScriptedServer } from "../support/scriptedServers.ts"
import { useServicesApp } from "../support/servicesHarness.ts"

setDefaultTimeout(120_000)
const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")

const h = useServicesApp()

describe("kintsugi run --continue", () => {
  let server: ReturnType<typeof listen>
  let url = ""
  let model: ScriptedServer
  const home = mkdtempSync(join(tmpdir(), "kintsugi-continue-cli-"))

  beforeAll(async () => {
    server = listen(h.app, { hostname: "127.0.0.1", port: 0 })
    url = `http://127.0.0.1:${server.port}`
    await h.project("cli-kept")
    expect((await h.api("PUT", "/api/projects/cli-kept", { name: "cli-kept", transcripts: "full" })).status).toBe(200)
    model = await h.agent("cli-follow", { tools: ["read"] }, [
      { kind: "turn", text: "First answer." },
      { kind: "turn", text: "Second answer." }
    ])
  })
  afterAll(async () => {
    await server.stop(true)
    rmSync(home, { recursive: true, force: true })
  })

  const cli = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
    const child = Bun.spawn(["bun", CLI, "run", ...args], {
      cwd: home,
      stdout: "pipe",
      stderr: "pipe",
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: home,
        NO_PROXY: "127.0.0.1,localhost",
        KINTSUGI_URL: url,
        KINTSUGI_TOKEN: h.token(),
        KINTSUGI_DATA_DIR: join(home, "no-installation-here"),
        ...env
      }
    })
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
    return { out, err, code }
  }

  test("continues a finished job through the server: followed to its end, exit 0; the model saw the parent's conversation first", async () => {
    const first = await h.runJob("cli-follow", "cli-kept", "Say something.")
    expect(first.job.status).toBe("completed")
    const r = await cli(["--continue", first.job.id, "Say more."])
    expect(r.err).toBe("")
    expect(r.code).toBe(0)
    expect(r.out).toContain("Second answer.")
    expect(r.out).toContain("✔ completed")
    const sent = (model.requests[1]?.body as { messages: Array<{ role: string; content: unknown }> }).messages.filter(
      (m) => m.role !== "system" && m.role !== "developer"
    )
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "user"])
    expect(JSON.stringify(sent[2]?.content)).toContain("Say more.")
    const shown = (await h.api("GET", `/api/jobs/${first.job.id}`)).json<{ job: { continuations: Array<string> } }>()
    expect(shown.job.continuations.length).toBe(1)
  })

  test("the server's refusal is named (unknown job: exit 1); options that describe a job: exit 2; no server: exit 1", async () => {
    const unknown = await cli(["--continue", crypto.randomUUID(), "More."])
    expect(unknown.code).toBe(1)
    expect(unknown.err).toContain("no job")
    const usage = await cli(["--continue", crypto.randomUUID(), "More.", "--read", "src"])
    expect(usage.code).toBe(2)
    expect(usage.err).toContain("--continue takes the next task as its argument and no --read")
    const offline = await cli(["--continue", crypto.randomUUID(), "More."], { KINTSUGI_URL: "http://127.0.0.1:1" })
    expect(offline.code).toBe(1)
    expect(offline.err).toContain("--continue needs a running kintsugi server")
  })
})
