/** `kintsugi run`: a job for local use, with live progress, against the configured (embedded) database. */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { makeDbLayer } from "../../src/db/Db.ts"
import { makeAppRuntime } from "../../src/main.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { parseRunArgs } from "../../src/worker/runCommand.ts"
import { createTestDataDir } from "../support/db.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const cleanups: Array<() => unknown> = []
afterAll(async () => {
  for (const c of cleanups) await c()
})

test("argument problems are named", () => {
  expect(parseRunArgs([])).toBe("name the agent first")
  expect(parseRunArgs(["a", "--task", "t", "--out", "o"])).toBe("--task, --read and --out are required")
  expect(parseRunArgs(["a", "--task", "t", "--read", "r", "--out", "o", "--timeout", "-1"])).toBe("--timeout must be a positive number of seconds")
  expect(parseRunArgs(["a", "--frob", "x"])).toBe("unknown option --frob")
})

test("runs a built-in agent through its binding and shows progress live", async () => {
  const secretKey = "test-secret-key-for-run-command"
  process.env["KINTSUGI_SECRET_KEY"] = secretKey
  const { dataDir, cleanup } = await createTestDataDir()
  cleanups.push(cleanup)
  const server = await startOpenAIServer([
    { kind: "turn", toolCalls: [{ name: "write", arguments: { path: "inventory.md", content: "# Inventory\n" } }], usage: { input: 500, output: 40 } },
    { kind: "turn", text: "Inventory written.", usage: { input: 600, output: 10 } }
  ])
  cleanups.push(() => server.stop())
  const rt = await makeAppRuntime(makeDbLayer({ dataDir }))
  await rt.runPromise(
    Effect.gen(function* () {
      yield* (yield* ProviderStore).create(
        { kind: "custom", id: "local", api: "openai-completions", baseUrl: server.baseUrl, apiKey: "sk-local-run-123456", models: [{ id: "m", contextWindow: 64000, maxTokens: 4096 }] },
        "test"
      )
      yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "local", modelId: "m" }, "test")
    })
  )
  await rt.dispose()
  delete process.env["KINTSUGI_SECRET_KEY"]

  const work = mkdtempSync(join(tmpdir(), "kintsugi-run-"))
  cleanups.push(() => rmSync(work, { recursive: true, force: true }))
  mkdirSync(join(work, "src"))
  mkdirSync(join(work, "out"))
  writeFileSync(join(work, "src", "a.ts"), "export const a = 1\n")
  const child = Bun.spawn(
    ["bun", join(import.meta.dir, "..", "..", "src", "cli.ts"), "run", "codebase-inventory", "--task", "Inventory it.", "--read", "src", "--out", "out"],
    {
      cwd: work,
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: process.env["PATH"] ?? "", HOME: work, NO_PROXY: "127.0.0.1,localhost", KINTSUGI_DATA_DIR: dirname(dataDir), KINTSUGI_SECRET_KEY: secretKey }
    }
  )
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  expect({ code, err: err.slice(0, 500) }).toEqual({ code: 0, err: "" })
  expect(out).toContain("● codebase-inventory v1")
  expect(out).toContain("→ write")
  expect(out).toContain("wrote inventory.md")
  expect(out).toContain("✔ completed\nInventory written.")
  expect(out).toContain("outputs: not in a git work tree: left in place")
  expect(existsSync(join(work, "out", "inventory.md"))).toBe(true)
  expect(out).not.toContain("sk-local-run-123456")
}, 60_000)
