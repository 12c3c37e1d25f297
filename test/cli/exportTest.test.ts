/**
 * `kintsugi jobs export-test` end to end: a real job of the built-in codebase-inventory agent, in a
 * project with `transcripts: full`, against a scripted model; exported through the API by the command's
 * writer; then, in a fresh folder with only the packed package installed, the exported `bun test`
 * passes, and fails once model.json makes another tool call. The API's refusals: 403 without
 * transcripts.read, 409 for a job without a transcript.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Access } from "../../src/access/Access.ts"
import { exportTestRemote } from "../../src/cli/exportTest.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { JobStore, type JobRow } from "../../src/worker/JobStore.ts"
import { ROOT } from "../architecture/importGraph.ts"
import { MODEL_PRICES } from "../support/jobChild.ts"
import { createRootDir } from "../support/jobRoots.ts"
import { startOpenAIServer, type ScriptedServer, type Step } from "../support/scriptedServers.ts"
import { useServicesApp } from "../support/servicesHarness.ts"
import { until } from "../support/waitFor.ts"

// A job, a pack, an install and two `bun test` runs in child processes: generous on a loaded machine.
setDefaultTimeout(300_000)

const h = useServicesApp()
const AGENT = "codebase-inventory"

const ANSWER = {
  summary: "An npm package, todo-api.",
  counts: { files: 2, lines: 7, languages: 1, modules: 1, entryPoints: 1, manifests: 1 },
  primaryLanguages: ["JavaScript"],
  highlights: [],
  gaps: [],
  injectionAttempts: 0,
  outputs: ["inventory.md", "inventory.json"]
}
const INVENTORY = {
  schema: "kintsugi.inventory/1",
  sourceRoot: "src",
  revision: null,
  summary: "An npm package, todo-api.",
  size: { files: 2, lines: 7, skipped: [] },
  languages: [],
  modules: [],
  entryPoints: [],
  tooling: { build: [], test: [], lint: [], ci: [], packaging: [], runtime: [] },
  manifests: [
    { path: "src/package.json", ecosystem: "npm", module: "todo-api", lockfile: null, dependencies: { runtime: 1, dev: 0 }, notable: [] }
  ],
  generatedCode: [],
  history: { available: false },
  openQuestions: [],
  coverage: { readInDepth: ["src/package.json"], sampled: [], skipped: [] },
  injectionAttempts: []
}
const STEPS: ReadonlyArray<Step> = [
  { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/package.json" } }], usage: { input: 900, output: 20 } },
  {
    kind: "turn",
    text: "Writing the report.",
    toolCalls: [
      { name: "write", arguments: { path: "inventory.md", content: "# Inventory\n\n| src/package.json:2 | npm | todo-api |\n" } },
      { name: "write", arguments: { path: "inventory.json", content: JSON.stringify(INVENTORY, null, 2) } }
    ]
  },
  { kind: "turn", text: JSON.stringify(ANSWER) }
]

let server: ScriptedServer | undefined
const work = mkdtempSync(join(tmpdir(), "kintsugi-export-test-"))
afterAll(async () => {
  await server?.stop()
  rmSync(work, { recursive: true, force: true })
})

let url = ""
let http: ReturnType<typeof Bun.serve> | undefined
beforeAll(async () => {
  await h.project("recorded")
  const set = await h.api("PUT", "/api/projects/recorded", { name: "recorded", transcripts: "full" })
  expect(set.status).toBe(200)
  server = await startOpenAIServer([])
  await h.rt.runPromise(
    Effect.flatMap(ProviderStore, (p) =>
      p.create(
        {
          kind: "custom",
          id: "recorder",
          api: "openai-completions",
          baseUrl: server!.baseUrl,
          apiKey: "sk-recorder-0123456789",
          models: [{ id: "m", contextWindow: 128_000, maxTokens: 4096, cost: MODEL_PRICES }]
        },
        "test"
      )
    )
  )
  await h.rt.runPromise(Effect.flatMap(Bindings, (b) => b.set(AGENT, "", { providerId: "recorder", modelId: "m" }, "test")))
  // The CLI talks HTTP: the app on a loopback port.
  http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (r) => h.app.handle(r) })
  url = `http://127.0.0.1:${http.port}`
})
afterAll(() => http?.stop(true))

/** Runs one job of codebase-inventory on a workspace with two source files and one it never reads. */
const runJob = async (project: string | undefined, steps: ReadonlyArray<Step>): Promise<JobRow> => {
  server!.append(...steps)
  const root = createRootDir("kintsugi-export-")
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  writeFileSync(
    join(root, "src", "package.json"),
    '{\n  "name": "todo-api",\n  "version": "1.0.0",\n  "dependencies": { "express": "4.19.2" }\n}\n'
  )
  writeFileSync(join(root, "src", "index.js"), 'const express = require("express")\nexpress().listen(3000)\n')
  writeFileSync(join(root, "src", "unread.txt"), "NEVER-READ-MARKER\n")
  const r = await h.api("POST", "/api/jobs", {
    agent: AGENT,
    task: "Inventory this codebase.",
    ...(project === undefined ? {} : { project }),
    workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
    limits: { timeoutSec: 120 }
  })
  expect(r.status).toBe(201)
  const id = r.json<{ job: JobRow }>().job.id
  return until(
    async () => {
      const job = await h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
      return (job.status === "completed" || job.status === "failed") && job
    },
    { what: `job ${id} to settle`, timeoutMs: 120_000, everyMs: 50 }
  )
}

const run = async (cmd: ReadonlyArray<string>, cwd: string) => {
  const proc = Bun.spawn([...cmd], { cwd, env: process.env, stdout: "pipe", stderr: "pipe", stdin: "ignore" })
  const [out, err, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { exitCode, output: `${out}${err}` }
}

describe("kintsugi jobs export-test", () => {
  let job: JobRow | undefined
  const folder = join(work, "exported")

  test("writes a completed job of a built-in agent as a test folder: package, the files it read, the turns, what to expect", async () => {
    job = await runJob("recorded", STEPS)
    expect(job.status).toBe("completed")
    // The command itself, against the app over HTTP.
    const cli = Bun.spawn(["bun", join(ROOT, "src", "cli.ts"), "jobs", "export-test", job.id, "--out", folder], {
      cwd: work,
      env: { ...process.env, KINTSUGI_URL: url, KINTSUGI_TOKEN: h.token() },
      stdout: "pipe",
      stderr: "pipe"
    })
    const [stdout, stderr, code] = await Promise.all([new Response(cli.stdout).text(), new Response(cli.stderr).text(), cli.exited])
    expect({ code, stdout, stderr }).toMatchObject({ code: 0, stderr: "" })
    expect(stdout).toContain(`wrote job ${job.id} as a test`)
    expect(existsSync(join(folder, "agent", `${AGENT}.md`))).toBe(true)
    expect(existsSync(join(folder, "agent", "schemas", "answer.schema.json"))).toBe(true)
    // Only what the job read: the manifest, not the files it never opened.
    expect(readdirSync(join(folder, "workspace", "src"))).toEqual(["package.json"])
    const model = JSON.parse(readFileSync(join(folder, "model.json"), "utf8"))
    expect(model.length).toBe(3)
    expect(model[0].toolCalls[0]).toMatchObject({ name: "read", arguments: { path: "src/package.json" } })
    const expected = JSON.parse(readFileSync(join(folder, "expected.json"), "utf8"))
    expect(expected.toolCalls.map((c: { tool: string }) => c.tool)).toEqual(["read", "write", "write"])
    expect(expected.outputs).toEqual(["inventory.md", "inventory.json"])
    expect(expected.answer).toEqual(ANSWER)
    const recorded = JSON.parse(readFileSync(join(folder, "job.json"), "utf8"))
    expect(recorded.model).toEqual({ contextWindow: 128_000, maxTokens: 4096 })
    expect(recorded.workspace).toEqual({
      folder: "workspace",
      readOnly: [{ path: "src", kind: "dir" }],
      outDir: "out"
    })
    // A second export into a folder that holds files is refused.
    expect(await exportTestRemote({ url, token: h.token(), tokenFile: "" }, job.id, folder, { write: () => {}, log: () => {} })).toBe(2)
  })

  test("the exported test passes in a fresh folder with only the packed package installed, and fails when the model's script changes", async () => {
    expect(job?.status).toBe("completed")
    const packed = await run(["bun", "pm", "pack", "--destination", work, "--quiet"], ROOT)
    expect(packed.exitCode).toBe(0)
    const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"))
    expect(tarball).toBeDefined()
    // The export depends on kintsugi-runtime at the server's version; here that is the tarball.
    const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"))
    expect(manifest.devDependencies).toEqual({ "kintsugi-runtime": JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version })
    manifest.devDependencies["kintsugi-runtime"] = `file:${join(work, tarball!)}`
    writeFileSync(join(folder, "package.json"), JSON.stringify(manifest, null, 2))
    const installed = await run(["bun", "install"], folder)
    expect({ exitCode: installed.exitCode, output: installed.output }).toMatchObject({ exitCode: 0 })
    expect(readdirSync(join(folder, "node_modules")).filter((d) => d.startsWith("kintsugi"))).toEqual(["kintsugi-runtime"])

    const passing = await run(["bun", "test"], folder)
    expect({ exitCode: passing.exitCode, output: passing.output }).toMatchObject({ exitCode: 0 })
    expect(passing.output).toContain("1 pass")

    // The model reads another file first: the replay's tool calls are not the job's.
    const model = JSON.parse(readFileSync(join(folder, "model.json"), "utf8"))
    model[0].toolCalls[0].arguments = { path: "src/other.json" }
    writeFileSync(join(folder, "model.json"), JSON.stringify(model, null, 2))
    const failing = await run(["bun", "test"], folder)
    expect(failing.exitCode).not.toBe(0)
    expect(failing.output).toContain("tool call 1 differs")
  })

  test("the API refuses a reader without transcripts.read (403) and a job that kept no transcript (409)", async () => {
    expect(job?.status).toBe("completed")
    await h.rt.runPromise(Effect.flatMap(Access, (a) => a.addUser("plain-reader", "a long test password", [])))
    const plain = await h.rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken("plain-reader", "test")))
    const refused = await h.api("GET", `/api/jobs/${job!.id}/export-test`, undefined, plain)
    expect(refused.status).toBe(403)
    expect(refused.text).not.toContain("todo-api")

    const unkept = await runJob(undefined, STEPS)
    expect(unkept.status).toBe("completed")
    const none = await h.api("GET", `/api/jobs/${unkept.id}/export-test`)
    expect(none.status).toBe(409)
    expect(none.json<{ error: { message: string } }>().error.message).toContain("kept no transcript")
    expect((await h.api("GET", `/api/jobs/${crypto.randomUUID()}/export-test`)).status).toBe(404)
  })
})
