/** `kintsugi run` on @effect/cli: Ctrl-C ends the job as aborted and exits 130; a wrong secret key is one clear line. */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { makeDbLayer } from "../../src/db/Db.ts"
import { makeTestAppRuntime } from "../support/testApp.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { makeSecretBox, SecretBox, WRONG_KEY } from "../../src/providers/SecretBox.ts"
import { createTestDataDir } from "../support/db.ts"
import { testJobRoots } from "../support/jobRoots.ts"
import { type Step, startOpenAIServer } from "../support/scriptedServers.ts"

setDefaultTimeout(60_000)
const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")
const SECRET_KEY = "test-secret-key-for-cli-run"
const cleanups: Array<() => unknown> = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

/** A data dir whose codebase-inventory is bound to a scripted model, and a work dir inside the job roots. */
const setup = async (steps: Array<Step>) => {
  const { dataDir, cleanup } = await createTestDataDir()
  cleanups.push(cleanup)
  const server = await startOpenAIServer(steps)
  cleanups.push(() => server.stop())
  const secrets = Layer.succeed(SecretBox, makeSecretBox(new Uint8Array(new Bun.CryptoHasher("sha256").update(SECRET_KEY).digest())))
  const rt = await makeTestAppRuntime({ db: makeDbLayer({ dataDir }), jobRoots: testJobRoots(), secrets })
  await rt.runPromise(
    Effect.gen(function* () {
      yield* (yield* ProviderStore).create(
        { kind: "custom", id: "local", api: "openai-completions", baseUrl: server.baseUrl, apiKey: "sk-cli-run-123456", models: [{ id: "m", contextWindow: 64000, maxTokens: 4096 }] },
        "test"
      )
      yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "local", modelId: "m" }, "test")
    })
  )
  await rt.dispose()
  const work = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-clirun-")))
  cleanups.push(() => rmSync(work, { recursive: true, force: true }))
  mkdirSync(join(work, "src"))
  mkdirSync(join(work, "out"))
  writeFileSync(join(work, "src", "a.ts"), "export const a = 1\n")
  // KINTSUGI_URL: no server answers there (port 1), whatever else runs on this machine: the local path.
  const env = { PATH: process.env["PATH"] ?? "", HOME: work, NO_PROXY: "127.0.0.1,localhost", KINTSUGI_DATA_DIR: dirname(dataDir), KINTSUGI_JOB_ROOTS: work, KINTSUGI_URL: "http://127.0.0.1:1" }
  const run = (secretKey: string) =>
    Bun.spawn(["bun", CLI, "run", "codebase-inventory", "--task", "Inventory it.", "--read", "src", "--out", "out"], {
      cwd: work,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...env, KINTSUGI_SECRET_KEY: secretKey }
    })
  const jobs = async () => {
    const after = await makeTestAppRuntime({ db: makeDbLayer({ dataDir }), jobRoots: testJobRoots([work]) })
    const rows = await after.runPromise(Effect.flatMap(SqlClient, (sql) => sql<{ status: string; reason: string | null }>`SELECT status, reason FROM runtime.job`))
    await after.dispose()
    return rows.map((r) => `${r.status} ${r.reason ?? ""}`.trim())
  }
  return { run, jobs }
}

test("Ctrl-C: the job ends as aborted, then exit 130", async () => {
  const { run, jobs } = await setup([{ kind: "stall", afterText: "Partial" }])
  const child = run(SECRET_KEY)
  const reader = child.stdout.getReader()
  let out = ""
  while (!out.includes("Partial")) {
    const chunk = await reader.read()
    if (chunk.done) break
    out += new TextDecoder().decode(chunk.value)
  }
  expect(out).toContain("Partial")
  child.kill("SIGINT")
  expect(await child.exited).toBe(130)
  expect(await jobs()).toEqual(["failed aborted"])
})

test("a wrong secret key is named, not a raw crypto error", async () => {
  const { run } = await setup([{ kind: "turn", text: "never reached" }])
  const child = run("another-key-entirely")
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  expect(code).toBe(1)
  expect(out + err).toContain(WRONG_KEY)
  expect(out + err).not.toContain("authenticate data")
})

test("an embedded database held by another process: one line saying what to do, exit 1", async () => {
  const dir = mkdtempSync(join(tmpdir(), "kintsugi-locked-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  // This test process stands for a running `kintsugi serve`: alive, and not the child.
  writeFileSync(join(dir, "data.lock"), String(process.pid))
  const env = { PATH: process.env["PATH"] ?? "", HOME: dir, KINTSUGI_DATA_DIR: dir, KINTSUGI_JOB_ROOTS: dir, KINTSUGI_SECRET_KEY: SECRET_KEY, KINTSUGI_URL: "http://127.0.0.1:1" }
  const child = Bun.spawn(["bun", CLI, "run", "codebase-inventory", "--task", "t", "--read", dir, "--out", dir], { stdout: "pipe", stderr: "pipe", env })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  expect(code).toBe(1)
  expect(out).toBe("")
  expect(err.trim().split("\n")).toHaveLength(1)
  expect(err).toContain(`in use by process ${process.pid}`)
  expect(err).toContain("stop it, or point both at one PostgreSQL with DATABASE_URL")
})
