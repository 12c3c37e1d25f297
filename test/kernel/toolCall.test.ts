/**
 * A turn's tool calls through `runToolCalls` with the per-job services: the `kintsugi.tool` span
 * carries the call's outcome; read-only calls run at once up to the concurrency setting, a lane's
 * calls one at a time, any other call alone after the calls before it settled; results, `tool.call`
 * and side events in call order. Events are copied as they are delivered, as a job child writes them.
 */
import { describe, expect, test } from "bun:test"
import type { ToolCall, ToolResultMessage } from "@earendil-works/pi-ai"
import { Cause, ConfigProvider, Deferred, Effect, Exit, Fiber, Option, Schema } from "effect"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { JobEvents } from "../../src/job/JobEvents.ts"
import * as JobServices from "../../src/job/JobServices.ts"
import { runToolCalls } from "../../src/kernel/toolCall.ts"
import { createKernelTools } from "../../src/tools/registry.ts"
import { createProcessRunner } from "../../src/tools/ProcessRunner.ts"
import { SERVICE_TOOL_DEFS } from "../../src/tools/services/serviceTools.ts"
import { defineTool, ToolError, type KernelTool } from "../../src/tools/Tool.ts"

const echo = defineTool({
  name: "echo",
  description: "Echoes, or fails on request.",
  params: Schema.Struct({ text: Schema.String, fail: Schema.optionalWith(Schema.Boolean, { exact: true }) }),
  execute: (a) => (a.fail === true ? Effect.fail(new ToolError({ message: `failed: ${a.text}` })) : Effect.succeed({ text: a.text }))
})

const call = (id: string, name: string, args: Record<string, unknown>, argumentsError?: string): ToolCall => ({
  type: "toolCall",
  id,
  name,
  arguments: args as ToolCall["arguments"],
  ...(argumentsError === undefined ? {} : { argumentsError })
})

/** Runs one turn's calls with `tools` at `concurrency` (a KINTSUGI_TOOL_CONCURRENCY value; unset when undefined). */
const runTurn = async (
  tools: ReadonlyArray<KernelTool>,
  calls: ReadonlyArray<ToolCall>,
  concurrency?: string,
  deny: (command: string) => { readonly blocked: false } | { readonly blocked: true; readonly reason: string } = () => ({
    blocked: false
  })
) => {
  const events: Array<JobEvent> = []
  // A copy at delivery: whatever changes after the event went out must not count.
  const layer = JobServices.layerTest(
    { root: "/nonexistent", readOnly: ["/nonexistent"], outDir: "/nonexistent/out" },
    { jobId: "00000000-toolcall", deliver: (e) => void events.push(structuredClone(e)) }
  )
  const toolbox = { tools: new Map(tools.map((t) => [t.name, t])), deny }
  const env = new Map(concurrency === undefined ? [] : [["KINTSUGI_TOOL_CONCURRENCY", concurrency]])
  const exit = await Effect.runPromiseExit(
    runToolCalls(calls, toolbox).pipe(Effect.provide(layer), Effect.withConfigProvider(ConfigProvider.fromMap(env)))
  )
  return { exit, events }
}

const resultsOf = (exit: Exit.Exit<Array<ToolResultMessage>, unknown>) => {
  if (!Exit.isSuccess(exit)) throw new Error(`the turn failed: ${String(exit.cause)}`)
  return exit.value.map((m) => [m.toolCallId, m.content.map((c) => (c.type === "text" ? c.text : "")).join(""), m.isError])
}

/** `tool.call` / `tool.result` / `source.read` events in delivery order, as `[type, callId or path]`. */
const timeline = (events: ReadonlyArray<JobEvent>) =>
  events.flatMap((e) =>
    e.type === "tool.call" || e.type === "tool.result" ? [[e.type, e.callId]] : e.type === "source.read" ? [[e.type, e.path]] : []
  )

/**
 * Read-only tools that record what runs at once: `probe` waits until `quorum` probes have started
 * (so it finishes only if they run together), `step` yields a few times, `commit` (not read-only)
 * records how many probes had finished when it started.
 */
const createRecorder = (quorum: number) =>
  Effect.gen(function* () {
    const all = yield* Deferred.make<void>()
    const log = { started: 0, finished: 0, inFlight: 0, maxInFlight: 0, finishedAtCommit: -1, order: [] as Array<string> }
    const enter = (id: string) => {
      log.started++
      log.inFlight++
      log.maxInFlight = Math.max(log.maxInFlight, log.inFlight)
      log.order.push(`start ${id}`)
    }
    const leave = (id: string) => {
      log.inFlight--
      log.finished++
      log.order.push(`end ${id}`)
    }
    const Params = Schema.Struct({ id: Schema.String })
    const probe = defineTool({
      name: "probe",
      description: "Waits for the quorum.",
      params: Params,
      readOnly: true,
      execute: ({ id }) =>
        Effect.gen(function* () {
          enter(id)
          if (log.started >= quorum) yield* Deferred.succeed(all, undefined)
          yield* Deferred.await(all)
          leave(id)
          return { text: `probe ${id}` }
        })
    })
    const step = (name: string, lane?: string) =>
      defineTool({
        name,
        description: "Yields a few times.",
        params: Params,
        readOnly: true,
        ...(lane === undefined ? {} : { lane }),
        execute: ({ id }) =>
          Effect.gen(function* () {
            enter(id)
            for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
            leave(id)
            return { text: `${name} ${id}` }
          })
      })
    const commit = defineTool({
      name: "commit",
      description: "Writes.",
      params: Params,
      execute: ({ id }) =>
        Effect.sync(() => {
          log.finishedAtCommit = log.finished
          log.order.push(`commit ${id}`)
          return { text: `committed ${id}` }
        })
    })
    return { log, tools: [probe, step("step"), step("laned", "l"), commit, echo] }
  })

describe("runToolCalls", () => {
  test("the kintsugi.tool span says whether the call succeeded (set before the span is emitted)", async () => {
    const { events } = await runTurn(
      [echo],
      [
        call("1", "echo", { text: "hi" }),
        call("2", "echo", { text: "no", fail: true }),
        call("3", "shell", { command: "ls" }),
        call("4", "echo", {}, "not JSON")
      ]
    )
    const spans = events.flatMap((e) => (e.type === "span" && e.name === "kintsugi.tool" ? [e] : []))
    expect(spans.map((s) => [s.status, s.attributes])).toEqual([
      ["ok", { tool: "echo", allowed: true, success: true }],
      ["ok", { tool: "echo", allowed: true, success: false }],
      ["ok", { tool: "shell", allowed: false, success: false }],
      ["ok", { tool: "echo", allowed: true, success: false }]
    ])
  })

  test("8 read-only calls run at once and the write after all of them settled; results and tool.call in call order", async () => {
    const recorder = await Effect.runPromise(createRecorder(8))
    const calls = [...Array.from({ length: 8 }, (_, i) => call(`r${i}`, "probe", { id: `r${i}` })), call("w", "commit", { id: "w" })]
    // At concurrency 1 the probes would wait for each other for ever: this turn finishes only if all 8 ran together.
    const { exit, events } = await runTurn(recorder.tools, calls, "8")
    expect(resultsOf(exit)).toEqual([...Array.from({ length: 8 }, (_, i) => [`r${i}`, `probe r${i}`, false]), ["w", "committed w", false]])
    expect(recorder.log.maxInFlight).toBe(8)
    expect(recorder.log.finishedAtCommit).toBe(8)
    const order = timeline(events)
    // Every tool.call of the group before any result; the write's tool.call after every read's result.
    expect(order.slice(0, 8)).toEqual(Array.from({ length: 8 }, (_, i) => ["tool.call", `r${i}`]))
    expect(order.slice(8, 16).map(([type]) => type)).toEqual(Array(8).fill("tool.result"))
    expect(order.slice(16)).toEqual([
      ["tool.call", "w"],
      ["tool.result", "w"]
    ])
    expect(events.filter((e) => e.type === "span" && e.name === "kintsugi.tool")).toHaveLength(9)
  })

  test("at most KINTSUGI_TOOL_CONCURRENCY at once; 1, or a value that is not a whole number from 1, runs them one by one", async () => {
    const calls = Array.from({ length: 6 }, (_, i) => call(`s${i}`, "step", { id: `s${i}` }))
    for (const [setting, most] of [
      ["3", 3],
      [undefined, 6],
      ["1", 1],
      ["0", 1],
      ["eight", 1]
    ] as const) {
      const recorder = await Effect.runPromise(createRecorder(99))
      const { exit } = await runTurn(recorder.tools, calls, setting)
      expect(resultsOf(exit).map(([id]) => id)).toEqual(calls.map((c) => c.id))
      expect([setting, recorder.log.maxInFlight]).toEqual([setting, most])
    }
  })

  test("at concurrency 1 each call's events are those of the calls one by one", async () => {
    const recorder = await Effect.runPromise(createRecorder(99))
    const calls = [call("a", "step", { id: "a" }), call("b", "step", { id: "b" })]
    const { events } = await runTurn(recorder.tools, calls, "1")
    expect(timeline(events)).toEqual([
      ["tool.call", "a"],
      ["tool.result", "a"],
      ["tool.call", "b"],
      ["tool.result", "b"]
    ])
  })

  test("a lane's calls run one at a time in call order, beside the group's other calls", async () => {
    const recorder = await Effect.runPromise(createRecorder(99))
    const calls = [
      call("l1", "laned", { id: "l1" }),
      call("s1", "step", { id: "s1" }),
      call("l2", "laned", { id: "l2" }),
      call("s2", "step", { id: "s2" })
    ]
    const { exit } = await runTurn(recorder.tools, calls, "8")
    expect(resultsOf(exit).map(([id]) => id)).toEqual(["l1", "s1", "l2", "s2"])
    const order = recorder.log.order
    expect(order.indexOf("start l2")).toBeGreaterThan(order.indexOf("end l1"))
    // The other calls overlapped the lane: 3 ran at once (l1 or l2, s1, s2).
    expect(recorder.log.maxInFlight).toBe(3)
  })

  test("a blocked, ungranted or not read-only call is a barrier: the calls around it keep their order", async () => {
    const recorder = await Effect.runPromise(createRecorder(99))
    const guarded = defineTool({
      name: "guarded",
      description: "A read-only tool with a command.",
      params: Schema.Struct({ command: Schema.String }),
      readOnly: true,
      commandOf: (a) => a.command,
      execute: (a) => Effect.succeed({ text: `ran ${a.command}` })
    })
    const calls = [
      call("a", "step", { id: "a" }),
      call("b", "step", { id: "b" }),
      call("x", "guarded", { command: "rm -rf /" }),
      call("c", "step", { id: "c" }),
      call("u", "nope", {}),
      call("d", "step", { id: "d" }),
      call("e", "step", { id: "e" })
    ]
    const deny = (command: string) =>
      command.startsWith("rm") ? ({ blocked: true, reason: "matches deny pattern 'rm'" } as const) : ({ blocked: false } as const)
    const { exit, events } = await runTurn([...recorder.tools, guarded], calls, "8", deny)
    expect(resultsOf(exit)).toEqual([
      ["a", "step a", false],
      ["b", "step b", false],
      ["x", "Blocked: matches deny pattern 'rm'", true],
      ["c", "step c", false],
      ["u", 'Blocked: tool "nope" is not granted to this agent', true],
      ["d", "step d", false],
      ["e", "step e", false]
    ])
    const order = timeline(events).map(([type, id]) => `${type === "tool.call" ? "call" : "result"} ${id}`)
    const at = (s: string) => order.indexOf(s)
    expect(at("call x")).toBeGreaterThan(Math.max(at("result a"), at("result b")))
    expect(at("call c")).toBeGreaterThan(at("result x"))
    expect(at("call u")).toBeGreaterThan(at("result c"))
    expect(at("call d")).toBeGreaterThan(at("result u"))
    expect(at("call e")).toBeLessThan(Math.min(at("result d"), at("result e")))
    expect(events.find((e) => e.type === "tool.call" && e.callId === "x")).toMatchObject({
      allowed: false,
      reason: "matches deny pattern 'rm'"
    })
  })

  test("side events go out in call order though the calls settle in reverse; tool.result as each settles", async () => {
    // Call i finishes only after call i+1 did: they settle last to first.
    const done = await Effect.runPromise(Effect.forEach([0, 1, 2, 3], () => Deferred.make<void>()))
    const reader = defineTool({
      name: "reader",
      description: "Reports a read, then waits for the next call to finish.",
      params: Schema.Struct({ i: Schema.Int }),
      readOnly: true,
      execute: ({ i }) =>
        Effect.gen(function* () {
          const events = yield* JobEvents
          yield* events.emit({ type: "source.read", tool: "reader", path: `f${i}`, firstLine: 1, lastLine: null })
          const next = done[i + 1]
          if (next !== undefined) yield* Deferred.await(next)
          yield* events.emit({ type: "source.read", tool: "reader", path: `g${i}`, firstLine: 1, lastLine: null })
          yield* Deferred.succeed(done[i] as Deferred.Deferred<void>, undefined)
          return { text: `read ${i}` }
        })
    })
    const calls = [0, 1, 2, 3].map((i) => call(`c${i}`, "reader", { i }))
    const { exit, events } = await runTurn([reader], calls, "8")
    expect(resultsOf(exit).map(([id]) => id)).toEqual(["c0", "c1", "c2", "c3"])
    const order = timeline(events)
    expect(order.filter(([type]) => type === "source.read").map(([, path]) => path)).toEqual([
      "f0",
      "g0",
      "f1",
      "g1",
      "f2",
      "g2",
      "f3",
      "g3"
    ])
    expect(order.filter(([type]) => type === "tool.result").map(([, id]) => id)).toEqual(["c3", "c2", "c1", "c0"])
  })

  test("the loop guard runs over the group's results in call order: the nudges and the stop of the calls one by one", async () => {
    const same = Array.from({ length: 11 }, (_, i) => call(`e${i}`, "echo", { text: "again" }))
    const readOnlyEcho: KernelTool = { ...echo, readOnly: true }
    const parallel = await runTurn([readOnlyEcho], same, "8")
    const serial = await runTurn([readOnlyEcho], same, "1")
    expect(resultsOf(parallel.exit)).toEqual(resultsOf(serial.exit))
    expect(resultsOf(parallel.exit)[4]?.[1]).toContain("You have called echo with these same arguments 5 times")
    const twelve = [...same, call("e11", "echo", { text: "again" }), call("e12", "echo", { text: "again" })]
    const stopped = await runTurn([readOnlyEcho], twelve, "8")
    const stoppedSerially = await runTurn([readOnlyEcho], twelve, "1")
    for (const run of [stopped, stoppedSerially]) {
      const failure = Exit.isFailure(run.exit) ? Option.getOrUndefined(Cause.failureOption(run.exit.cause)) : undefined
      expect(failure).toMatchObject({ _tag: "LoopDetected", message: "stopped: echo was called with the same arguments 12 times" })
    }
    // One by one, the calls after the 12th never start; in the group they ran, but the outcome is the same.
    expect(stoppedSerially.events.filter((e) => e.type === "tool.call")).toHaveLength(12)
  })

  test("a turn of one read-only call 40 times runs it 12 times, as one by one: identical calls never share a group", async () => {
    let runs = 0
    const counted: KernelTool = {
      ...echo,
      readOnly: true,
      execute: (args) =>
        Effect.zipRight(
          Effect.sync(() => runs++),
          echo.execute(args)
        )
    }
    const same = Array.from({ length: 40 }, (_, i) => call(`s${i}`, "echo", { text: "again" }))
    for (const concurrency of ["8", "1"]) {
      runs = 0
      const run = await runTurn([counted], same, concurrency)
      const failure = Exit.isFailure(run.exit) ? Option.getOrUndefined(Cause.failureOption(run.exit.cause)) : undefined
      expect(failure).toMatchObject({ _tag: "LoopDetected", message: "stopped: echo was called with the same arguments 12 times" })
      expect(runs).toBe(12)
      expect(run.events.filter((e) => e.type === "tool.call")).toHaveLength(12)
    }
    // Two calls taking turns: pairs run at once, and the stop comes at the 12th of the first, as one by one.
    runs = 0
    const pairs = Array.from({ length: 40 }, (_, i) => call(`p${i}`, "echo", { text: i % 2 === 0 ? "a" : "b" }))
    const paired = await runTurn([counted], pairs, "8")
    expect(Exit.isFailure(paired.exit)).toBe(true)
    expect(runs).toBe(24)
    // Different arguments still run at once.
    const distinct = await runTurn([counted], [call("d0", "echo", { text: "x" }), call("d1", "echo", { text: "y" })], "8")
    expect(timeline(distinct.events)).toEqual([
      ["tool.call", "d0"],
      ["tool.call", "d1"],
      ["tool.result", "d0"],
      ["tool.result", "d1"]
    ])
  })

  test("arguments nested deeper than 64 levels: the call is refused, its event and the loop guard see {}, the turn goes on", async () => {
    const nested = (depth: number): unknown => {
      let v: unknown = 1
      for (let i = 1; i < depth; i++) v = [v]
      return v
    }
    const readOnlyEcho: KernelTool = { ...echo, readOnly: true }
    const calls = [
      call("n0", "echo", { text: "deep", x: nested(20_000) }),
      call("n1", "echo", { text: "fine" }),
      call("n2", "echo", { text: "at the bound", x: nested(63) })
    ]
    for (const concurrency of ["8", "1"]) {
      const run = await runTurn([readOnlyEcho], calls, concurrency)
      const [deep, fine, bound] = resultsOf(run.exit)
      expect(deep).toEqual(["n0", "Blocked: the arguments nest arrays and objects deeper than 64 levels", true])
      expect(fine).toEqual(["n1", "fine", false])
      expect(bound?.[1]).not.toContain("deeper than")
      const announced = run.events.flatMap((e) => (e.type === "tool.call" ? [[e.callId, e.input, e.allowed]] : []))
      expect(announced[0]).toEqual(["n0", {}, false])
      expect(announced[1]).toEqual(["n1", { text: "fine" }, true])
    }
  })

  test("which tools only read, and which share state that keeps their calls in order", async () => {
    const kernel = await Effect.runPromise(
      createKernelTools(["read", "ls", "grep", "find", "write", "edit", "shell", "git", "codemode"], createProcessRunner())
    )
    const flags = [...kernel, ...SERVICE_TOOL_DEFS].map((t) => [t.name, t.readOnly === true, t.lane])
    expect(flags).toEqual([
      ["read", true, undefined],
      ["ls", true, undefined],
      ["grep", true, "grep"],
      ["find", true, undefined],
      ["write", false, undefined],
      ["edit", false, undefined],
      ["shell", false, undefined],
      ["git", false, undefined],
      ["codemode", false, undefined],
      ["memory_search", true, undefined],
      ["memory_save", false, undefined],
      ["memory_forget", false, undefined],
      ["memory_recover", false, undefined],
      ["memory_daily_log", false, undefined],
      ["scratchpad_read", true, undefined],
      ["scratchpad_write", false, undefined],
      ["web_search", true, "web_search"],
      ["web_fetch", true, "web_fetch"]
    ])
  })

  test("interrupted while a group runs (abort, timeout): every call is interrupted and its span settles as an error", async () => {
    const events: Array<JobEvent> = []
    const layer = JobServices.layerTest(
      { root: "/nonexistent", readOnly: ["/nonexistent"], outDir: "/nonexistent/out" },
      { jobId: "00000000-toolcall", deliver: (e) => void events.push(structuredClone(e)) }
    )
    const program = Effect.gen(function* () {
      const allStarted = yield* Deferred.make<void>()
      let started = 0
      let released = 0
      const hang = defineTool({
        name: "hang",
        description: "Never finishes; counts its release.",
        params: Schema.Struct({ n: Schema.Number }),
        readOnly: true,
        execute: () =>
          Effect.gen(function* () {
            if (++started === 3) yield* Deferred.succeed(allStarted, undefined)
            return yield* Effect.never
          }).pipe(Effect.onInterrupt(() => Effect.sync(() => void released++)))
      })
      const toolbox = { tools: new Map([[hang.name, hang]]), deny: () => ({ blocked: false }) as const }
      const fiber = yield* Effect.fork(
        runToolCalls([call("h0", "hang", { n: 0 }), call("h1", "hang", { n: 1 }), call("h2", "hang", { n: 2 })], toolbox)
      )
      yield* Deferred.await(allStarted)
      yield* Fiber.interrupt(fiber)
      return released
    })
    const released = await Effect.runPromise(
      program.pipe(Effect.provide(layer), Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["KINTSUGI_TOOL_CONCURRENCY", "8"]]))))
    )
    expect(released).toBe(3)
    const spans = events.flatMap((e) => (e.type === "span" && e.name === "kintsugi.tool" ? [e.status] : []))
    expect(spans).toEqual(["error", "error", "error"])
    expect(events.filter((e) => e.type === "tool.result")).toEqual([])
  })
})
