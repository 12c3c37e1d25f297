/**
 * `kintsugi run` with a server up: the job goes through the server's API (token from KINTSUGI_TOKEN or
 * the token file), its events stream back, the summary is printed once; with no server and no
 * installation, one clear line and no data dir is created.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { INSTALL_DIR } from "../../src/cli/installation.ts"
import { listen } from "../../src/http/serve.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { createRootDir, testJobRoots } from "../support/jobRoots.ts"
import { BUILTIN_OUTPUTS, builtinAnswer, builtinAnswerTurn, builtinOutputsStep } from "../support/builtinOutputs.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { makeTestApp, type TestApp } from "../support/testApp.ts"

setDefaultTimeout(90_000)
const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")
/** Nothing listens on port 1: "no server is up", whatever else runs on this machine's 7777. */
const NO_SERVER = "http://127.0.0.1:1"

const spawnRun = (cwd: string, env: Record<string, string>, extra: ReadonlyArray<string> = []) =>
  Bun.spawn(["bun", CLI, "run", "codebase-inventory", "--task", "Inventory it.", "--read", "src", "--out", "out", ...extra], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env["PATH"] ?? "", HOME: cwd, NO_PROXY: "127.0.0.1,localhost", ...env }
  })
const finished = async (child: ReturnType<typeof spawnRun>) => {
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { out, err, code }
}
const workDir = (root: string) => {
  mkdirSync(join(root, "src"), { recursive: true })
  mkdirSync(join(root, "out"), { recursive: true })
  writeFileSync(join(root, "src", "a.ts"), "export const a = 1\n")
  return root
}

describe("with a server up", () => {
  let model: ScriptedServer
  let made: TestApp
  let server: ReturnType<typeof listen>
  let token: string
  let url: string
  const logs: Array<string> = []
  const work = workDir(createRootDir("clirun-"))
  // A data dir that does not exist: the API path must never open (or create) a local installation.
  const absent = join(work, "no-installation-here")

  beforeAll(async () => {
    // Two scripted turns per job that runs (two tests start one each): its contracted files, then its answer.
    model = await startOpenAIServer([
      builtinOutputsStep("codebase-inventory"),
      builtinAnswerTurn("codebase-inventory", "Remote summary: one file."),
      builtinOutputsStep("codebase-inventory"),
      builtinAnswerTurn("codebase-inventory", "Second summary."),
      // --json, then Ctrl-C.
      builtinOutputsStep("codebase-inventory"),
      builtinAnswerTurn("codebase-inventory", "JSON summary."),
      { kind: "stall", afterText: "Partial" }
    ])
    made = await makeTestApp({ jobRoots: testJobRoots([work]), worker: { log: (l) => logs.push(l) }, appLog: (l) => logs.push(l) })
    await made.runtime.runPromise(
      Effect.gen(function* () {
        yield* (yield* ProviderStore).create(
          {
            kind: "custom",
            id: "local",
            api: "openai-completions",
            baseUrl: model.baseUrl,
            apiKey: "sk-remote-run-123456",
            models: [{ id: "m", contextWindow: 64000, maxTokens: 4096 }]
          },
          "test"
        )
        yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "local", modelId: "m" }, "test")
      })
    )
    token = await made.addUser("remote", "a long test password", ["agents.manage"])
    server = listen(made.app, { hostname: "127.0.0.1", port: 0 })
    url = `http://127.0.0.1:${server.port}`
  })
  afterAll(async () => {
    await server.stop(true)
    await made.dispose()
    await model.stop()
    rmSync(work, { recursive: true, force: true })
  })

  test("the job runs on the server, started with KINTSUGI_TOKEN; events stream back; the summary once; exit 0", async () => {
    const r = await finished(spawnRun(work, { KINTSUGI_URL: url, KINTSUGI_TOKEN: token, KINTSUGI_DATA_DIR: absent }))
    expect(r.err).toBe("")
    expect(r.code).toBe(0)
    expect(r.out).toContain("● codebase-inventory v3")
    expect(r.out.split("Remote summary: one file.").length - 1).toBe(1)
    expect(r.out.split("✔ completed").length - 1).toBe(1)
    expect(r.out).toContain("outputs: ")
    expect(existsSync(absent)).toBe(false)
    const jobs = await made.runtime.runPromise(
      Effect.flatMap(SqlClient, (sql) => sql<{ createdBy: string; status: string }>`SELECT created_by, status FROM runtime.job`)
    )
    expect(jobs).toEqual([{ createdBy: "remote", status: "completed" }])
  })

  test("the token file is read when KINTSUGI_TOKEN is unset", async () => {
    const config = mkdtempSync(join(tmpdir(), "kintsugi-config-"))
    mkdirSync(join(config, "kintsugi"))
    writeFileSync(join(config, "kintsugi", "token"), `${token}\n`)
    const r = await finished(spawnRun(work, { KINTSUGI_URL: url, XDG_CONFIG_HOME: config, KINTSUGI_DATA_DIR: absent }))
    rmSync(config, { recursive: true, force: true })
    expect(r.code).toBe(0)
    expect(r.out).toContain("✔ completed")
  })

  test("no token: one line naming KINTSUGI_TOKEN, the token file and how to issue one; exit 2, nothing started", async () => {
    const before = await made.runtime.runPromise(Effect.flatMap(SqlClient, (sql) => sql`SELECT id FROM runtime.job`))
    const r = await finished(spawnRun(work, { KINTSUGI_URL: url, KINTSUGI_DATA_DIR: absent }))
    expect(r.code).toBe(2)
    expect(r.err).toContain(`a kintsugi server is running at ${url}`)
    expect(r.err).toContain("KINTSUGI_TOKEN")
    expect(r.err).toContain(join(work, ".config", "kintsugi", "token"))
    expect(r.err).toContain("POST /api/tokens")
    expect(await made.runtime.runPromise(Effect.flatMap(SqlClient, (sql) => sql`SELECT id FROM runtime.job`))).toHaveLength(before.length)
  })

  test("a refused token: the server's refusal named, exit 1", async () => {
    const r = await finished(spawnRun(work, { KINTSUGI_URL: url, KINTSUGI_TOKEN: "kt_not-a-real-token", KINTSUGI_DATA_DIR: absent }))
    expect(r.code).toBe(1)
    expect(r.err).toContain("the server refused the token")
  })

  test("--json: the job's events as NDJSON, then one summary object (status, reason, message, duration, usage, cost, job id, outputs)", async () => {
    const r = await finished(spawnRun(work, { KINTSUGI_URL: url, KINTSUGI_TOKEN: token, KINTSUGI_DATA_DIR: absent }, ["--json"]))
    expect(r.err).toBe("")
    expect(r.code).toBe(0)
    const objects = r.out
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    const events = objects.slice(0, -1)
    expect(events[0]).toMatchObject({ type: "job.started", agentId: "codebase-inventory" })
    expect(events.at(-1)?.["type"]).toBe("job.completed")
    expect(
      events
        .filter((e) => e["type"] === "message.delta")
        .map((e) => e["text"])
        .join("")
    ).toBe(builtinAnswer("codebase-inventory", "JSON summary."))
    const summary = objects.at(-1) ?? {}
    expect(Object.keys(summary).sort()).toEqual([
      "answer",
      "costUsd",
      "durationMs",
      "jobId",
      "message",
      "outputs",
      "reason",
      "status",
      "type",
      "usage"
    ])
    expect(summary).toMatchObject({ type: "summary", status: "completed", reason: null, message: null, usage: { turns: 2 } })
    // The typed answer, as the job.completed event carried it.
    expect(summary["answer"]).toEqual(BUILTIN_OUTPUTS["codebase-inventory"]?.answer)
    expect(events.at(-1)?.["answer"]).toEqual(BUILTIN_OUTPUTS["codebase-inventory"]?.answer)
    const jobs = await made.runtime.runPromise(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ id: string; outputs: string }>`SELECT id, outputs FROM runtime.job ORDER BY created_at DESC LIMIT 1`
      )
    )
    expect(summary["jobId"]).toBe(jobs[0]?.id)
    expect(summary["outputs"]).toBe(jobs[0]?.outputs)
    expect(summary["durationMs"]).toBeGreaterThan(0)
  })

  test("Ctrl-C: says it aborts the job, the server ends it as aborted, the summary line, exit 130", async () => {
    const child = spawnRun(work, { KINTSUGI_URL: url, KINTSUGI_TOKEN: token, KINTSUGI_DATA_DIR: absent })
    const reader = child.stdout.getReader()
    let out = ""
    while (!out.includes("Partial")) {
      const chunk = await reader.read()
      if (chunk.done) break
      out += new TextDecoder().decode(chunk.value)
    }
    child.kill("SIGINT")
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) out += new TextDecoder().decode(chunk.value)
    const err = await new Response(child.stderr).text()
    expect(await child.exited).toBe(130)
    const id = /^kintsugi run: Ctrl-C: aborting job (\S+)…\n$/.exec(err)?.[1]
    expect(id).toBeDefined()
    expect(out).toMatch(new RegExp(`Partial\\n✘ failed \\(aborted\\)[^\\n]* · job ${id}( · [^\\n]*)?\\n$`))
    const row = await made.runtime.runPromise(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ status: string; reason: string }>`SELECT status, reason FROM runtime.job WHERE id = ${id ?? ""}`
      )
    )
    expect(row).toEqual([{ status: "failed", reason: "aborted" }])
  })
})

test("no server and no installation: one clear line, exit 1, no data dir created", async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-nowhere-")))
  workDir(dir)
  // A relative data dir is taken from the installation directory, not from the shell's folder.
  const relative = `test-artifacts/run-absent-${process.pid}`
  const r = await finished(spawnRun(dir, { KINTSUGI_URL: NO_SERVER, KINTSUGI_JOB_ROOTS: dir, KINTSUGI_DATA_DIR: relative }))
  expect(r.code).toBe(1)
  expect(r.out).toBe("")
  expect(r.err.trim().split("\n")).toHaveLength(1)
  expect(r.err).toContain(
    `no kintsugi installation found: no server answers at ${NO_SERVER} and the data dir ${join(INSTALL_DIR, relative)} holds no database`
  )
  expect(existsSync(join(dir, ".kintsugi"))).toBe(false)
  expect(existsSync(join(INSTALL_DIR, relative))).toBe(false)
  rmSync(dir, { recursive: true, force: true })
})
