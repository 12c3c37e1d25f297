/**
 * `kintsugi run` against a running server: the server is found at KINTSUGI_URL (default
 * http://HOST:PORT, as `serve` binds), the token comes from KINTSUGI_TOKEN or the token file
 * (`$XDG_CONFIG_HOME/kintsugi/token`, default `~/.config/kintsugi/token`). The job is started with
 * POST /api/jobs, its events followed on the SSE stream (resumed after a drop), the summary printed once.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { JobEvent } from "../contract/JobEvent.ts"
import type { RunIo } from "./runOutput.ts"

const text = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Effect.map(Option.filter((v) => v.trim() !== "")),
    Effect.orElseSucceed(() => Option.none<string>())
  )

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
  const fromFile =
    Option.isSome(fromEnv) || !existsSync(tokenFile) ? undefined : (readFileSync(tokenFile, "utf8").split("\n")[0] ?? "").trim()
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

const Problems = Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
/** The answer of POST /api/jobs: the job, or the error (with every problem on a 400). */
const Started = Schema.Struct({
  job: Schema.optional(Schema.Struct({ id: Schema.String })),
  error: Schema.optional(Schema.Struct({ message: Schema.optional(Schema.String), problems: Schema.optional(Problems) }))
})
/** The answer of GET /api/jobs/:id, as far as waiting for the end needs it (runOutput.ts reads the rest). */
const JobAnswer = Schema.Struct({ job: Schema.Struct({ status: Schema.String }) })
const AnyJob = Schema.Struct({ job: Schema.Unknown })
const decodeEvent = Schema.decodeUnknownOption(JobEvent)

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

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Runs the job on the server, reporting on `io`; the exit code: 0 completed, 1 failed or refused by the
 * server, 2 when the request has problems (every one listed). The job is started uninterruptibly;
 * interrupted (Ctrl-C) after that, it says so, asks the server to abort the job and reports its end.
 */
export const runRemoteJob = (remote: Remote & { readonly token: string }, job: RemoteJob, io: RunIo): Effect.Effect<number> =>
  startAndFollow(
    remote,
    "/api/jobs",
    {
      agent: job.agent,
      task: job.task,
      workspace: { root: job.root, readOnly: job.read, outDir: job.out },
      limits: { timeoutSec: job.timeoutSec, ...(job.maxCostUsd === undefined ? {} : { maxCostUsd: job.maxCostUsd }) },
      ...(job.project === undefined ? {} : { project: job.project })
    },
    io
  )

/**
 * Continues the finished job `parent` with `task` on the server (POST /api/jobs/:id/continue), reporting
 * as `runRemoteJob` does: exit 2 when the task has problems, 1 when the server refuses (an unknown job,
 * one unfinished or without a transcript) or the job fails.
 */
export const continueRemoteJob = (
  remote: Remote & { readonly token: string },
  parent: string,
  task: string,
  io: RunIo
): Effect.Effect<number> => startAndFollow(remote, `/api/jobs/${encodeURIComponent(parent)}/continue`, { task }, io)

/** Starts a job with a POST of `body` to `path`, then follows it to its end (runRemoteJob). */
const startAndFollow = (remote: Remote & { readonly token: string }, path: string, body: unknown, io: RunIo): Effect.Effect<number> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const authorization = `Bearer ${remote.token}`
      const jobUrl = (id: string, rest = "") => `${remote.url}/api/jobs/${encodeURIComponent(id)}${rest}`
      const started = yield* Effect.promise(async () => {
        const r = await fetch(`${remote.url}${path}`, {
          method: "POST",
          headers: { authorization, "content-type": "application/json" },
          body: JSON.stringify(body)
        })
        const none: typeof Started.Type = {}
        return {
          status: r.status,
          answer: Option.getOrElse(Schema.decodeUnknownOption(Started)(await r.json().catch(() => undefined)), () => none)
        }
      })
      if (started.status === 400) {
        io.refused("the job was not started", started.answer.error?.problems ?? [])
        return 2
      }
      const id = started.answer.job?.id
      if (id === undefined) {
        const why =
          started.status === 401
            ? `the server refused the token (${remote.url}); issue a new one: kintsugi users token <you>, or POST /api/tokens`
            : (started.answer.error?.message ?? `HTTP ${started.status}`)
        io.refused(`the server did not start the job: ${why}`)
        return 1
      }
      io.started(id)

      let last = -1
      // One pass over the event stream (resumed after the last event seen): true once the job has ended.
      const followOnce = Effect.promise(async (signal) => {
        const r = await fetch(jobUrl(id, "/events"), {
          signal,
          headers: { authorization, accept: "text/event-stream", ...(last >= 0 ? { "last-event-id": String(last) } : {}) }
        })
        if (r.body === null || r.status !== 200) return true
        for await (const f of frames(r.body)) {
          if (f.event === "job.settled") return true
          const event = decodeEvent(parse(f.data))
          if (f.id !== undefined) last = f.id
          if (Option.isNone(event)) continue
          io.event(event.value)
          if (isTerminal(event.value)) return true
        }
        return false
      }).pipe(Effect.catchAllDefect(() => Effect.succeed(false)))
      // A dropped stream is resumed a few times, half a second apart.
      const follow = Effect.repeat(followOnce, { schedule: Schedule.spaced("500 millis"), until: (ended) => ended, times: 4 })
      // The terminal event comes before the worker settles the job (outputs committed): wait for the row.
      const row = Effect.promise(async (signal): Promise<unknown> => {
        const r = await fetch(jobUrl(id), { signal, headers: { authorization } })
        return r.json().catch(() => undefined)
      })
      const ended = (answer: unknown) =>
        Option.match(Schema.decodeUnknownOption(JobAnswer)(answer), {
          onNone: () => true,
          onSome: (a) => a.job.status === "completed" || a.job.status === "failed"
        })
      const every200ms = Schedule.spaced("200 millis").pipe(
        Schedule.intersect(Schedule.recurs(150)),
        Schedule.whileInput((answer: unknown) => !ended(answer)),
        Schedule.passthrough
      )
      const settledRow = Effect.repeat(row, every200ms).pipe(
        Effect.map((answer) => Option.getOrUndefined(Schema.decodeUnknownOption(AnyJob)(answer))?.job)
      )
      const report = Effect.flatMap(settledRow, (settled) =>
        Effect.sync(() => (settled === undefined ? io.log(`kintsugi run: the job ${id} could not be read back`) : io.settled(settled)))
      )
      const abort = Effect.sync(() => io.aborting()).pipe(
        Effect.zipRight(
          Effect.promise(() =>
            fetch(jobUrl(id, "/abort"), { method: "POST", headers: { authorization } }).then(
              (r) => r.arrayBuffer(),
              () => undefined
            )
          )
        ),
        Effect.zipRight(report)
      )
      const settled = yield* restore(Effect.zipRight(follow, settledRow)).pipe(Effect.onInterrupt(() => abort))
      if (settled === undefined) {
        io.log(`kintsugi run: the job ${id} could not be read back`)
        return 1
      }
      io.settled(settled)
      return Option.match(Schema.decodeUnknownOption(JobAnswer)({ job: settled }), {
        onNone: () => 1,
        onSome: (a) => (a.job.status === "completed" ? 0 : 1)
      })
    })
  )
