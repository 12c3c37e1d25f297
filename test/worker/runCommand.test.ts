/** `kintsugi run`: a job for local use, with live progress, against the configured (embedded) database. */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { makeDbLayer } from "../../src/db/Db.ts"
import { SecretBoxLive } from "../../src/providers/SecretBox.ts"
import { makeTestAppRuntime } from "../support/testApp.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { commonAncestor } from "../../src/cli/run.ts"
import { childEnv } from "../support/jobChild.ts"
import { createTestDataDir } from "../support/db.ts"
import { testJobRoots } from "../support/jobRoots.ts"
import { BUILTIN_OUTPUTS, builtinAnswer, builtinOutputsStep } from "../support/builtinOutputs.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")
const cleanups: Array<() => unknown> = []
afterAll(async () => {
  for (const c of cleanups) await c()
})

/** The final answers (a note and the typed answer); the first without a trailing newline. */
const FIRST = builtinAnswer("codebase-inventory", "Inventory written.").trimEnd()
const SECOND = builtinAnswer("codebase-inventory", "Inventory written again.")

test("runs a built-in agent through its binding and shows progress live", async () => {
  const secretKey = "test-secret-key-for-run-command"
  process.env["KINTSUGI_SECRET_KEY"] = secretKey
  const { dataDir, cleanup } = await createTestDataDir()
  cleanups.push(cleanup)
  const server = await startOpenAIServer([
    builtinOutputsStep("codebase-inventory", "# Inventory\n", { input: 500, output: 40 }),
    { kind: "turn", text: FIRST, usage: { input: 600, output: 10 } },
    // The same job again, with --json.
    builtinOutputsStep("codebase-inventory", "# Inventory\n", { input: 500, output: 40 }),
    { kind: "turn", text: SECOND, usage: { input: 600, output: 10 } }
  ])
  cleanups.push(() => server.stop())
  const rt = await makeTestAppRuntime({ db: makeDbLayer({ dataDir }), jobRoots: testJobRoots(), secrets: SecretBoxLive })
  await rt.runPromise(
    Effect.gen(function* () {
      yield* (yield* ProviderStore).create(
        {
          kind: "custom",
          id: "local",
          api: "openai-completions",
          baseUrl: server.baseUrl,
          apiKey: "sk-local-run-123456",
          models: [{ id: "m", contextWindow: 64000, maxTokens: 4096 }]
        },
        "test"
      )
      yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "local", modelId: "m" }, "test")
    })
  )
  await rt.dispose()
  delete process.env["KINTSUGI_SECRET_KEY"]

  const work = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-run-")))
  cleanups.push(() => rmSync(work, { recursive: true, force: true }))
  // The test run's sandbox mode (bubblewrap where it works, else off): the built-in agent is granted shell.
  const env = {
    ...childEnv(),
    NO_PROXY: "127.0.0.1,localhost",
    KINTSUGI_DATA_DIR: dirname(dataDir),
    KINTSUGI_SECRET_KEY: secretKey,
    KINTSUGI_JOB_ROOTS: work,
    KINTSUGI_URL: "http://127.0.0.1:1"
  }
  mkdirSync(join(work, "src"))
  mkdirSync(join(work, "out"))
  writeFileSync(join(work, "src", "a.ts"), "export const a = 1\n")
  const child = Bun.spawn(["bun", CLI, "run", "codebase-inventory", "--task", "Inventory it.", "--read", "src", "--out", "out"], {
    cwd: work,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...env, HOME: work }
  })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  expect({ code, err: err.slice(0, 500) }).toEqual({ code: 0, err: "" })
  expect(out).toContain("● codebase-inventory v3")
  expect(out).toContain("→ write")
  expect(out).toContain("wrote inventory.md")
  expect(out).toContain("wrote inventory.json")
  // One summary line at the end, on a line of its own after the streamed text (which ends without a newline).
  expect(out).toContain(`${FIRST}\n  · turn 2`)
  expect(out).toMatch(
    /\n✔ completed in [\d.]+s · 2 turns · 1100 in \/ 50 out tokens · \$\d+\.\d{4} · job \S+ · outputs: not in a git work tree: left in place\n$/
  )
  // The final message once: streamed, not repeated after the verdict.
  expect(out.split("Inventory written.").length - 1).toBe(1)
  expect(existsSync(join(work, "out", "inventory.md"))).toBe(true)
  expect(out).not.toContain("sk-local-run-123456")

  // Outside the job roots (and above the data dir): refused with every problem, exit 2, nothing queued.
  const refused = Bun.spawn(
    ["bun", CLI, "run", "codebase-inventory", "--task", "Read it.", "--read", "/etc", "--read", "missing", "--out", "out"],
    {
      cwd: work,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...env, HOME: work }
    }
  )
  const [rout, rerr, rcode] = await Promise.all([new Response(refused.stdout).text(), new Response(refused.stderr).text(), refused.exited])
  expect({ code: rcode, out: rout }).toEqual({ code: 2, out: "" })
  expect(rerr).toContain("the job was not started")
  expect(rerr).toContain("workspace.root: resolves outside the job roots")
  expect(rerr).toContain("workspace.root: is or contains the server's data directory")
  expect(rerr).toContain("workspace.readOnly.0: resolves outside the job roots")
  expect(rerr).toContain("workspace.readOnly.1: does not exist")
  const after = await makeTestAppRuntime({ db: makeDbLayer({ dataDir }), jobRoots: testJobRoots([work]) })
  const jobs = await after.runPromise(Effect.flatMap(SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM runtime.job`))
  await after.dispose()
  expect(jobs[0]?.n).toBe(1)

  // --json (and the short flags): the job's events as NDJSON, then one summary object.
  const json = Bun.spawn(["bun", CLI, "run", "codebase-inventory", "-t", "Inventory it.", "-r", "src", "-o", "out", "--json"], {
    cwd: work,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...env, HOME: work }
  })
  const [jout, jerr, jcode] = await Promise.all([new Response(json.stdout).text(), new Response(json.stderr).text(), json.exited])
  expect({ code: jcode, err: jerr.slice(0, 500) }).toEqual({ code: 0, err: "" })
  const objects = jout
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>)
  const events = objects.slice(0, -1)
  expect(events[0]).toMatchObject({ type: "job.started", seq: 0, agentId: "codebase-inventory" })
  expect(events.map((e) => e["seq"])).toEqual(events.map((_, i) => i))
  expect(
    events
      .filter((e) => e["type"] === "message.delta")
      .map((e) => e["text"])
      .join("")
  ).toBe(SECOND)
  expect(events.at(-1)?.["type"]).toBe("job.completed")
  const summary = objects.at(-1)
  expect(summary).toMatchObject({
    type: "summary",
    status: "completed",
    reason: null,
    message: null,
    usage: { turns: 2, inputTokens: 1100, outputTokens: 50, cacheReadTokens: 0, cacheWriteTokens: 0 },
    outputs: "not in a git work tree: left in place",
    answer: BUILTIN_OUTPUTS["codebase-inventory"]?.answer
  })
  expect(typeof summary?.["jobId"]).toBe("string")
  expect(summary?.["durationMs"]).toBeGreaterThan(0)
  expect(typeof summary?.["costUsd"]).toBe("number")
}, 90_000)

test("the default workspace root is the deepest directory holding every --read and --out", () => {
  expect(commonAncestor(["/a/b/src", "/a/b/out"])).toBe("/a/b")
  expect(commonAncestor(["/a/b/src/x.ts", "/a/b/src/y", "/a/b/out"])).toBe("/a/b")
  expect(commonAncestor(["/etc", "/a/out"])).toBe("/")
  expect(commonAncestor(["/a/b/x.ts"])).toBe("/a/b")
}, 60_000)
