/**
 * Transcripts end to end: real job children of a project with `transcripts: full` hand each turn to the
 * worker over the services channel; the rows are sealed, one per turn, and replay into exactly what the
 * scripted model server was sent; nothing of them is in events or logs; `off` and no project keep
 * nothing; the retention sweep on a moved clock; the API and the portal panel behind transcripts.read.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer, TestClock, TestContext } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Access, type Permission } from "../../src/access/Access.ts"
import type { TranscriptMessage, TranscriptTurn } from "../../src/job/Transcript.ts"
import { makeSecretBox, SecretBox } from "../../src/providers/SecretBox.ts"
import { JobStore, type JobRow } from "../../src/worker/JobStore.ts"
import { ServicesEndpoint } from "../../src/worker/Services.ts"
import { ServiceTokens } from "../../src/worker/ServiceTokens.ts"
import { TranscriptStore, TranscriptStoreLive } from "../../src/worker/transcripts/TranscriptStore.ts"
import { createRootDir } from "../support/jobRoots.ts"
import type { RecordedRequest, Step } from "../support/scriptedServers.ts"
import { ORIGIN, useServicesApp } from "../support/servicesHarness.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(120_000)

const h = useServicesApp()

const TOOL_MARKER = "ZEBRA-QUARTZ-4711"
const TASK_MARKER = "PELICAN-OBSIDIAN-93"
const DAY_MS = 24 * 60 * 60 * 1000

const turn = (name: string, args: Record<string, unknown>): Step => ({ kind: "turn", toolCalls: [{ name, arguments: args }] })
const done = (text = "Done."): Step => ({ kind: "turn", text })

const setProject = async (id: string, settings: Record<string, unknown>) => {
  const r = await h.api("PUT", `/api/projects/${id}`, { name: id, ...settings })
  expect(r.status).toBe(200)
}

/** Queues a job whose workspace holds `secret.txt` (with the tool marker) and waits for it to settle. */
const runJob = async (agent: string, project: string | undefined): Promise<{ job: JobRow; events: ReadonlyArray<unknown> }> => {
  const root = createRootDir("kintsugi-transcripts-")
  mkdirSync(join(root, "src"))
  mkdirSync(join(root, "out"))
  writeFileSync(join(root, "src", "secret.txt"), `the code word is ${TOOL_MARKER}\n`)
  try {
    const r = await h.api("POST", "/api/jobs", {
      agent,
      task: `Read secret.txt and report. Reference ${TASK_MARKER}.`,
      ...(project === undefined ? {} : { project }),
      workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
      limits: { timeoutSec: 60 }
    })
    expect(r.status).toBe(201)
    const id = r.json<{ job: JobRow }>().job.id
    const job = await until(
      async () => {
        const job = await h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
        return (job.status === "completed" || job.status === "failed") && job
      },
      { what: `job ${id} to settle`, timeoutMs: 120_000, everyMs: 50 }
    )
    const events = await h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.events(id, -1)))
    return { job, events }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

const stored = (jobId: string) => h.rt.runPromise(Effect.flatMap(TranscriptStore, (s) => s.read(jobId)))
const rawRows = (jobId: string) =>
  h.rt.runPromise(
    Effect.flatMap(SqlClient, (sql) =>
      Effect.orDie(
        sql<{
          turn: number
          ciphertext: string
        }>`SELECT turn, ciphertext FROM runtime.transcript_turn WHERE job_id = ${jobId} ORDER BY turn`
      )
    )
  )

/** The conversation each turn's request carried, replayed from the turns alone. */
const replay = (turns: ReadonlyArray<TranscriptTurn>): ReadonlyArray<ReadonlyArray<TranscriptMessage>> => {
  let conversation: ReadonlyArray<TranscriptMessage> = []
  return turns.map((t) => {
    conversation = [...conversation.slice(0, t.compaction?.kept ?? conversation.length), ...t.messages]
    const sent = conversation
    conversation = t.answer === undefined ? conversation : [...conversation, t.answer]
    return sent
  })
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((b: { type?: string; text?: string }) => (b.type === "text" ? (b.text ?? "") : "")).join("")
      : ""

interface Sent {
  readonly role: string
  readonly text: string
  readonly calls: ReadonlyArray<readonly [string, unknown]>
}

/** A transcript message as the OpenAI chat-completions API carries it: role, text, tool calls by name and arguments. */
const fromTranscript = (m: TranscriptMessage): Sent => {
  const content = m["content"]
  if (m.role === "toolResult") return { role: "tool", text: textOf(content), calls: [] }
  const calls = Array.isArray(content)
    ? content
        .filter((b: { type?: string }) => b.type === "toolCall")
        .map((b: { name: string; arguments: unknown }): readonly [string, unknown] => [b.name, b.arguments])
    : []
  return { role: m.role, text: textOf(content), calls }
}
const fromRequest = (m: {
  role: string
  content?: unknown
  tool_calls?: Array<{ function: { name: string; arguments: string } }>
}): Sent => ({
  role: m.role,
  text: textOf(m.content ?? ""),
  calls: (m.tool_calls ?? []).map((c): readonly [string, unknown] => [c.function.name, JSON.parse(c.function.arguments)])
})
const requestMessages = (r: RecordedRequest) => {
  const body = r.body as { messages: Array<{ role: string; content?: unknown }> }
  return {
    system: body.messages.filter((m) => m.role === "system" || m.role === "developer").map((m) => textOf(m.content)),
    messages: body.messages.filter((m) => m.role !== "system" && m.role !== "developer").map(fromRequest)
  }
}

const addUser = async (name: string, permissions: ReadonlyArray<Permission>) => {
  await h.rt.runPromise(Effect.flatMap(Access, (a) => a.addUser(name, "a long test password", permissions)))
  return h.rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken(name, "test")))
}
const portal = async (path: string, token: string, htmx = false) => {
  const r = await h.app.handle(
    new Request(`${ORIGIN}${path}`, { headers: { authorization: `Bearer ${token}`, ...(htmx ? { "hx-request": "true" } : {}) } })
  )
  return { status: r.status, text: await r.text() }
}

describe("transcripts", () => {
  let fullJob = ""

  test("full: one sealed row per turn, replaying into exactly what the model server was sent; nothing in events or logs", async () => {
    await h.project("kept")
    await setProject("kept", { transcripts: "full" })
    const server = await h.agent("reader", { tools: ["read"] }, [
      turn("read", { path: "src/secret.txt" }),
      done("The code word is in the file.")
    ])
    const { job, events } = await runJob("reader", "kept")
    expect(job.status).toBe("completed")
    fullJob = job.id

    const turns = (await stored(job.id)).map((t) => t.record)
    expect(turns.map((t) => t.turn)).toEqual([1, 2])
    expect(server.requests.length).toBe(2)
    const sent = replay(turns)
    for (const [i, request] of server.requests.entries()) {
      const { system, messages } = requestMessages(request)
      expect(sent[i]?.map(fromTranscript)).toEqual(messages)
      expect(turns[i]?.instructionsHash).toBe(createHash("sha256").update(system.join("")).digest("hex"))
    }
    // The task went in with turn 1; the tool's output with turn 2; each answer is the model's.
    expect(textOf(turns[0]?.messages[0]?.["content"])).toContain(TASK_MARKER)
    expect(turns[1]?.messages.map((m) => m.role)).toEqual(["toolResult"])
    expect(textOf(turns[1]?.messages[0]?.["content"])).toContain(TOOL_MARKER)
    expect(textOf(turns[1]?.answer?.["content"])).toBe("The code word is in the file.")

    // At rest: ciphertext only.
    const rows = await rawRows(job.id)
    expect(rows.length).toBe(2)
    for (const row of rows) {
      expect(row.ciphertext.startsWith("v1:")).toBe(true)
      for (const plain of [TOOL_MARKER, TASK_MARKER, "secret.txt", "code word"]) expect(row.ciphertext).not.toContain(plain)
    }
    // Events (the spec's summaries) and the server's logs never carry the transcript's content.
    expect(JSON.stringify(events)).not.toContain(TOOL_MARKER)
    expect(h.logs.join("\n")).not.toContain(TOOL_MARKER)
  })

  test("off, and a job without a project, keep nothing", async () => {
    await h.project("unkept")
    await h.agent("quiet", { tools: ["read"] }, [
      turn("read", { path: "src/secret.txt" }),
      done(),
      turn("read", { path: "src/secret.txt" }),
      done()
    ])
    const off = await runJob("quiet", "unkept")
    expect(off.job.status).toBe("completed")
    expect(await rawRows(off.job.id)).toEqual([])
    const none = await runJob("quiet", undefined)
    expect(none.job.status).toBe("completed")
    expect(await rawRows(none.job.id)).toEqual([])
  })

  test("API: transcripts.read or an admin reads the turns; anyone else 403; an unknown job 404", async () => {
    const reader = await addUser("tx-reader", ["transcripts.read"])
    const plain = await addUser("tx-plain", [])
    const mine = await h.api("GET", `/api/jobs/${fullJob}/transcript`, undefined, reader)
    expect(mine.status).toBe(200)
    const body = mine.json<{ jobId: string; turns: Array<TranscriptTurn & { createdAt: string }> }>()
    expect(body.jobId).toBe(fullJob)
    expect(body.turns.map((t) => t.turn)).toEqual([1, 2])
    expect(JSON.stringify(body.turns[1]?.messages)).toContain(TOOL_MARKER)
    expect((await h.api("GET", `/api/jobs/${fullJob}/transcript`)).status).toBe(200)
    const refused = await h.api("GET", `/api/jobs/${fullJob}/transcript`, undefined, plain)
    expect(refused.status).toBe(403)
    expect(refused.text).toContain("transcripts.read")
    expect(refused.text).not.toContain(TOOL_MARKER)
    expect((await h.api("GET", `/api/jobs/${crypto.randomUUID()}/transcript`, undefined, reader)).status).toBe(404)
  })

  test("portal: the panel and the page show the turns to transcripts.read; to anyone else an empty panel and a 403 page", async () => {
    const reader = await h.rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken("tx-reader", "portal")))
    const plain = await h.rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken("tx-plain", "portal")))
    // The job page loads the panel beside its timeline.
    const jobPage = await portal(`/jobs/${fullJob}`, reader)
    expect(jobPage.text).toContain(`hx-get="/jobs/${fullJob}/transcript"`)
    const panel = await portal(`/jobs/${fullJob}/transcript`, reader, true)
    expect(panel.status).toBe(200)
    expect(panel.text).toContain("Turn 2")
    expect(panel.text).toContain(TOOL_MARKER)
    expect(panel.text).toContain("Tool call")
    const page = await portal(`/jobs/${fullJob}/transcript`, reader)
    expect(page.status).toBe(200)
    expect(page.text).toContain("<html")
    expect(page.text).toContain(TOOL_MARKER)
    const hidden = await portal(`/jobs/${fullJob}/transcript`, plain, true)
    expect(hidden.status).toBe(200)
    expect(hidden.text).not.toContain(TOOL_MARKER)
    expect(hidden.text).not.toContain("Turn 1")
    const refused = await portal(`/jobs/${fullJob}/transcript`, plain)
    expect(refused.status).toBe(403)
    expect(refused.text).not.toContain(TOOL_MARKER)
  })

  test("the project's settings form sets transcripts and retention; a bad retention is refused at its field", async () => {
    const post = (form: Record<string, string>) =>
      h.app.handle(
        new Request(`${ORIGIN}/projects/formed`, {
          method: "POST",
          headers: { authorization: `Bearer ${h.token()}`, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(form).toString()
        })
      )
    await h.project("formed")
    const page = await portal("/projects/formed", h.token())
    expect(page.text).toContain('name="transcripts"')
    expect(page.text).toContain('name="transcriptRetentionDays"')
    expect((await post({ name: "formed", transcripts: "full", transcriptRetentionDays: "7" })).status).toBeLessThan(400)
    const saved = (await h.api("GET", "/api/projects")).json<{
      projects: Array<{ id: string; transcripts: string; transcriptRetentionDays: number }>
    }>()
    expect(saved.projects.find((p) => p.id === "formed")).toMatchObject({ transcripts: "full", transcriptRetentionDays: 7 })
    const refused = await post({ name: "formed", transcripts: "full", transcriptRetentionDays: "0" })
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain("must be a whole number of days from 1 to 3650")
    const api = await h.api("PUT", "/api/projects/formed", { name: "formed", transcripts: "some" })
    expect(api.status).toBe(400)
    expect(api.text).toContain("transcripts")
  })

  test("the transcript endpoint: only a token minted with it, only while the project keeps transcripts; a retried turn is kept once", async () => {
    await h.project("endpoint")
    await setProject("endpoint", { transcripts: "full" })
    const root = createRootDir("kintsugi-transcripts-")
    const jobId = await h.rt.runPromise(
      Effect.gen(function* () {
        const store = yield* JobStore
        const job = yield* store.enqueue(
          { project: "endpoint", agent: "a", task: "t", workspace: { root, readOnly: [root], outDir: root }, limits: { timeoutSec: 60 } },
          "test"
        )
        yield* store.claim("test-worker", 60_000, job.id)
        return job.id
      })
    )
    rmSync(root, { recursive: true, force: true })
    const mint = (tools: ReadonlyArray<string>) =>
      h.rt.runPromise(Effect.flatMap(ServiceTokens, (t) => t.mint({ jobId, projectId: "endpoint", agentId: "a", memoryRole: null, tools })))
    const url = await h.rt.runPromise(Effect.flatMap(ServicesEndpoint, (e) => e.url))
    const post = async (token: string, body: unknown) => {
      const r = await fetch(`${url}/transcript`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify(body)
      })
      return { status: r.status, body: (await r.json()) as { text: string; isError: boolean } }
    }
    const hash = "0".repeat(64)
    const one = (text: string): TranscriptTurn => ({
      turn: 1,
      instructionsHash: hash,
      toolsHash: hash,
      messages: [{ role: "user", content: "t", timestamp: 0 }],
      answer: { role: "assistant", content: [{ type: "text", text }] }
    })
    // A token without the transcript grant (memory or web only) may not post turns.
    expect((await post(await mint(["memory_search"]), one("x"))).status).toBe(403)
    const token = await mint(["transcript"])
    const bad = await post(token, { turn: 0, messages: "no" })
    expect(bad.status).toBe(400)
    expect(bad.body.text).toContain("turn")
    // Posted before its call (no answer), the turn is stored unanswered; its answered record replaces it.
    const { answer: _answer, ...unanswered } = one("first")
    expect((await post(token, unanswered)).status).toBe(200)
    expect((await stored(jobId)).map((t) => t.record.answer)).toEqual([undefined])
    expect(await post(token, one("first"))).toEqual({ status: 200, body: { text: "stored", isError: false } })
    // A retried append of the same turn keeps the first answered one, and an unanswered one sent late replaces nothing.
    expect((await post(token, one("second"))).status).toBe(200)
    expect((await post(token, unanswered)).status).toBe(200)
    expect((await stored(jobId)).map((t) => textOf(t.record.answer?.["content"]))).toEqual(["first"])
    // Turned off mid-job: no more turns are taken.
    await setProject("endpoint", { transcripts: "off" })
    const off = await post(token, { ...one("late"), turn: 2 })
    expect(off.status).toBe(403)
    expect(off.body.text).toContain("transcripts are off for this project")
    expect((await rawRows(jobId)).length).toBe(1)

    // A stored row that opens but is not a turn: RowInvalid (500 at the edge, which logs the cause), quoting nothing of it.
    const box = makeSecretBox(randomBytes(32))
    const hashes = { instructionsHash: "0".repeat(64), toolsHash: "0".repeat(64) }
    // A role the schema does not know: the decoder's message quotes it.
    const sealed = box.seal(JSON.stringify({ turn: 2, ...hashes, messages: [{ role: TOOL_MARKER }], answer: { role: "assistant" } }))
    const failure = await h.rt.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        yield* Effect.orDie(sql`DELETE FROM runtime.transcript_turn WHERE job_id = ${jobId}`)
        yield* Effect.orDie(
          sql`INSERT INTO runtime.transcript_turn (job_id, turn, ciphertext, created_at) VALUES (${jobId}, 2, ${sealed}, now())`
        )
        return yield* Effect.flip((yield* TranscriptStore).read(jobId))
      }).pipe(Effect.provide(Layer.provide(TranscriptStoreLive, Layer.succeed(SecretBox, box))))
    )
    expect(failure._tag).toBe("RowInvalid")
    expect(`${failure.message} ${String(failure.cause)} ${JSON.stringify(failure)}`).not.toContain(TOOL_MARKER)
  })

  test("the sweep deletes turns past their project's retention, on a moved clock", async () => {
    const sweepAt = (at: number) =>
      h.rt.runPromise(
        Effect.gen(function* () {
          yield* TestClock.setTime(at)
          return yield* (yield* TranscriptStore).sweep
        }).pipe(Effect.provide(TestContext.TestContext))
      )
    const now = Date.now()
    // The default 30 days: not yet at 29, gone at 31.
    expect(await sweepAt(now + 29 * DAY_MS)).toBe(0)
    expect((await rawRows(fullJob)).length).toBe(2)
    // A shorter retention applies to turns stored already.
    await setProject("kept", { transcripts: "full", transcriptRetentionDays: 2 })
    expect(await sweepAt(now + 1 * DAY_MS)).toBe(0)
    expect(await sweepAt(now + 3 * DAY_MS)).toBe(2)
    expect(await rawRows(fullJob)).toEqual([])
  })
})
