/**
 * One script's run inside its own QuickJS instance: installs the API, drives promise jobs, answers
 * host calls, enforces the limits and frees everything exactly once (see QuickJsSandbox.ts).
 */
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten"
import { bootstrapSource, wrapScript } from "./guestApi.ts"
import type { HostReply, RunOptions, SandboxLimits, ScriptResult } from "./scriptContract.ts"
import type { QuickJsInstance } from "./quickJsModule.ts"

/** Promise jobs run per pump before the host event loop gets a turn. */
const JOBS_PER_PUMP = 10_000
const MAX_ERROR_CHARS = 2000

type Ending = Pick<ScriptResult, "status" | "message">

export class ScriptRun {
  private readonly limits: SandboxLimits
  private readonly instance: QuickJsInstance
  private readonly deadline: number
  private readonly rt: QuickJSRuntime
  private readonly ctx: QuickJSContext
  /** Aborts the host calls still running when the script ends. */
  private readonly inner = new AbortController()
  private readonly pending = new Set<QuickJSDeferredPromise>()
  private main: QuickJSHandle | undefined
  private describeFn: QuickJSHandle | undefined
  private sliceFn: QuickJSHandle | undefined
  private alive = true
  /** The VM threw into the host mid-operation (host stack exhausted, wasm trap): dropped, not disposed. */
  private broken = false
  /** The interrupt handler stopped the VM (deadline or abort). */
  private interrupted = false
  private pumpScheduled = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private inFlight = 0
  private hostCalls = 0
  private jobs = 0
  private readonly output: Array<string> = []
  private kept = 0
  private dropped = 0

  constructor(
    instance: QuickJsInstance,
    private readonly options: RunOptions,
    private readonly resolve: (r: ScriptResult) => void
  ) {
    this.limits = options.limits
    // Date.now(): the interrupt handler below reads it synchronously inside QuickJS, outside any fiber.
    this.deadline = Date.now() + options.limits.timeoutMs
    this.instance = instance
    this.rt = instance.module.newRuntime()
    this.rt.setMemoryLimit(this.limits.memoryBytes)
    this.rt.setMaxStackSize(this.limits.stackBytes)
    // Checked between bytecode operations, so `try { while (true) {} } catch {}` ends too (the
    // interrupt is uncatchable); a script parked on a host promise is ended by the host timer.
    this.rt.setInterruptHandler(() => {
      this.options.onProgress?.()
      // Date.now(): called synchronously between bytecode operations, nothing to yield to.
      if (Date.now() < this.deadline && this.options.signal?.aborted !== true) return false
      this.interrupted = true
      return true
    })
    this.rt.setModuleLoader((name) => ({ error: new Error(`modules are not available in codemode (import "${name.slice(0, 100)}")`) }))
    this.ctx = this.rt.newContext()
  }

  start(): void {
    if (this.options.signal?.aborted === true) return this.finish({ status: "aborted", message: "the job ended before the script ran" })
    this.options.signal?.addEventListener("abort", this.onAbort, { once: true })
    this.timer = setTimeout(() => this.finish(this.timeoutEnding()), this.limits.timeoutMs)
    try {
      this.install()
      const r = this.ctx.evalCode(wrapScript(this.options.script), "script.js")
      if (r.error !== undefined) return this.failWith(r.error)
      this.main = r.value
      this.pump()
    } catch (e) {
      this.crashed(e)
    }
  }

  private readonly onAbort = () => this.finish({ status: "aborted", message: "the job ended while the script ran" })

  private timeoutEnding(): Ending {
    return { status: "timeout", message: `the script was stopped at its time limit of ${Math.round(this.limits.timeoutMs / 100) / 10} s` }
  }

  /** Why the interrupt handler stopped the VM. */
  private interruptEnding(): Ending {
    return this.options.signal?.aborted === true
      ? { status: "aborted", message: "the job ended while the script ran" }
      : this.timeoutEnding()
  }

  /** Installs `tools`, `print` and `console` through the bootstrap function; nothing else of the host. */
  private install(): void {
    const { ctx } = this
    const boot = ctx.unwrapResult(ctx.evalCode(bootstrapSource(this.options.functions), "bootstrap.js"))
    const call = ctx.newFunction("call", (name, args) => this.hostCall(name, args))
    const print = ctx.newFunction("print", (text) => {
      this.print(text)
    })
    const api = ctx.unwrapResult(ctx.callFunction(boot, ctx.undefined, call, print))
    for (const h of [boot, call, print]) h.dispose()
    // Taken before the script runs: later changes to String.prototype cannot reach the host.
    this.describeFn = ctx.getProp(api, "describe")
    const proto = ctx.getProp(api, "stringProto")
    this.sliceFn = ctx.getProp(proto, "slice")
    proto.dispose()
    api.dispose()
  }

  /** `call(name, json)` from the guest: re-validated here, then run by the host; returns a promise. */
  private hostCall(nameH: QuickJSHandle, argsH: QuickJSHandle): QuickJSHandle {
    const { ctx } = this
    const deferred = ctx.newPromise()
    const reject = (message: string) => {
      const err = ctx.newError({ name: "ToolError", message })
      deferred.reject(err)
      err.dispose()
      return deferred.handle
    }
    const name = ctx.typeof(nameH) === "string" ? ctx.getString(nameH) : undefined
    if (name === undefined || !this.options.functions.includes(name)) return reject("unknown tool")
    if (++this.hostCalls > this.limits.maxHostCalls) {
      return reject(`this script made more than ${this.limits.maxHostCalls} tool calls (the limit)`)
    }
    const length = ctx.typeof(argsH) === "string" ? this.lengthOf(argsH) : undefined
    if (length === undefined) return reject(`tools.${name}: the arguments must be one object`)
    if (length > this.limits.maxArgChars)
      return reject(`tools.${name}: the arguments are longer than ${this.limits.maxArgChars} characters`)
    let args: unknown
    try {
      args = JSON.parse(ctx.getString(argsH))
    } catch {
      return reject(`tools.${name}: the arguments are not JSON data`)
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) return reject(`tools.${name}: the arguments must be one object`)
    this.pending.add(deferred)
    this.inFlight++
    const settle = (reply: HostReply) => {
      this.inFlight--
      if (!this.alive) return
      this.pending.delete(deferred)
      try {
        const value = reply.ok ? ctx.newString(reply.text) : ctx.newError({ name: "ToolError", message: reply.message })
        if (reply.ok) deferred.resolve(value)
        else deferred.reject(value)
        value.dispose()
      } catch (e) {
        return this.crashed(e)
      }
      this.schedulePump()
    }
    this.options
      .call(name, args as Record<string, unknown>, this.inner.signal)
      .then(settle, () => settle({ ok: false, message: `tools.${name} failed unexpectedly` }))
    return deferred.handle
  }

  /** `print(text)` from the guest: keeps up to maxOutputChars; longer text is cut inside the VM first. */
  private print(h: QuickJSHandle): void {
    const length = this.ctx.typeof(h) === "string" ? this.lengthOf(h) : undefined
    if (length === undefined) return
    const room = this.limits.maxOutputChars - this.kept
    if (room <= 0) {
      this.dropped += length
      return
    }
    const take = Math.min(length, room)
    this.dropped += length - take
    this.output.push(take === length ? this.ctx.getString(h) : this.sliceOf(h, take))
    // One separator per line printed.
    this.kept += take + 1
  }

  private lengthOf(h: QuickJSHandle): number {
    const len = this.ctx.getProp(h, "length")
    const n = this.ctx.getNumber(len)
    len.dispose()
    return n
  }

  /** The first `end` characters of the guest string `h`, cut by the original String.prototype.slice. */
  private sliceOf(h: QuickJSHandle, end: number): string {
    if (this.sliceFn === undefined) return ""
    const zero = this.ctx.newNumber(0)
    const to = this.ctx.newNumber(end)
    const r = this.ctx.callFunction(this.sliceFn, h, zero, to)
    zero.dispose()
    to.dispose()
    if (r.error !== undefined) {
      r.error.dispose()
      return ""
    }
    const s = this.ctx.typeof(r.value) === "string" ? this.ctx.getString(r.value) : ""
    r.value.dispose()
    return s
  }

  private schedulePump(): void {
    if (this.pumpScheduled || !this.alive) return
    this.pumpScheduled = true
    setImmediate(() => {
      this.pumpScheduled = false
      this.pump()
    })
  }

  /** Runs pending promise jobs (bounded per pump, so host timers get turns), then looks at the script's promise. */
  private pump(): void {
    if (!this.alive || this.main === undefined) return
    try {
      const r = this.rt.executePendingJobs(JOBS_PER_PUMP)
      if (r.error !== undefined) return this.failWith(r.error)
      this.jobs += r.value
      if (this.interrupted) return this.finish(this.interruptEnding())
      const state = this.ctx.getPromiseState(this.main)
      if (state.type === "fulfilled") {
        if (state.notAPromise !== true) state.value.dispose()
        return this.finish({ status: "ok" })
      }
      if (state.type === "rejected") return this.failWith(state.error)
      if (this.rt.hasPendingJob()) {
        if (this.jobs >= this.limits.maxJobs) {
          return this.finish({ status: "limit", message: `the script ran more than ${this.limits.maxJobs} promise jobs (the limit)` })
        }
        return this.schedulePump()
      }
      if (this.inFlight === 0) this.finish({ status: "error", message: "the script is waiting for a promise that nothing will settle" })
    } catch (e) {
      this.crashed(e)
    }
  }

  /** Ends the run with the guest error `err` (disposed here), described by the guest's own formatter. */
  private failWith(err: QuickJSHandle): void {
    let message = "the script threw an exception"
    if (!this.interrupted && this.describeFn !== undefined) {
      const r = this.ctx.callFunction(this.describeFn, this.ctx.undefined, err)
      if (r.error === undefined) {
        if (this.ctx.typeof(r.value) === "string") message = this.sliceOf(r.value, MAX_ERROR_CHARS)
        r.value.dispose()
      } else r.error.dispose()
    }
    err.dispose()
    if (this.interrupted) return this.finish(this.interruptEnding())
    // Out of memory may surface as a thrown null (no memory left for an error object); the instance's
    // memory then stands within a few growth steps of its maximum.
    const full = this.instance.memory.buffer.byteLength > this.instance.maxBytes - 4 * 1024 * 1024
    const hint =
      message.includes("out of memory") || full ? ` (the script's memory limit is ${Math.round(this.limits.memoryBytes / 1048576)} MB)` : ""
    this.finish({ status: "error", message: message + hint })
  }

  /** The VM threw into the host (host stack exhausted by deep native recursion, wasm trap). */
  private crashed(e: unknown): void {
    this.broken = true
    this.finish({
      status: "error",
      message: `the script was stopped: ${e instanceof RangeError ? "it nested too deeply (the stack ran out)" : "the sandbox failed"}`
    })
  }

  /** Settles once: aborts host calls in flight, then frees every handle, the context and the runtime. */
  private finish(ending: Ending): void {
    if (!this.alive) return
    this.alive = false
    clearTimeout(this.timer)
    this.options.signal?.removeEventListener("abort", this.onAbort)
    this.inner.abort()
    if (!this.broken) {
      try {
        for (const d of this.pending) d.dispose()
        for (const h of [this.main, this.describeFn, this.sliceFn]) if (h?.alive === true) h.dispose()
        this.ctx.dispose()
        this.rt.dispose()
      } catch {
        // Freeing failed: the instance is dropped with everything in it, which frees it as well.
      }
    }
    this.resolve({ ...ending, output: this.output.join("\n"), droppedChars: this.dropped, hostCalls: this.hostCalls })
  }
}
