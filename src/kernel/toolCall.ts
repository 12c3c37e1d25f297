/**
 * A turn's tool calls: the grant and deny checks, `tool.call` and `tool.result` events, the
 * `kintsugi.tool` span, the loop guard, and the tool result messages the model gets back, in call
 * order. Consecutive read-only calls run at once (at most KINTSUGI_TOOL_CONCURRENCY); any other call
 * runs alone, after every call before it settled.
 */
import type { ToolCall, ToolResultMessage } from "@earendil-works/pi-ai"
import { Clock, Config, Effect } from "effect"
import type { DenyMatcher } from "../tools/denyPatterns.ts"
import type { KernelTool, ToolServices } from "../tools/Tool.ts"
import type { JobEventBody } from "../contract/JobEvent.ts"
import { LoopDetected } from "../job/errors.ts"
import { canonicalJson } from "../job/LoopGuard.ts"
import { JobEvents } from "../job/JobEvents.ts"
import { Limits } from "../job/Limits.ts"

/** The tools a job was granted, by name, and its deny patterns. */
export interface Toolbox {
  readonly tools: ReadonlyMap<string, KernelTool>
  readonly deny: DenyMatcher
}

/** Read-only calls of one turn that run at once when KINTSUGI_TOOL_CONCURRENCY is not set. */
const DEFAULT_TOOL_CONCURRENCY = 8

/**
 * KINTSUGI_TOOL_CONCURRENCY: a whole number from 1. Any other value runs the calls one at a time, so
 * a mistyped setting never fails a job nor runs more at once than asked.
 */
const toolConcurrency: Effect.Effect<number> = Config.integer("KINTSUGI_TOOL_CONCURRENCY").pipe(
  Config.withDefault(DEFAULT_TOOL_CONCURRENCY),
  Effect.map((n) => (n >= 1 ? n : 1)),
  Effect.orElseSucceed(() => 1)
)

/** A short, content-free description of a tool result for the `tool.result` event. */
const summarize = (success: boolean, text: string): string => {
  if (!success) {
    const first = text.split("\n", 1)[0] ?? ""
    return first.length > 200 ? `${first.slice(0, 200)}…` : first
  }
  const lines = text === "" ? 0 : text.split("\n").length
  return `${lines} line${lines === 1 ? "" : "s"}, ${Buffer.byteLength(text)} bytes`
}

/** A call with its tool and the reason it is blocked, if it is. */
interface Checked {
  readonly call: ToolCall
  readonly tool: KernelTool | undefined
  readonly args: Record<string, unknown>
  readonly blockReason: string | undefined
}

/** What a call's execution gave: the model's text before the loop guard's nudge. */
interface Settled {
  readonly success: boolean
  readonly text: string
  readonly finished: number
}

/** Deepest nesting of arrays and objects in a call's arguments (the API's bound on a JSON body). */
const MAX_ARGUMENTS_DEPTH = 64

/** True when `value` nests arrays/objects deeper than MAX_ARGUMENTS_DEPTH. Iterative: no recursion. */
const nestsTooDeep = (value: unknown): boolean => {
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [v, depth] = top
    if (v === null || typeof v !== "object") continue
    if (depth + 1 > MAX_ARGUMENTS_DEPTH) return true
    for (const child of Object.values(v)) stack.push([child, depth + 1])
  }
  return false
}

/**
 * The call checked. Arguments nested deeper than MAX_ARGUMENTS_DEPTH are refused and stand as `{}` in
 * its event and for the loop guard: the store cannot hold them, and canonical JSON would recurse.
 */
const check = (call: ToolCall, toolbox: Toolbox): Checked => {
  if (nestsTooDeep(call.arguments))
    return {
      call,
      tool: toolbox.tools.get(call.name),
      args: {},
      blockReason: `the arguments nest arrays and objects deeper than ${MAX_ARGUMENTS_DEPTH} levels`
    }
  const tool = toolbox.tools.get(call.name)
  const args: Record<string, unknown> = call.arguments
  const command = tool?.commandOf?.(args)
  const verdict = command === undefined ? ({ blocked: false } as const) : toolbox.deny(command)
  const blockReason = tool === undefined ? `tool "${call.name}" is not granted to this agent` : verdict.blocked ? verdict.reason : undefined
  return { call, tool, args, blockReason }
}

/** A granted, unblocked call of a read-only tool: it may run beside the turn's other such calls. */
const isParallel = (c: Checked): boolean => c.tool?.readOnly === true && c.blockReason === undefined

const announce = (c: Checked): Effect.Effect<void, never, JobEvents> =>
  Effect.flatMap(JobEvents, (events) =>
    events.emit({
      type: "tool.call",
      callId: c.call.id,
      tool: c.call.name,
      input: c.args,
      allowed: c.blockReason === undefined,
      ...(c.blockReason === undefined ? {} : { reason: c.blockReason })
    })
  )

/** The tool's own events (`source.read`, `output`) through `sideEvents` when given. */
const execute = (c: Checked, sideEvents?: JobEvents["Type"]): Effect.Effect<Settled, never, ToolServices> =>
  Effect.gen(function* () {
    const events = yield* JobEvents
    const limits = yield* Limits
    const { call, tool, blockReason } = c
    const started = yield* Clock.currentTimeMillis
    const attributes: Record<string, string | number | boolean> = { tool: call.name, allowed: blockReason === undefined }
    const run =
      call.argumentsError !== undefined
        ? Effect.succeed({ success: false, text: `Invalid arguments for tool "${call.name}": ${call.argumentsError}` })
        : tool === undefined || blockReason !== undefined
          ? Effect.succeed({ success: false, text: `Blocked: ${blockReason}` })
          : tool.execute(c.args).pipe(
              Effect.map((out) => ({ success: true, text: out.text })),
              Effect.catchTag("ToolError", (e) => Effect.succeed({ success: false, text: e.message })),
              Effect.provideService(JobEvents, sideEvents ?? events)
            )
    // Set inside the span: its event goes out (copied) as the span ends.
    const outcome = yield* events.span(
      "kintsugi.tool",
      attributes,
      Effect.tap(run, (o) => {
        attributes["success"] = o.success
      })
    )
    limits.progress()
    const finished = yield* Clock.currentTimeMillis
    yield* events.emit({
      type: "tool.result",
      callId: call.id,
      tool: call.name,
      success: outcome.success,
      summary: summarize(outcome.success, outcome.text),
      durationMs: Math.round(finished - started)
    })
    return { ...outcome, finished }
  })

/** The loop guard's verdict on a settled call, then its result message; fails on a loop. */
const conclude = (c: Checked, s: Settled): Effect.Effect<ToolResultMessage, LoopDetected, Limits> =>
  Effect.flatMap(Limits, (limits) => {
    const repeat = limits.toolCall(c.call.name, c.args, s.success, s.text)
    if (repeat._tag === "Loop") return Effect.fail(new LoopDetected({ message: repeat.message }))
    const text = repeat._tag === "Repeat" && repeat.nudge !== undefined ? s.text + repeat.nudge : s.text
    return Effect.succeed({
      role: "toolResult",
      toolCallId: c.call.id,
      toolName: c.call.name,
      content: [{ type: "text", text }],
      isError: !s.success,
      timestamp: s.finished
    })
  })

/** One call alone: announced, run (or refused), concluded. */
const runAlone = (c: Checked): Effect.Effect<ToolResultMessage, LoopDetected, ToolServices> =>
  Effect.zipRight(
    announce(c),
    Effect.flatMap(execute(c), (s) => conclude(c, s))
  )

/**
 * Per call of a group, a JobEvents whose side events (`source.read`, `output`) go out in call order:
 * a call's events wait until every call before it has settled, then follow at once.
 */
const orderedSideEvents = (events: JobEvents["Type"], count: number) => {
  const held: Array<Array<JobEventBody>> = Array.from({ length: count }, () => [])
  const settled: Array<boolean> = Array.from({ length: count }, () => false)
  let current = 0
  const release = () => {
    for (const body of held[current]?.splice(0) ?? []) events.emitNow(body)
    while (current < count && settled[current] === true) {
      current++
      for (const body of held[current]?.splice(0) ?? []) events.emitNow(body)
    }
  }
  const emitNow = (index: number) => (body: JobEventBody) => {
    if (index === current) events.emitNow(body)
    else held[index]?.push(body)
  }
  return {
    serviceFor: (index: number): JobEvents["Type"] => ({
      ...events,
      emit: (body) => Effect.sync(() => emitNow(index)(body)),
      emitNow: emitNow(index)
    }),
    settle: (index: number) => {
      settled[index] = true
      release()
    }
  }
}

/**
 * Read-only calls at once: every `tool.call` in call order first, then the executions (a lane's calls
 * one after another, in call order), each `tool.result` as it settles; then the loop guard over the
 * results in call order, failing at the first loop exactly as the calls one by one would.
 */
const runGroup = (
  group: ReadonlyArray<Checked>,
  concurrency: number
): Effect.Effect<Array<ToolResultMessage>, LoopDetected, ToolServices> =>
  Effect.gen(function* () {
    const events = yield* JobEvents
    yield* Effect.forEach(group, announce, { discard: true })
    const ordered = orderedSideEvents(events, group.length)
    // A unit is one call, or a lane's calls in call order; units start in the order of their first call.
    const units: Array<Array<{ readonly c: Checked; readonly index: number }>> = []
    const laneUnits = new Map<string, Array<{ readonly c: Checked; readonly index: number }>>()
    group.forEach((c, index) => {
      const lane = c.tool?.lane
      const unit = lane === undefined ? undefined : laneUnits.get(lane)
      if (unit !== undefined) return void unit.push({ c, index })
      const fresh = [{ c, index }]
      units.push(fresh)
      if (lane !== undefined) laneUnits.set(lane, fresh)
    })
    const settled = yield* Effect.forEach(
      units,
      (unit) =>
        Effect.forEach(unit, ({ c, index }) =>
          execute(c, ordered.serviceFor(index)).pipe(
            Effect.map((s) => ({ c, index, s })),
            Effect.ensuring(Effect.sync(() => ordered.settle(index)))
          )
        ),
      { concurrency }
    )
    const inCallOrder = settled.flat().sort((a, b) => a.index - b.index)
    return yield* Effect.forEach(inCallOrder, ({ c, s }) => conclude(c, s))
  })

/**
 * A turn's tool calls; the result messages in call order. Tool failures are results with `isError`;
 * only the loop guard fails (LoopDetected). Maximal runs of consecutive read-only calls, none
 * identical to another of its run, run as groups (runGroup); any other call, and every call at
 * concurrency 1, runs alone.
 */
export const runToolCalls = (
  calls: ReadonlyArray<ToolCall>,
  toolbox: Toolbox
): Effect.Effect<Array<ToolResultMessage>, LoopDetected, ToolServices> =>
  Effect.gen(function* () {
    const concurrency = yield* toolConcurrency
    // Consecutive parallel calls share a group; any other call is a group of its own. A call identical
    // to one already in the group (same tool and arguments) starts the next group: repeats reach the
    // loop guard one by one, so a turn of the same call many times stops where it would one by one.
    const groups: Array<Array<Checked>> = []
    let keys = new Set<string>()
    for (const c of calls.map((call) => check(call, toolbox))) {
      const last = groups.at(-1)
      const key = `${c.call.name}\u0000${canonicalJson(c.args)}`
      const joins = concurrency > 1 && isParallel(c) && last !== undefined && last.every(isParallel) && !keys.has(key)
      if (joins) last.push(c)
      else {
        groups.push([c])
        keys = new Set()
      }
      keys.add(key)
    }
    const results: Array<ToolResultMessage> = []
    for (const group of groups) {
      const [only] = group
      if (group.length === 1 && only !== undefined) results.push(yield* runAlone(only))
      else results.push(...(yield* runGroup(group, concurrency)))
    }
    return results
  })
