/**
 * codemode in a job, through the real job child and a scripted model server: offered by default,
 * inner calls emit source.read but never reach the loop guard, a kintsugi.codemode span under the
 * tool's span, and runaway scripts end as tool errors while the job goes on.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { createEnvelope, createJob, createJobDirs, createProvider, runJobChild, writeFile, type JobOverrides } from "../support/jobChild.ts"
import { startOpenAIServer, type Step } from "../support/scriptedServers.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(60_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const run = async (steps: ReadonlyArray<Step>, overrides: JobOverrides = {}) => {
  const server = await startOpenAIServer(steps)
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n// TODO: rename\n", "b.ts": "export const b = 2\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const result = await runJobChild(createEnvelope(createJob(dirs, overrides), [createProvider(server, "openai-completions")]))
  return { ...result, server, dirs }
}

const codemodeCall = (script: string, extra: Record<string, unknown> = {}): Step => ({
  kind: "turn",
  toolCalls: [{ name: "codemode", arguments: { script, ...extra } }]
})
const answer: Step = { kind: "turn", text: "done" }
const last = (events: ReadonlyArray<JobEvent>) => events[events.length - 1]

/** The tool result messages the model received, in order. */
const toolResults = (server: { readonly requests: ReadonlyArray<{ readonly body: unknown }> }): Array<string> => {
  const body = server.requests[server.requests.length - 1]?.body as { messages: Array<{ role: string; content: unknown }> }
  return body.messages.filter((m) => m.role === "tool").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
}

describe("codemode in a job", () => {
  test("20 identical inner reads do not trip the loop rule; they emit source.read; one span counts them", async () => {
    const script = `
      let lines = 0
      for (let i = 0; i < 20; i++) lines += (await tools.read({ path: "src/a.ts" })).split("\\n").length
      print("read 20 times, " + lines + " lines")`
    const readA: Step = { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] }
    const r = await run([codemodeCall(script), readA, readA, answer])
    expect(r.code).toBe(0)
    expect(last(r.events)).toMatchObject({ type: "job.completed", summary: "done" })
    expect(r.events.filter((e) => e.type === "tool.call").map((e) => e.type === "tool.call" && e.tool)).toEqual([
      "codemode",
      "read",
      "read"
    ])
    expect(r.events.filter((e) => e.type === "source.read" && e.path === "src/a.ts")).toHaveLength(22)
    expect(toolResults(r.server)[0]).toBe("read 20 times, 40 lines")
    const spans = r.events.flatMap((e) => (e.type === "span" ? [e] : []))
    const codemode = spans.find((s) => s.name === "kintsugi.codemode")
    expect(codemode?.attributes).toMatchObject({ calls: 20, "calls.read": 20, status: "ok", cut: false })
    const toolSpan = spans.find((s) => s.spanId === codemode?.parentSpanId)
    expect(toolSpan).toMatchObject({ name: "kintsugi.tool", status: "ok", attributes: { tool: "codemode", allowed: true, success: true } })
  })

  test("with no tools listed, codemode is offered; write, edit, shell and git stay outside it", async () => {
    const r = await run([codemodeCall(`print(Object.keys(tools).join(","))`), answer])
    expect(r.code).toBe(0)
    const offered = (r.server.requests[0]?.body as { tools: Array<{ function: { name: string; description: string } }> }).tools
    expect(offered.map((t) => t.function.name)).toEqual(["read", "ls", "grep", "find", "write", "edit", "shell", "git", "codemode"])
    expect(offered.find((t) => t.function.name === "codemode")?.function.description).toContain("await tools.grep({ pattern,")
    expect(toolResults(r.server)).toEqual(["read,ls,grep,find"])
  })

  test("codemode is created only when granted", async () => {
    const r = await run([answer], { agent: { tools: ["read"] } })
    expect(r.code).toBe(0)
    const offered = (r.server.requests[0]?.body as { tools: Array<{ function: { name: string } }> }).tools
    expect(offered.map((t) => t.function.name)).toEqual(["read"])
  })

  test("an endless loop, a 1 GB allocation and a read outside the workspace end as tool errors; the job goes on", async () => {
    const outside = createJobDirs()
    cleanups.push(() => outside.cleanup())
    writeFile(`${outside.root}/canary.txt`, "CODEMODE-CANARY-7\n")
    const r = await run(
      [
        codemodeCall("try { while (true) {} } catch {}", { timeoutSec: 1 }),
        codemodeCall("const keep = []; for (let i = 0; i < 1024; i++) keep.push(new Uint8Array(1 << 20))"),
        codemodeCall(`try { await tools.read({ path: ${JSON.stringify(`${outside.root}/canary.txt`)} }) } catch (e) { print(e.message) }`),
        answer
      ],
      { agent: { tools: ["codemode"] } }
    )
    expect(r.code).toBe(0)
    expect(last(r.events)).toMatchObject({ type: "job.completed", summary: "done" })
    expect(r.events.filter((e) => e.type === "tool.result").map((e) => e.type === "tool.result" && e.success)).toEqual([false, false, true])
    const [loop, memory, outsideRead] = toolResults(r.server)
    expect(loop).toBe("The script failed: the script was stopped at its time limit of 1 s")
    expect(memory).toContain("out of memory")
    expect(outsideRead).toStartWith("path is outside the readable workspace")
    expect(JSON.stringify(r.server.requests.map((q) => q.body))).not.toContain("CODEMODE-CANARY-7")
    expect(r.stdout).not.toContain("CODEMODE-CANARY-7")
  })
})
