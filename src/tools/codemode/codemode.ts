/**
 * The `codemode` tool: the model's JavaScript runs in a fresh QuickJS sandbox, may call only the read
 * tools (read, ls, grep, find) and the read-only MCP tools it is given, and returns only what it prints.
 */
import { Effect, Runtime, Schema } from "effect"
import { find } from "../find.ts"
import { grep } from "../grep.ts"
import { ls } from "../ls.ts"
import { read } from "../read.ts"
import { JobEvents } from "../../job/JobEvents.ts"
import { Limits } from "../../job/Limits.ts"
import { defineTool, ToolError, type KernelTool, type ToolServices } from "../Tool.ts"
import { DEFAULT_SANDBOX_LIMITS, runScript, type HostCall, type SandboxLimits, type ScriptResult } from "./QuickJsSandbox.ts"

/** The kernel tools a script may call (spec "Kernel tools": read, ls, grep, find and read-only MCP tools). */
export const CODEMODE_READ_TOOLS: ReadonlyArray<KernelTool> = [read, ls, grep, find]
export const CODEMODE_DEFAULT_TIMEOUT_SEC = 30
export const CODEMODE_MAX_TIMEOUT_SEC = 120
export const MAX_SCRIPT_CHARS = 100_000
/** Inner tool calls running at once; the rest wait their turn (Promise.all over 100 reads is fine). */
const MAX_PARALLEL_CALLS = 4

const Params = Schema.Struct({
  script: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_SCRIPT_CHARS)).annotations({
    description: "JavaScript: the body of an async function (use await); print() what you need"
  }),
  timeoutSec: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, CODEMODE_MAX_TIMEOUT_SEC)).annotations({
      description: `Time limit for the script in seconds (default ${CODEMODE_DEFAULT_TIMEOUT_SEC}, at most ${CODEMODE_MAX_TIMEOUT_SEC}; never past the job's deadline)`
    }),
    { exact: true }
  )
})

type JsonSchema = { readonly type?: unknown; readonly description?: unknown; readonly properties?: unknown; readonly required?: unknown }

/** One `tools.<name>({ a, b? })` entry of the description, with each parameter and its description. */
const describeFunction = (tool: KernelTool): string => {
  const schema = tool.parameters as JsonSchema
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>
  const required = new Set(Array.isArray(schema.required) ? (schema.required as Array<unknown>) : [])
  const names = Object.keys(props).map((p) => (required.has(p) ? p : `${p}?`))
  const summary = tool.description.split(/(?<=\.)\s/, 1)[0] ?? tool.description
  const params = Object.entries(props).map(([p, s]) => {
    const type = typeof s.type === "string" ? s.type : "value"
    return `    ${p} (${type}${required.has(p) ? "" : ", optional"})${typeof s.description === "string" ? `: ${s.description}` : ""}`
  })
  return [`  await tools.${tool.name}({ ${names.join(", ")} }) → string. ${summary}`, ...params].join("\n")
}

const describe = (inner: ReadonlyArray<KernelTool>, limits: SandboxLimits): string =>
  [
    "Run a JavaScript program over the read-only workspace and get back only what it prints. Use it to make many " +
      "reads or searches in one step (e.g. grep, then read around each hit) and print a short digest instead of the raw text. " +
      "The script is the body of an async function: use await. Besides standard JavaScript only these exist:",
    ...inner.map(describeFunction),
    "  print(...values) and console.log(...values): the output; strings as they are, other values as JSON.",
    "Each tools.* call takes one object with the same parameters as the tool of that name and resolves to the tool's text " +
      "output; a tool error rejects with an Error whose message is the tool's (catch it to go on). Nothing else of the host " +
      "exists: no fetch, require, import, process, timers or file system.",
    `Limits: ${CODEMODE_DEFAULT_TIMEOUT_SEC} s by default (timeoutSec, at most ${CODEMODE_MAX_TIMEOUT_SEC}), ` +
      `${Math.round(limits.memoryBytes / 1048576)} MB of memory, ${limits.maxHostCalls} tool calls; the output is cut at ` +
      `8,000 tokens (${limits.maxOutputChars.toLocaleString("en-US")} characters).`
  ].join("\n")

const cutNote = (r: ScriptResult, limits: SandboxLimits): string =>
  r.droppedChars === 0
    ? ""
    : `\n[output cut at 8,000 tokens (${limits.maxOutputChars.toLocaleString("en-US")} characters): ` +
      `${r.droppedChars.toLocaleString("en-US")} more characters were printed; print a shorter digest]`

/**
 * The codemode tool over `inner` (the tools a script may call, by name). Inner calls run with the
 * services of the codemode call itself (Workspace, JobEvents, Limits), so they are confined and emit
 * `source.read` like direct calls; they never pass the agent loop's tool call, so the loop guard sees
 * only the codemode call. The `kintsugi.codemode` span (with the counts of inner calls) is the parent
 * of any span an inner call opens.
 */
export const makeCodemode = (inner: ReadonlyArray<KernelTool>, limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS): KernelTool => {
  const byName = new Map(inner.map((t) => [t.name, t]))
  const functions = [...byName.keys()]
  return defineTool({
    name: "codemode",
    description: describe(inner, limits),
    params: Params,
    execute: (args) =>
      Effect.gen(function* () {
        const jobLimits = yield* Limits
        const events = yield* JobEvents
        const timeoutMs = Math.min((args.timeoutSec ?? CODEMODE_DEFAULT_TIMEOUT_SEC) * 1000, yield* jobLimits.remainingMs)
        if (timeoutMs < 1000)
          return yield* Effect.fail(new ToolError({ message: "the job has less than a second left: no time to run a script" }))
        const permits = yield* Effect.makeSemaphore(MAX_PARALLEL_CALLS)
        const attributes: Record<string, string | number | boolean> = { calls: 0, timeoutMs }
        const count = (name: string) => {
          attributes["calls"] = Number(attributes["calls"]) + 1
          attributes[`calls.${name}`] = Number(attributes[`calls.${name}`] ?? 0) + 1
        }
        const script = Effect.gen(function* () {
          // Taken inside the span: host calls run with this fiber's services and span as their parent.
          const runtime = yield* Effect.runtime<ToolServices>()
          const call: HostCall = (name, input, signal) => {
            const tool = byName.get(name)
            if (tool === undefined) return Promise.resolve({ ok: false, message: "unknown tool" })
            count(name)
            const run = permits
              .withPermits(1)(tool.execute(input))
              .pipe(
                Effect.match({
                  onFailure: (e) => ({ ok: false, message: e.message }) as const,
                  onSuccess: (o) => ({ ok: true, text: o.text }) as const
                })
              )
            return Runtime.runPromise(runtime, run, { signal })
          }
          const r = yield* Effect.promise((signal) =>
            runScript({ script: args.script, functions, call, limits: { ...limits, timeoutMs }, signal, onProgress: jobLimits.progress })
          )
          attributes["status"] = r.status
          attributes["printedChars"] = r.output.length + r.droppedChars
          attributes["cut"] = r.droppedChars > 0
          if (r.status === "ok") {
            return {
              text:
                r.output === "" && r.droppedChars === 0
                  ? "[the script printed nothing; only what it prints returns]"
                  : r.output + cutNote(r, limits)
            }
          }
          const printed = r.output === "" ? "" : `\n[printed before it stopped:]\n${r.output}${cutNote(r, limits)}`
          return yield* Effect.fail(new ToolError({ message: `The script failed: ${r.message ?? r.status}${printed}` }))
        })
        return yield* events.span("kintsugi.codemode", attributes, script)
      })
  })
}
