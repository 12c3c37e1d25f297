/**
 * A job's SSE stream over a real Bun server whose idle timeout is 1 s (Bun's default is 10 s): the
 * response headers arrive at once for a queued job, a heartbeat comment keeps a silent stream open
 * well past the idle timeout, every event carries `id:`, and a client resumes with Last-Event-ID (at
 * the end of a settled job: 204, no id sent again) — for the API's JSON events and for the portal's
 * rendered rows.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { makeApp } from "../../src/http/app.ts"
import { listen } from "../../src/http/serve.ts"
import { JobBus } from "../../src/worker/JobBus.ts"
import { JobStore, type JobInput } from "../../src/worker/JobStore.ts"
import { useApp } from "../support/appHarness.ts"
import { Access } from "../../src/access/Access.ts"

setDefaultTimeout(60_000)

const h = useApp()
let server: ReturnType<typeof listen>
let base: string
let token: string
let cookie: string

const INPUT: JobInput = {
  agent: "codebase-inventory",
  task: "t",
  workspace: { root: "/r", readOnly: ["/r/src"], outDir: "/r/out" },
  limits: { timeoutSec: 60 }
}
const at = () => new Date().toISOString()

beforeAll(async () => {
  token = await h.user("watcher", ["agents.manage"])
  const session = await h.rt.runPromise(Effect.flatMap(Access, (a) => a.signIn("watcher", "a long test password")))
  cookie = `__Host-kintsugi-session=${session.token}`
  // Heartbeat every 250 ms; Bun drops a connection idle for 1 s.
  server = listen(makeApp({ runtime: h.rt, log: () => undefined, heartbeatMs: 250, allowedHosts: ["127.0.0.1"] }), {
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 1
  })
  base = `http://127.0.0.1:${server.port}`
})
afterAll(async () => {
  await server?.stop(true)
})

const run = <A>(effect: Effect.Effect<A, unknown, JobStore | JobBus>) =>
  h.rt.runPromise(effect as Effect.Effect<A, never, JobStore | JobBus>)
const queued = () => run(Effect.flatMap(JobStore, (s) => s.enqueue(INPUT, "watcher")))
const claim = (id: string) => run(Effect.flatMap(JobStore, (s) => s.claim("test-worker", 60_000, id)))
const append = (id: string, e: JobEvent) =>
  run(
    Effect.gen(function* () {
      yield* (yield* JobStore).appendEvent(id, e)
      yield* (yield* JobBus).publish({ _tag: "Events", jobId: id })
    })
  )
const settle = (id: string) =>
  run(
    Effect.gen(function* () {
      yield* (yield* JobStore).settle(id, { status: "completed", summary: "done" }, "no outputs")
      yield* (yield* JobBus).publish({ _tag: "Events", jobId: id })
    })
  )

/** How long a response's headers may take before the test calls it a hang (generous: CI shares its machine). */
const HANG_MS = 30_000

/** The response, or a failure when its headers do not come within `ms` (never a measurement: a bound on a hang). */
const headersWithin = async (url: string, headers: Record<string, string>, ms: number) => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), ms)
  try {
    return await fetch(url, { headers, signal: controller.signal })
  } catch (e) {
    // Only the bound is renamed: another failure (a reset connection) is reported as itself.
    if (controller.signal.aborted) throw new Error(`no response headers within ${ms} ms`)
    throw e
  } finally {
    clearTimeout(timer)
  }
}

/** Reads the stream into `text` as it arrives; `until` resolves once the text holds `marker`. */
const collect = (response: Response) => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const state = { text: "", ended: false, error: undefined as unknown }
  const waiters: Array<() => void> = []
  void (async () => {
    try {
      while (true) {
        const { done, value } = await reader.read()
        if (done) break
        state.text += decoder.decode(value, { stream: true })
        for (const w of waiters.splice(0)) w()
      }
    } catch (e) {
      state.error = e
    }
    state.ended = true
    for (const w of waiters.splice(0)) w()
  })()
  const until = async (test: (text: string) => boolean) => {
    while (!test(state.text)) {
      if (state.ended) throw new Error(`the stream ended (${String(state.error ?? "closed")}) before: ${state.text.slice(-300)}`)
      await new Promise<void>((resolve) => waiters.push(resolve))
    }
  }
  return { state, until, cancel: () => reader.cancel().catch(() => undefined) }
}

const heartbeats = (text: string) => text.split("\n").filter((l) => l === ": keep-alive").length

describe("the API's job event stream (GET /api/jobs/:id/events)", () => {
  test("a queued job: headers at once; a silent stream outlives the idle timeout on heartbeats; ids on every event", async () => {
    const job = await queued()
    const response = await headersWithin(`${base}/api/jobs/${job.id}/events`, { authorization: `Bearer ${token}` }, HANG_MS)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toStartWith("text/event-stream")
    const stream = collect(response)
    // Silent (still queued) for longer than three idle timeouts: the heartbeat keeps it open.
    await stream.until((t) => heartbeats(t) >= 14)
    expect(stream.state.ended).toBe(false)
    expect(stream.state.text).toStartWith("retry: ")

    await claim(job.id)
    await append(job.id, {
      type: "job.started",
      seq: 0,
      at: at(),
      runtimeVersion: "t",
      agentId: "codebase-inventory",
      agentVersion: 1,
      metadata: {}
    })
    await append(job.id, { type: "message.delta", seq: 1, at: at(), text: "hello" })
    await append(job.id, { type: "job.completed", seq: 2, at: at(), summary: "done" })
    await settle(job.id)
    await stream.until((t) => t.includes("event: job.completed"))
    const frames = stream.state.text.split("\n\n").filter((f) => f.includes("event: "))
    expect(frames.map((f) => /^id: (\d+)$/m.exec(f)?.[1])).toEqual(["0", "1", "2"])
    expect(stream.state.error).toBeUndefined()

    // Resume after event 0: only what came later.
    const resumed = collect(
      await headersWithin(`${base}/api/jobs/${job.id}/events`, { authorization: `Bearer ${token}`, "last-event-id": "0" }, HANG_MS)
    )
    await resumed.until((t) => t.includes("event: job.completed"))
    const later = resumed.state.text.split("\n\n").filter((f) => f.includes("event: "))
    expect(later.map((f) => /^event: (.+)$/m.exec(f)?.[1])).toEqual(["message.delta", "job.completed"])
    expect(later.map((f) => /^id: (\d+)$/m.exec(f)?.[1])).toEqual(["1", "2"])

    // Resumed at or after the last event of a settled job: 204 (an EventSource stops reconnecting), no id repeated.
    for (const last of ["2", "7"]) {
      const ended = await headersWithin(
        `${base}/api/jobs/${job.id}/events`,
        { authorization: `Bearer ${token}`, "last-event-id": last },
        HANG_MS
      )
      expect([last, ended.status, await ended.text()]).toEqual([last, 204, ""])
    }
    expect((await headersWithin(`${base}/api/jobs/${job.id}/events?after=2`, { authorization: `Bearer ${token}` }, HANG_MS)).status).toBe(
      204
    )
  })

  test("a job settled without a terminal event: job.settled carries an id too", async () => {
    const job = await queued()
    await run(Effect.flatMap(JobStore, (s) => s.requestAbort(job.id, "watcher")))
    const stream = collect(await headersWithin(`${base}/api/jobs/${job.id}/events`, { authorization: `Bearer ${token}` }, HANG_MS))
    await stream.until((t) => t.includes("event: job.settled"))
    expect(stream.state.text).toMatch(/id: -1\nevent: job\.settled\ndata: \{"status":"failed","reason":"aborted"/)
    // The EventSource's reconnect with that id: nothing more to say.
    const again = await headersWithin(
      `${base}/api/jobs/${job.id}/events`,
      { authorization: `Bearer ${token}`, "last-event-id": "-1" },
      HANG_MS
    )
    expect(again.status).toBe(204)
  })
})

describe("the portal's live rows (GET /jobs/:id/stream)", () => {
  test("a queued job: headers at once, heartbeats, then server-rendered rows with ids, the final sections and job-end", async () => {
    const job = await queued()
    const headers = { cookie }
    const response = await headersWithin(`${base}/jobs/${job.id}/stream?after=-1`, headers, HANG_MS)
    expect(response.status).toBe(200)
    const stream = collect(response)
    await stream.until((t) => heartbeats(t) >= 6)

    await claim(job.id)
    await append(job.id, {
      type: "job.started",
      seq: 0,
      at: at(),
      runtimeVersion: "t",
      agentId: "codebase-inventory",
      agentVersion: 1,
      metadata: {}
    })
    await append(job.id, { type: "message.delta", seq: 1, at: at(), text: "Hel" })
    await append(job.id, { type: "message.delta", seq: 2, at: at(), text: "lo <script>x</script>" })
    await append(job.id, { type: "tool.call", seq: 3, at: at(), callId: "c", tool: "read", input: { path: "a.ts" }, allowed: true })
    await append(job.id, { type: "job.completed", seq: 4, at: at(), summary: "done" })
    await settle(job.id)
    await stream.until((t) => t.includes("event: job-end"))
    const frames = stream.state.text.split("\n\n").filter((f) => f.includes("event: "))
    const rows = frames.filter((f) => f.includes("event: row"))
    expect(rows.map((f) => /^id: (\d+)$/m.exec(f)?.[1])).toEqual(["0", "1", "2", "3", "4"])
    // The first delta opens a message row; the next one is appended to it out of band.
    expect(rows[1]).toContain('id="ev-1-text"')
    expect(rows[2]).toContain('hx-swap-oob="beforeend:#ev-1-text"')
    // Model text is escaped, never markup.
    expect(rows[2]).toContain("lo &lt;script&gt;x&lt;/script&gt;")
    expect(stream.state.text).not.toContain("<script>")
    expect(rows[3]).toContain("ev-call")
    const final = frames.find((f) => f.includes("event: final")) ?? ""
    expect(final).toContain('id="job-status" role="status" aria-live="polite" hx-swap-oob="true"')
    expect(final).toContain('id="job-trace"')

    // A reconnect with Last-Event-ID 2 gets rows 3 and 4 only, then the final sections again.
    const resumed = collect(await headersWithin(`${base}/jobs/${job.id}/stream?after=-1`, { ...headers, "last-event-id": "2" }, HANG_MS))
    await resumed.until((t) => t.includes("event: job-end"))
    const again = resumed.state.text.split("\n\n").filter((f) => f.includes("event: row"))
    expect(again.map((f) => /^id: (\d+)$/m.exec(f)?.[1])).toEqual(["3", "4"])
  })
})
