/**
 * codemode on its own: the API inside the VM, what does not exist there, and confinement of inner
 * calls (the limits are in codemodeLimits.test.ts).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Layer, Schema } from "effect"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { JobEvents } from "../../src/job/JobEvents.ts"
import * as JobServices from "../../src/job/JobServices.ts"
import { CODEMODE_READ_TOOLS, makeCodemode } from "../../src/tools/codemode/codemode.ts"
import { read } from "../../src/tools/read.ts"
import { defineTool } from "../../src/tools/Tool.ts"
import {
  createToolContext,
  createWorkspaceTree,
  runTool,
  runToolError,
  runToolText,
  type ToolContext,
  type WorkspaceTree
} from "../support/workspace.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

let t: WorkspaceTree
const codemode = makeCodemode(CODEMODE_READ_TOOLS)

beforeAll(async () => {
  t = await createWorkspaceTree(
    {
      "ro/src/a.ts": "export const a = 1\n// TODO: rename a\nexport const b = 2\n",
      "ro/src/b.ts": "import { a } from './a'\n\nexport function twice() {\n  // TODO: handle overflow\n  return a * 2\n}\n",
      "ro/src/c.ts": "export const c = 3\n",
      "ro/notes.md": "nothing to do here\n"
    },
    { outsideFiles: { "secret.txt": "OUTSIDE-CANARY-42\n" } }
  )
})
afterAll(() => t.cleanup())

const run = (script: string, extra: Record<string, unknown> = {}, ctx: ToolContext = createToolContext(t.workspace).ctx, tool = codemode) =>
  runTool(tool, { script, ...extra }, ctx)
const text = (script: string, extra: Record<string, unknown> = {}) =>
  runToolText(codemode, { script, ...extra }, createToolContext(t.workspace).ctx)
const error = (script: string, extra: Record<string, unknown> = {}) =>
  runToolError(codemode, { script, ...extra }, createToolContext(t.workspace).ctx)

describe("codemode: the API", () => {
  test("a script combining grep and read returns a short digest; inner calls emit source.read like direct calls", async () => {
    const { ctx, events } = createToolContext(t.workspace)
    const script = `
      const hits = (await tools.grep({ pattern: "TODO", path: "ro/src" })).split("\\n").filter((l) => /^\\S+:\\d+: /.test(l))
      const digest = []
      for (const hit of hits) {
        const [path, line] = hit.split(":")
        const around = await tools.read({ path, offset: Math.max(1, Number(line) - 1), limit: 3 })
        digest.push(path + ":" + line + " " + around.split("\\n")[1].trim() + " (after: " + around.split("\\n")[2].trim() + ")")
      }
      print(digest.join("\\n"))`
    const out = await runToolText(codemode, { script }, ctx)
    expect(out).toBe(
      "ro/src/a.ts:2 // TODO: rename a (after: export const b = 2)\nro/src/b.ts:4 // TODO: handle overflow (after: return a * 2)"
    )
    expect(events.map((e) => e.type === "source.read" && `${e.tool} ${e.path} ${e.firstLine}-${e.lastLine}`)).toEqual([
      "grep ro/src/a.ts 2-2",
      "grep ro/src/b.ts 4-4",
      "read ro/src/a.ts 1-null",
      "read ro/src/b.ts 3-5"
    ])
  })

  test("ls, find, console.log and Promise.all work; non-strings print as JSON", async () => {
    const out = await text(`
      const [list, found] = await Promise.all([tools.ls({ path: "ro" }), tools.find({ pattern: "*.ts" })])
      console.log(list.split("\\n").length, found.split("\\n"))`)
    expect(out).toBe('3 [\n  "ro/src/a.ts",\n  "ro/src/b.ts",\n  "ro/src/c.ts"\n]')
  })

  test("a tool error is a rejected promise carrying the tool's message; the script goes on", async () => {
    const direct = await runToolError(read, { path: "ro/missing.txt" }, createToolContext(t.workspace).ctx)
    const out = await text(`
      try { await tools.read({ path: "ro/missing.txt" }) } catch (e) { print(e.name + ": " + e.message) }
      try { await tools.read({ path: 42 }) } catch (e) { print(e.message.split("\\n")[0]) }
      try { await tools.read("ro/src/a.ts") } catch (e) { print(e.message) }
      print("still here")`)
    expect(out).toBe(`ToolError: ${direct}\nInvalid arguments for tool "read":\ntools.read: the arguments must be one object\nstill here`)
  })

  test("only printed text returns; an uncaught error fails the call with what was printed", async () => {
    expect(await text(`await tools.read({ path: "ro/src/a.ts" })`)).toBe("[the script printed nothing; only what it prints returns]")
    const failed = await error(`print("step 1"); null.x`)
    expect(failed).toStartWith("The script failed: TypeError: cannot read property 'x' of null (line 1)")
    expect(failed).toEndWith("[printed before it stopped:]\nstep 1")
  })

  test("the description documents every function with its parameters, and the limits", () => {
    for (const line of [
      "await tools.read({ path, offset?, limit? })",
      "await tools.ls({ path? })",
      "await tools.grep({ pattern, literal?, path?, glob?, ignoreCase?, context?, limit? })",
      "await tools.find({ pattern, path? })",
      "print(...values) and console.log(...values)",
      "no fetch, require, import, process, timers or file system",
      "the output is cut at 8,000 tokens (32,000 characters)"
    ]) {
      expect(codemode.description).toContain(line)
    }
  })

  test("the kintsugi.codemode span gets counts of inner calls per tool and parents the spans inner calls open", async () => {
    // An inner tool with a span of its own, as an MCP tool has (kintsugi.mcp).
    const spanning = defineTool({
      name: "spanning",
      description: "Opens a span.",
      params: Schema.Struct({}),
      execute: () => Effect.flatMap(JobEvents, (events) => events.span("kintsugi.mcp", { server: "x" }, Effect.succeed({ text: "" })))
    })
    const events: Array<JobEvent> = []
    const layer = JobServices.layerTest(t.workspace, { deliver: (e) => void events.push(e) })
    const ctx = Effect.runSync(Effect.scoped(Layer.build(layer)))
    const r = await run(
      `for (let i = 0; i < 3; i++) await tools.read({ path: "ro/src/a.ts" }); await tools.grep({ pattern: "x" }); await tools.spanning({}); print("ok")`,
      {},
      ctx,
      makeCodemode([...CODEMODE_READ_TOOLS, spanning])
    )
    expect(r._tag).toBe("Right")
    const spans = events.flatMap((e) => (e.type === "span" ? [e] : []))
    expect(spans.map((s) => [s.name, s.status, s.attributes])).toEqual([
      ["kintsugi.mcp", "ok", { server: "x" }],
      [
        "kintsugi.codemode",
        "ok",
        { calls: 5, "calls.read": 3, "calls.grep": 1, "calls.spanning": 1, timeoutMs: 30_000, status: "ok", printedChars: 2, cut: false }
      ]
    ])
    expect(spans[0]?.parentSpanId).toBe(spans[1]?.spanId)
    // Inner reads go through the same JobEvents as direct calls.
    expect(events.filter((e) => e.type === "source.read" && e.tool === "read")).toHaveLength(3)
  })
})

describe("codemode: nothing of the host exists inside", () => {
  test("fetch, require, process, Bun, timers are undefined; the globals are ECMAScript's plus tools, print, console", async () => {
    const out = await text(`
      print([typeof fetch, typeof require, typeof process, typeof Bun, typeof setTimeout, typeof setInterval, typeof WebAssembly, typeof std, typeof os].join(" "))
      print(Object.getOwnPropertyNames(globalThis).filter((n) => !/^[A-Z]/.test(n)).sort().join(" "))`)
    const [types, lower] = out.split("\n")
    expect(types).toBe(Array(9).fill("undefined").join(" "))
    expect(lower).toBe(
      "console decodeURI decodeURIComponent encodeURI encodeURIComponent escape eval globalThis isFinite isNaN parseFloat parseInt print tools undefined unescape"
    )
  })

  test.each([
    ["process.env", `print(process.env.HOME)`, "ReferenceError: 'process' is not defined"],
    ["fetch", `await fetch("http://127.0.0.1:1/")`, "ReferenceError: 'fetch' is not defined"],
    ["require", `require("node:fs")`, "ReferenceError: 'require' is not defined"],
    ["import()", `await import("node:fs")`, 'modules are not available in codemode (import "node:fs")'],
    ["static import", `import fs from "node:fs"`, "SyntaxError"],
    ["Function constructor", `Function("return process")()`, "ReferenceError: 'process' is not defined"],
    ["async constructor", `await (async () => {}).constructor("return Bun")()`, "ReferenceError: 'Bun' is not defined"]
  ])("%s fails inside the script", async (_name, script, message) => {
    expect(await error(script)).toContain(message)
  })

  test("prototype tricks reach only the guest global", async () => {
    const out = await text(`
      const g1 = ({}).constructor.constructor("return this")()
      const g2 = await tools.read.constructor("return this")()
      const g3 = print.constructor.constructor("return globalThis")()
      print(g1 === globalThis, g2 === globalThis, g3 === globalThis, typeof g1.process, typeof g1.Bun, Object.getPrototypeOf(Object.getPrototypeOf(tools.read)) === Function.prototype)`)
    expect(out).toBe("true true true undefined undefined true")
  })

  test("a walk over everything reachable from globalThis finds no host object", async () => {
    const out = await text(`
      const seen = new Set(), names = new Set(), queue = [globalThis]
      while (queue.length > 0) {
        const o = queue.pop()
        if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue
        seen.add(o)
        for (const k of Reflect.ownKeys(o)) {
          names.add(String(k))
          const d = Object.getOwnPropertyDescriptor(o, k)
          for (const v of [d.value, d.get, d.set]) queue.push(v)
        }
        queue.push(Object.getPrototypeOf(o))
      }
      print(seen.size > 500, ["process", "Bun", "require", "fetch", "readFileSync", "spawn", "env", "Deno"].filter((n) => names.has(n)).join(",") || "none")`)
    expect(out).toBe("true none")
  })

  test("reading outside the read-only roots fails with the read tool's own message; the bytes never arrive", async () => {
    const secret = `${t.outside}/secret.txt`
    const direct = await runToolError(read, { path: secret }, createToolContext(t.workspace).ctx)
    const out = await text(`
      for (const path of [${JSON.stringify(secret)}, "../" + ${JSON.stringify(secret.split("/").slice(-2).join("/"))}, "out/x.txt"]) {
        try { print(await tools.read({ path })) } catch (e) { print(e.message) }
      }`)
    expect(out.split("\n")[0]).toBe(direct)
    expect(out).not.toContain("OUTSIDE-CANARY-42")
    expect(out.split("\n")).toHaveLength(3)
  })

  test("write, edit and shell are not callable, even by a forged name", async () => {
    const out = await text(`print(Object.keys(tools).join(","), typeof tools.write, typeof tools.shell, Object.isFrozen(tools))`)
    expect(out).toBe("read,ls,grep,find undefined undefined true")
  })
})
