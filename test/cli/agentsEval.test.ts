/**
 * `kintsugi agents eval <agent> [--agent-version N]` against a running server: the run goes through the API,
 * its table is printed, the exit code says whether every eval passed; refusals exit 2 with the server's message.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { join } from "node:path"
import { listen } from "../../src/http/serve.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { createRootDir, testJobRoots } from "../support/jobRoots.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { makeTestApp, type TestApp } from "../support/testApp.ts"

setDefaultTimeout(90_000)
const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")
const work = createRootDir("clieval-")

const evalCli = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = Bun.spawn(["bun", CLI, "agents", "eval", ...args], {
    cwd: work,
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env["PATH"] ?? "", HOME: work, NO_PROXY: "127.0.0.1,localhost", ...env }
  })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { out, err, code }
}

describe("kintsugi agents eval", () => {
  let model: ScriptedServer
  let made: TestApp
  let server: ReturnType<typeof listen>
  let env: Record<string, string>

  beforeAll(async () => {
    model = await startOpenAIServer([])
    made = await makeTestApp({ jobRoots: testJobRoots([work]), worker: {} })
    await made.runtime.runPromise(
      Effect.gen(function* () {
        yield* (yield* ProviderStore).create(
          {
            kind: "custom",
            id: "local",
            api: "openai-completions",
            baseUrl: model.baseUrl,
            apiKey: "sk-eval-cli-123456",
            models: [{ id: "m", contextWindow: 64000, maxTokens: 4096 }]
          },
          "test"
        )
        yield* (yield* Bindings).set("teller", "", { providerId: "local", modelId: "m" }, "test")
      })
    )
    const token = await made.addUser("evaluator", "a long test password", ["agents.manage"])
    server = listen(made.app, { hostname: "127.0.0.1", port: 0 })
    env = { KINTSUGI_URL: `http://127.0.0.1:${server.port}`, KINTSUGI_TOKEN: token }
    const files = [
      { path: "teller.md", content: "---\nname: teller\nversion: 1\ndescription: Tells.\ntools: []\n---\nTell.\n" },
      {
        path: "evals/says-orders.md",
        content: "---\ndescription: Mentions orders.\nfixture: tiny\nexpect:\n  contains:\n    - { text: orders }\n---\nWhat is this?\n"
      },
      { path: "evals/fixtures/tiny/a.txt", content: "orders\n" }
    ]
    const r = await made.app.handle(
      new Request(`${env["KINTSUGI_URL"]}/api/admin/agents`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ files })
      })
    )
    expect(r.status).toBe(201)
  })
  afterAll(async () => {
    await server.stop(true)
    await made.dispose()
    await model.stop()
  })

  test("every eval passes: a table with the eval, pass, its cost and time; exit 0", async () => {
    model.append({ kind: "turn", text: "It lists orders.", usage: { input: 100, output: 10 } })
    const r = await evalCli(["teller"], env)
    expect(r.err).toBe("")
    expect(r.code).toBe(0)
    expect(r.out).toContain("teller v1: eval run")
    expect(r.out).toMatch(/says-orders\s+pass\s+/)
    expect(r.out).toContain("1 evals: 1 passed, 0 failed")
  })

  test("an eval fails: FAIL with its problem; exit 1 (--agent-version N picks the version)", async () => {
    model.append({ kind: "turn", text: "Nothing to see.", usage: { input: 100, output: 10 } })
    const r = await evalCli(["teller", "--agent-version", "1"], env)
    expect(r.code).toBe(1)
    expect(r.out).toMatch(/says-orders\s+FAIL\s+/)
    expect(r.out).toContain('  - neither the summary nor any output contains "orders"')
    expect(r.out).toContain("1 evals: 0 passed, 1 failed")
  })

  test("refused: an unknown version or agent exits 2 with the server's message; no server exits 2", async () => {
    const noVersion = await evalCli(["teller", "--agent-version=9"], env)
    expect(noVersion.code).toBe(2)
    expect(noVersion.err.trim()).toBe('kintsugi agents eval: agent "teller" has no version 9')
    const noAgent = await evalCli(["nobody"], env)
    expect(noAgent.code).toBe(2)
    expect(noAgent.err.trim()).toBe('kintsugi agents eval: no agent "nobody"')
    const down = await evalCli(["teller"], { ...env, KINTSUGI_URL: "http://127.0.0.1:1" })
    expect(down.code).toBe(2)
    expect(down.err).toContain("no kintsugi server answers at http://127.0.0.1:1")
  })
})
