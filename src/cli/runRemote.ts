/**
 * `kintsugi run` against a running server: the server is found at KINTSUGI_URL (default
 * http://HOST:PORT, as `serve` binds), the token comes from KINTSUGI_TOKEN or the token file
 * (`$XDG_CONFIG_HOME/kintsugi/token`, default `~/.config/kintsugi/token`). The job is started with
 * POST /api/jobs, its events followed on the SSE stream (resumed after a drop), the summary printed once.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { JobEvent } from "../contract/JobEvent.ts"

const text = (name: string) => Config.option(Config.string(name)).pipe(Effect.map(Option.filter((v) => v.trim() !== "")), Effect.orElseSucceed(() => Option.none<string>()))

export interface Remote {
  readonly url: string
  /** Undefined when neither KINTSUGI_TOKEN nor the token file gives one. */
  readonly token: string | undefined
  /** Where the token file is looked for (for the message when there is none). */
  readonly tokenFile: string
}

/** Where the server would be and the token to use, through Config. */
export const remoteConfig: Effect.Effect<Remote> = Effect.gen(function* () {
  const host = Option.getOrElse(yield* text("HOST"), () => "127.0.0.1")
  const port = Option.getOrElse(yield* text("PORT"), () => "7777")
  // A server bound to every address is reached on loopback.
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host
  const url = Option.getOrElse(yield* text("KINTSUGI_URL"), () => `http://${reachable}:${port}`).replace(/\/+$/, "")
  const home = Option.getOrElse(yield* text("HOME"), () => "/nonexistent")
  const configHome = Option.getOrElse(yield* text("XDG_CONFIG_HOME"), () => join(home, ".config"))
  const tokenFile = join(configHome, "kintsugi", "token")
  const fromEnv = yield* text("KINTSUGI_TOKEN")
  const fromFile = Option.isSome(fromEnv) || !existsSync(tokenFile) ? undefined : (readFileSync(tokenFile, "utf8").split("\n")[0] ?? "").trim()
  return { url, token: Option.getOrUndefined(fromEnv)?.trim() ?? (fromFile === "" ? undefined : fromFile), tokenFile }
})

/** True when a kintsugi server answers GET /healthz at `url` within a second. */
export const serverUp = (url: string): Effect.Effect<boolean> =>
  Effect.promise(async () => {
    try {
      const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })
      await r.arrayBuffer()
      return r.status === 200 || r.status === 503
    } catch {
      return false
    }
  })

export interface RemoteJob {
  readonly agent: string
  readonly task: string
  readonly root: string
  readonly read: ReadonlyArray<string>
  readonly out: string
  readonly timeoutSec: number
  readonly maxCostUsd?: number
  readonly project?: string
}

type Io = { readonly write: (s: string) => void; readonly log: (line: string) => void; readonly render: (e: JobEvent) => void }

const isTerminal = (e: { readonly type: string }) => e.type === "job.completed" || e.type === "job.failed"

/** The SSE frames with data of one response, as (event name, data) pairs; the `id:` line moves `last`. */
const frames = async function* (body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string; id?: number }> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true })
    let end: number
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = "message"
      let data = ""
      let id: number | undefined
      for (const line of frame.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7)
        else if (line.startsWith("data: ")) data += line.slice(6)
        else if (line.startsWith("id: ")) id = Number(line.slice(4))
      }
      // A frame without data (the opening `retry:` line, a `: keep-alive` comment) is no event.
      if (data === "") continue
      yield id === undefined ? { event, data } : { event, data, id }
    }
  }
}

/**
 * Runs the job on the server; the exit code: 0 completed, 1 failed or refused by the server, 2 when
 * the request has problems (every one listed). Interrupted (Ctrl-C), it asks the server to abort the job.
 */
export const runRemoteJob = (remote: Remote & { readonly token: string }, job: RemoteJob, io: Io): Effect.Effect<number> =>
  Effect.gen(function* () {
    const headers = { authorization: `Bearer ${remote.token}`, "content-type": "application/json" }
    const body = {
      agent: job.agent,
      task: job.task,
      workspace: { root: job.root, readOnly: job.read, outDir: job.out },
      limits: { timeoutSec: job.timeoutSec, ...(job.maxCostUsd === undefined ? {} : { maxCostUsd: job.maxCostUsd }) },
      ...(job.project === undefined ? {} : { project: job.project })
    }
    const started = yield* Effect.promise(async () => {
      const r = await fetch(`${remote.url}/api/jobs`, { method: "POST", headers, body: JSON.stringify(body) })
      return { status: r.status, json: (await r.json().catch(() => ({}))) as { job?: { id: string }; error?: { message?: string; problems?: Array<{ path: string; message: string }> } } }
    })
    if (started.status === 400) {
      io.log(`kintsugi run: the job was not started:\n${(started.json.error?.problems ?? []).map((p) => `  ${p.path}: ${p.message}`).join("\n")}`)
      return 2
    }
    const id = started.json.job?.id
    if (id === undefined) {
      const why = started.status === 401 ? `the server refused the token (${remote.url}); issue a new one: kintsugi users token <you>, or POST /api/tokens` : started.json.error?.message ?? `HTTP ${started.status}`
      io.log(`kintsugi run: the server did not start the job: ${why}`)
      return 1
    }
    let last = -1
    let settled: { status: string } | undefined
    const follow = Effect.promise(async () => {
      // A dropped stream is resumed after the last event seen (Last-Event-ID), a few times.
      for (let attempt = 0; attempt < 5 && settled === undefined; attempt++) {
        try {
          const r = await fetch(`${remote.url}/api/jobs/${encodeURIComponent(id)}/events`, {
            headers: { authorization: headers.authorization, accept: "text/event-stream", ...(last >= 0 ? { "last-event-id": String(last) } : {}) }
          })
          if (r.body === null || r.status !== 200) break
          for await (const f of frames(r.body)) {
            if (f.event === "job.settled") {
              settled = JSON.parse(f.data) as { status: string; message?: string | null }
              io.write(`✘ ${(settled as { message?: string | null }).message ?? settled.status}\n`)
              break
            }
            const event = JSON.parse(f.data) as JobEvent & { seq?: number }
            if (f.id !== undefined) last = f.id
            io.render(event)
            if (isTerminal(event)) {
              settled = { status: event.type === "job.completed" ? "completed" : "failed" }
              break
            }
          }
        } catch {
          await Bun.sleep(500)
        }
      }
    })
    const abort = Effect.promise(() =>
      fetch(`${remote.url}/api/jobs/${encodeURIComponent(id)}/abort`, { method: "POST", headers: { authorization: headers.authorization } }).then(
        (r) => r.arrayBuffer(),
        () => undefined
      )
    )
    yield* Effect.onInterrupt(follow, () => abort)
    // The terminal event comes before the worker settles the job (outputs committed): wait for the row.
    const final = yield* Effect.promise(async () => {
      for (let attempt = 0; attempt < 150; attempt++) {
        const r = await fetch(`${remote.url}/api/jobs/${encodeURIComponent(id)}`, { headers: { authorization: headers.authorization } })
        const job = ((await r.json().catch(() => ({}))) as { job?: { status: string; outputs: string | null } }).job
        if (job === undefined || job.status === "completed" || job.status === "failed") return job
        await Bun.sleep(200)
      }
      return undefined
    })
    if (final?.outputs !== undefined && final.outputs !== null) io.write(`outputs: ${final.outputs}\n`)
    return (final?.status ?? settled?.status) === "completed" ? 0 : 1
  })
