import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Exit } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createProcessRunner } from "../../src/tools/ProcessRunner.ts"
import { processTools } from "../../src/tools/processTools.ts"
import { makeShellTool } from "../../src/tools/shell.ts"
import type { ToolOutput } from "../../src/tools/Tool.ts"
import { createToolContext, type ToolContext } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const root = realpathSync(mkdtempSync(join(tmpdir(), "shell-tool-")))
mkdirSync(join(root, "out"))
const runner = createProcessRunner()
const shell = makeShellTool(runner)
afterAll(async () => {
  await Effect.runPromise(runner.killAll)
  rmSync(root, { recursive: true, force: true })
})

const createContext = (options: { remainingMs?: number; progress?: () => void } = {}): ToolContext =>
  createToolContext({ root, readOnly: [root], outDir: join(root, "out") }, options.remainingMs, options.progress).ctx

const exec = (args: Record<string, unknown>, ctx = createContext()) => Effect.runPromiseExit(Effect.provide(shell.execute(args), ctx))
const text = async (args: Record<string, unknown>, ctx = createContext()): Promise<string> => {
  const exit = await exec(args, ctx)
  if (Exit.isFailure(exit)) throw new Error(`failed: ${JSON.stringify(exit.cause)}`)
  return (exit.value as ToolOutput).text
}
const failureMessage = async (args: Record<string, unknown>, ctx = createContext()): Promise<string> => {
  const exit = await exec(args, ctx)
  if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") throw new Error("expected a ToolError")
  expect(exit.cause.error._tag).toBe("ToolError")
  return exit.cause.error.message
}

describe("shell tool", () => {
  test("runs bash -c in the workspace root and reports the exit code first", async () => {
    expect(await text({ command: "pwd" })).toBe(`exit code: 0\n${root}\n`)
    expect(await text({ command: "echo oops >&2; exit 7" })).toBe("exit code: 7\noops\n")
    expect(await text({ command: "true" })).toBe("exit code: 0\n(no output)")
  })

  test("a timeout says so, and never runs past the job's remaining time", async () => {
    expect(await text({ command: "sleep 30", timeoutSec: 1 })).toStartWith("timed out after 1s")
    const ctx = createContext({ remainingMs: 700 })
    expect(await text({ command: "sleep 30", timeoutSec: 600 }, ctx)).toStartWith("timed out after 0.7s")
  })

  test("no time left is a ToolError, not a process", async () => {
    expect(await failureMessage({ command: "true" }, createContext({ remainingMs: 0 }))).toContain("no time left")
  })

  test("invalid arguments come back as one ToolError", async () => {
    const message = await failureMessage({ command: "true", timeoutSec: 601 })
    expect(message).toContain("timeoutSec")
    expect(await failureMessage({ command: "" })).toContain("command")
    expect(await failureMessage({ command: "true", extra: 1 })).toContain("extra")
  })

  test("output is capped with a marker", async () => {
    const out = await text({ command: "seq 1 100000" })
    expect(out).toStartWith("exit code: 0 (output cut: head and tail kept)\n1\n2\n")
    expect(out).toContain(" lines (")
    expect(out).toEndWith("99999\n100000\n")
  })

  test("progress is reported while output arrives", async () => {
    let calls = 0
    await text({ command: "echo a; sleep 0.1; echo b" }, createContext({ progress: () => calls++ }))
    expect(calls).toBeGreaterThan(0)
  })

  test("commandOf is the command string exactly; the parameters describe every field", () => {
    const command = "  echo 'x'  |  cat  "
    expect(shell.commandOf?.({ command })).toBe(command)
    const props = shell.parameters.properties as Record<string, { description?: string }>
    expect(Object.keys(props).sort()).toEqual(["command", "timeoutSec"])
    for (const p of Object.values(props)) expect(p.description).toBeString()
    expect(shell.parameters.required).toEqual(["command"])
  })

  test("processTools gives shell and git on one runner", () => {
    expect(processTools(runner).map((t) => t.name)).toEqual(["shell", "git"])
  })
})
