/**
 * `kintsugi run` on @effect/cli: Ctrl-C says what it does, ends the job as aborted, reports that end and
 * exits 130 (before the job started: says so, queues nothing); a wrong secret key is one clear line.
 */
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
        {
          kind: "custom",
          id: "local",
          api: "openai-completions",
          baseUrl: server.baseUrl,
          apiKey: "sk-cli-run-123456",
          models: [{ id: "m", contextWindow: 64000, maxTokens: 4096 }]
        },
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
  const env = {
    PATH: process.env["PATH"] ?? "",
    HOME: work,
    NO_PROXY: "127.0.0.1,localhost",
    KINTSUGI_DATA_DIR: dirname(dataDir),
    KINTSUGI_JOB_ROOTS: work,
    KINTSUGI_URL: "http://127.0.0.1:1"
  }
  const run = (secretKey: string) =>
    Bun.spawn(["bun", CLI, "run", "codebase-inventory", "--task", "Inventory it.", "--read", "src", "--out", "out"], {
      cwd: work,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...env, KINTSUGI_SECRET_KEY: secretKey }
    })
  const jobs = async () => {
    const after = await makeTestAppRuntime({ db: makeDbLayer({ dataDir }), jobRoots: testJobRoots([work]) })
    const rows = await after.runPromise(
      Effect.flatMap(SqlClient, (sql) => sql<{ status: string; reason: string | null }>`SELECT status, reason FROM runtime.job`)
    )
    await after.dispose()
    return rows.map((r) => `${r.status} ${r.reason ?? ""}`.trim())
  }
  return { run, jobs }
}

test("Ctrl-C: 'aborting job <id>…', the job ends as aborted, its summary line, then exit 130", async () => {
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
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) out += new TextDecoder().decode(chunk.value)
  const err = await new Response(child.stderr).text()
  expect(await child.exited).toBe(130)
  expect(await jobs()).toEqual(["failed aborted"])
  // First on stderr (the runtime's own warning lines, `job settled`, may follow).
  expect(err).toMatch(/^kintsugi run: Ctrl-C: aborting job [0-9a-f-]{36}…\n/)
  const id = /aborting job (\S+)…/.exec(err)?.[1] ?? ""
  // The streamed text did not end with a newline: the summary starts on a line of its own.
  expect(out).toMatch(new RegExp(`Partial\\n✘ failed \\(aborted\\)[^\\n]* · job ${id}( · [^\\n]*)?\\n$`))
})

test("Ctrl-C before the job started: says so, queues nothing, exit 130", async () => {
  // A server that answers /healthz only when told: the command is waiting on it when Ctrl-C comes.
  let asked: () => void = () => undefined
  const healthAsked = new Promise<void>((resolve) => (asked = resolve))
  let answer: () => void = () => undefined
  const answered = new Promise<void>((resolve) => (answer = resolve))
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async () => {
      asked()
      await answered
      return new Response("ok")
    }
  })
  cleanups.push(() => server.stop(true))
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-early-")))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const env = {
    PATH: process.env["PATH"] ?? "",
    HOME: dir,
    KINTSUGI_DATA_DIR: join(dir, "data"),
    KINTSUGI_JOB_ROOTS: dir,
    KINTSUGI_URL: `http://127.0.0.1:${server.port}`,
    KINTSUGI_TOKEN: "kt_x"
  }
  const child = Bun.spawn(["bun", CLI, "run", "some-agent", "-t", "t", "-r", dir, "-o", dir, "--json"], {
    stdout: "pipe",
    stderr: "pipe",
    env
  })
  await healthAsked
  child.kill("SIGINT")
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  answer()
  expect(code).toBe(130)
  expect(out).toBe("")
  expect(err).toBe("kintsugi run: Ctrl-C: interrupted before the job started; nothing was queued\n")
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
  const env = {
    PATH: process.env["PATH"] ?? "",
    HOME: dir,
    KINTSUGI_DATA_DIR: dir,
    KINTSUGI_JOB_ROOTS: dir,
    KINTSUGI_SECRET_KEY: SECRET_KEY,
    KINTSUGI_URL: "http://127.0.0.1:1"
  }
  const child = Bun.spawn(["bun", CLI, "run", "codebase-inventory", "--task", "t", "--read", dir, "--out", dir], {
    stdout: "pipe",
    stderr: "pipe",
    env
  })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  expect(code).toBe(1)
  expect(out).toBe("")
  expect(err.trim().split("\n")).toHaveLength(1)
  expect(err).toContain(`in use by process ${process.pid}`)
  expect(err).toContain("stop it, or point both at one PostgreSQL with DATABASE_URL")
})
