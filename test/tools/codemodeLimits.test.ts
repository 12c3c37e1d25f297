/**
 * codemode's limits (security rule 11): time (busy and parked scripts), memory, stack, tool calls,
 * output, the job's remaining time and interruption. Each ends the script; the host goes on.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Exit, Fiber, Schema } from "effect"
import { CODEMODE_READ_TOOLS, makeCodemode } from "../../src/tools/codemode/codemode.ts"
import { defineTool } from "../../src/tools/Tool.ts"
import { createToolContext, createWorkspaceTree, runToolError, runToolText, type WorkspaceTree } from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

let t: WorkspaceTree
/** An inner tool that never answers, recording when it is interrupted. */
let hangStarted: () => void = () => {}
let hangInterrupted = 0
const hang = defineTool({
  name: "hang",
  description: "Never answers.",
  params: Schema.Struct({}),
  execute: () =>
    Effect.sync(() => hangStarted()).pipe(
      Effect.zipRight(Effect.never),
      Effect.onInterrupt(() => Effect.sync(() => void hangInterrupted++))
    )
})
const codemode = makeCodemode([...CODEMODE_READ_TOOLS, hang])

beforeAll(async () => {
  t = await createWorkspaceTree({ "ro/c.ts": "export const c = 3\n" })
})
afterAll(() => t.cleanup())

const text = (script: string, extra: Record<string, unknown> = {}, remainingMs?: number) =>
  runToolText(codemode, { script, ...extra }, createToolContext(t.workspace, remainingMs).ctx)
const error = (script: string, extra: Record<string, unknown> = {}, remainingMs?: number) =>
  runToolError(codemode, { script, ...extra }, createToolContext(t.workspace, remainingMs).ctx)

/** The host is fine: a fresh script still runs and calls a tool. */
const hostStillFine = async () => expect(await text(`print((await tools.read({ path: "ro/c.ts" })).trim())`)).toBe("export const c = 3")

describe("codemode: time", () => {
  test.each([
    ["while (true) {}"],
    ["try { while (true) {} } catch {}"],
    ["try { for (;;) { try { while (true) {} } finally { continue } } } catch {}"]
  ])("%s is stopped at the deadline", async (script) => {
    expect(await error(script, { timeoutSec: 1 })).toBe("The script failed: the script was stopped at its time limit of 1 s")
    await hostStillFine()
  })

  test("for (;;) await null is stopped: at the deadline, or by the promise-job cap on a fast machine", async () => {
    // Which limit trips first depends on how many promise jobs this machine runs in a second.
    expect([
      "The script failed: the script was stopped at its time limit of 1 s",
      "The script failed: the script ran more than 1000000 promise jobs (the limit)"
    ]).toContain(await error("for (;;) await null", { timeoutSec: 1 }))
    await hostStillFine()
  })

  test("a host call that never settles ends at the time limit: the runtime is disposed and the inner call interrupted", async () => {
    const before = hangInterrupted
    expect(await error(`print("waiting"); await tools.hang({})`, { timeoutSec: 1 })).toBe(
      "The script failed: the script was stopped at its time limit of 1 s\n[printed before it stopped:]\nwaiting"
    )
    expect(hangInterrupted).toBe(before + 1)
    await hostStillFine()
  })

  test("the time limit never passes the job's remaining time", async () => {
    expect(await error("while (true) {}", { timeoutSec: 120 }, 1500)).toBe(
      "The script failed: the script was stopped at its time limit of 1.5 s"
    )
    expect(await error("print(1)", {}, 500)).toBe("the job has less than a second left: no time to run a script")
  })

  test("timeoutSec above 120 is refused by the schema", async () => {
    expect(await error("print(1)", { timeoutSec: 121 })).toContain('Invalid arguments for tool "codemode"')
  })

  test("interrupting the call (job abort) ends a parked script and its inner call at once", async () => {
    const before = hangInterrupted
    const started = new Promise<void>((resolve) => (hangStarted = resolve))
    const fiber = Effect.runFork(
      Effect.provide(codemode.execute({ script: "await tools.hang({})", timeoutSec: 60 }), createToolContext(t.workspace).ctx)
    )
    await started
    const exit = await Effect.runPromise(Fiber.interrupt(fiber))
    expect(Exit.isInterrupted(exit)).toBe(true)
    expect(hangInterrupted).toBe(before + 1)
    await hostStillFine()
  })
})

describe("codemode: memory and stack", () => {
  test.each([
    ["one 1 GB buffer", "const b = new ArrayBuffer(1024 ** 3); print(b.byteLength)"],
    ["1 GB in 1 MB typed arrays", "const keep = []; for (let i = 0; i < 1024; i++) keep.push(new Uint8Array(1 << 20)); print(keep.length)"],
    ["1 GB in 1 MB strings", "const keep = []; for (let i = 0; i < 1024; i++) keep.push(String(i).repeat(1 << 20)); print(keep.length)"]
  ])("%s is stopped by the memory limit; host memory stays bounded", async (_name, script) => {
    const rss = process.memoryUsage().rss
    expect(await error(script)).toContain("out of memory (line 1) (the script's memory limit is 64 MB)")
    expect(process.memoryUsage().rss - rss).toBeLessThan(400 * 1024 * 1024)
    await hostStillFine()
  })

  test("an allocation loop of small objects ends as out of memory, caught or not", async () => {
    expect(await error("const keep = []; for (;;) keep.push({ n: keep.length })")).toContain("(the script's memory limit is 64 MB)")
    expect(await text("const keep = []; try { for (;;) keep.push({ n: keep.length }) } catch {} keep.length = 0; print('recovered')")).toBe(
      "recovered"
    )
    await hostStillFine()
  })

  test("deep recursion is a stack overflow inside the script", async () => {
    expect(await error("const f = (n) => f(n + 1) + 1; f(0)")).toBe("The script failed: InternalError: stack overflow (line 1)")
    expect(await text("const f = (n) => f(n + 1) + 1; try { f(0) } catch (e) { print(e.message) }")).toBe("stack overflow")
    await hostStillFine()
  })

  test("deep native recursion (nested JSON, nested literals) stops the script, not the host", async () => {
    for (const script of ['JSON.parse("[".repeat(200000))', 'eval("[".repeat(200000) + "]".repeat(200000))']) {
      expect(await error(script)).toStartWith("The script failed: ")
      await hostStillFine()
    }
  })
})

describe("codemode: calls and output", () => {
  test("1 MB of prints is cut to the token cap with a note", async () => {
    const out = await text(`for (let i = 0; i < 1024; i++) print("x".repeat(1023))`)
    const [body, note] = [out.slice(0, out.lastIndexOf("\n")), out.slice(out.lastIndexOf("\n") + 1)]
    expect(body.length).toBeLessThanOrEqual(32_000)
    expect(body.length).toBeGreaterThan(31_000)
    expect(note).toBe(
      `[output cut at 8,000 tokens (32,000 characters): ${(1024 * 1023 - body.replaceAll("\n", "").length).toLocaleString("en-US")} more characters were printed; print a shorter digest]`
    )
  })

  test("one 5 MB print is cut inside the VM", async () => {
    const out = await text(`print("y".repeat(5 * 1024 * 1024))`)
    expect(out).toStartWith("y".repeat(32_000) + "\n[output cut at 8,000 tokens")
  })

  test("the 501st tool call is refused inside the script", async () => {
    const out = await text(`
      const results = await Promise.allSettled(Array.from({ length: 501 }, () => tools.read({ path: "ro/c.ts" })))
      print(results.filter((r) => r.status === "fulfilled").length, results[500].reason.message)`)
    expect(out).toBe("500 this script made more than 500 tool calls (the limit)")
  })

  test("a promise nothing will settle ends the script at once", async () => {
    expect(await error("await new Promise(() => {})")).toBe(
      "The script failed: the script is waiting for a promise that nothing will settle"
    )
  })

  test("oversized arguments are refused before they are parsed", async () => {
    expect(await text(`try { await tools.read({ path: "x".repeat(70000) }) } catch (e) { print(e.message) }`)).toBe(
      "tools.read: the arguments are longer than 65536 characters"
    )
  })
})
