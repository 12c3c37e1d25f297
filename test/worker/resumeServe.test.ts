/**
 * A job resumed after its serve process was SIGKILLed: a 6-turn job of a project with `transcripts:
 * full` runs on serve A; during its 4th model call A is killed; serve B (on the same PostgreSQL) finds
 * the lease expired, puts the job back in the queue and resumes it from its transcript. It completes
 * once; its turns, cost and tool calls add up once; the model is not asked turns 1–3 again and none of
 * their tool calls runs again; its events are one gap-free sequence; the job row records the resume.
 * PostgreSQL only (two processes on one database; the embedded database is one process).
 */
import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { TranscriptStore } from "../../src/worker/transcripts/TranscriptStore.ts"
import { createDeployment, serveProcesses, useCleanups } from "../support/deployment.ts"
import { descendants } from "../support/processes.ts"
import type { RecordedRequest, Step } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

const SERVER = process.env["DATABASE_URL"] ?? ""
const AGENT = "resume-probe"
const TOTAL_MS = 240_000
const USAGE = { input: 1000, output: 100 }

const cleanups = useCleanups(60_000)

const read = (n: number): Step => ({
  kind: "turn",
  toolCalls: [{ id: `call-${n}`, name: "read", arguments: { path: `src/part${n}.ts` } }],
  usage: USAGE
})

/** The chat messages of a recorded request, without the system prompt. */
const conversation = (r: RecordedRequest | undefined) =>
  ((r?.body as { messages?: Array<{ role: string }> } | undefined)?.messages ?? []).filter(
    (m) => m.role !== "system" && m.role !== "developer"
  )

describe("resume after a lost worker", () => {
  test.skipIf(SERVER === "")(
    `a 6-turn job, serve SIGKILLed during turn 4: another serve resumes it from its transcript and it completes, everything counted once` +
      (SERVER === "" ? " (skipped: needs DATABASE_URL — two serve processes on one database)" : ""),
    async () => {
      // Turns 1–3 read part1–3; the 4th call never answers (serve A is killed while it waits); asked
      // again on serve B, turn 4 reads part4, turn 5 part5, turn 6 answers.
      const steps: Array<Step> = [
        read(1),
        read(2),
        read(3),
        { kind: "stall" },
        read(4),
        read(5),
        { kind: "turn", text: "All five parts read.", usage: USAGE }
      ]
      const deployment = await createDeployment({
        server: SERVER,
        prefix: "kintsugi_resume",
        agent: AGENT,
        steps,
        apiKey: "sk-resume",
        tools: ["read"],
        cleanups
      })
      const { rt, model, token, root } = deployment
      for (let n = 1; n <= 5; n++) writeFileSync(join(root, "src", `part${n}.ts`), `export const part${n} = ${n}\n`)
      await rt.runPromise(Effect.flatMap(Projects, (p) => p.create({ id: "resume", name: "resume", transcripts: "full" })))

      const { all, start } = serveProcesses(deployment, cleanups)
      const serve = async (name: string) => {
        const served = await start(name, { env: { KINTSUGI_WORKERS: "1", KINTSUGI_JOB_LEASE: "6", KINTSUGI_JOB_HEARTBEAT: "1" } })
        expect(served.port).toBeGreaterThan(0)
        return served
      }

      const a = await serve("a")
      const posted = await fetch(`http://127.0.0.1:${a.port}/api/jobs`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          agent: AGENT,
          project: "resume",
          task: "Read the five parts, one per turn.",
          workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
          limits: { timeoutSec: 180, maxTurns: 6 }
        })
      })
      expect(posted.status).toBe(201)
      const id = ((await posted.json()) as { job: { id: string } }).job.id

      // Serve A is in turn 4: its model call is waiting on the stalled 4th request.
      await until(() => model.requests.length >= 4, { what: "the 4th model request", timeoutMs: 120_000, everyMs: 50 })
      for (const pid of descendants(a.proc.pid)) all.add(pid)
      a.proc.kill("SIGKILL")
      await a.proc.exited

      const b = await serve("b")
      expect(b.port).toBeGreaterThan(0)
      const job = await until(
        async () => {
          const j = await rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
          return (j.status === "completed" || j.status === "failed") && j
        },
        { what: "the job to settle on serve B", timeoutMs: TOTAL_MS - 60_000, everyMs: 100 }
      )
      expect({ status: job.status, message: job.message }).toEqual({ status: "completed", message: null })
      expect(job.summary).toBe("All five parts read.")
      // The row records the resume: after turn 3, serve A's worker lost; B runs it now.
      expect(job.resumes.length).toBe(1)
      expect(job.resumes[0]?.fromTurn).toBe(3)
      expect(job.resumes[0]?.lostWorker).toContain(`:${a.proc.pid}:`)
      expect(job.workerId).toContain(`:${b.proc.pid}:`)

      // The model: 7 requests (turns 1–3, the stalled 4th, turn 4 again, 5, 6); turn 4 asked again with
      // exactly the conversation it was first sent (turns 1–3 and their tool results, from the transcript).
      expect(model.requests.length).toBe(7)
      expect(conversation(model.requests[4])).toEqual(conversation(model.requests[3]))
      const lengths = model.requests.map((r) => conversation(r).length)
      // Each request one answer and one tool result longer than the one before, but the repeated 4th:
      // no turn of 1–3 was asked again.
      expect(lengths).toEqual([1, 3, 5, 7, 7, 9, 11])

      const events = await rt.runPromise(Effect.flatMap(JobStore, (s) => s.events(id, -1)))
      // One gap-free sequence across both runs, one start, one end.
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
      expect(events.filter((e) => e.type === "job.started").length).toBe(1)
      expect(events.filter((e) => e.type === "job.completed" || e.type === "job.failed").map((e) => e.type)).toEqual(["job.completed"])
      // Each part read once: no tool call of turns 1–3 ran again.
      const calls = events.flatMap((e: JobEvent) => (e.type === "tool.call" ? [String((e.input as { path?: string }).path)] : []))
      expect(calls).toEqual(["src/part1.ts", "src/part2.ts", "src/part3.ts", "src/part4.ts", "src/part5.ts"])
      expect(events.filter((e) => e.type === "tool.result").length).toBe(5)
      // Turns and cost add up once: 6 turns, each charged once (serve A's total after turn 3, doubled).
      const usage = events.filter((e): e is Extract<JobEvent, { type: "usage" }> => e.type === "usage")
      const last = usage[usage.length - 1]
      const afterThree = usage.find((u) => u.turns === 3)
      expect(last?.turns).toBe(6)
      expect(last?.inputTokens).toBe(6 * USAGE.input)
      expect(last?.outputTokens).toBe(6 * USAGE.output)
      expect(afterThree?.costUsd).toBeGreaterThan(0)
      expect(last?.costUsd).toBeCloseTo(2 * (afterThree?.costUsd ?? 0), 10)
      expect(Number(job.costUsd)).toBeCloseTo(last?.costUsd ?? -1, 10)
      // The transcript: six answered turns, the re-asked 4th among them.
      const turns = await rt.runPromise(Effect.flatMap(TranscriptStore, (s) => s.read(id)))
      expect(turns.map((t) => [t.turn, t.record.answer !== undefined])).toEqual([1, 2, 3, 4, 5, 6].map((n) => [n, true]))
      const rows = await rt.runPromise(
        Effect.flatMap(SqlClient, (sql) =>
          Effect.orDie(sql<{ n: number }>`SELECT count(*)::int AS n FROM runtime.transcript_turn WHERE job_id = ${id} AND answered`)
        )
      )
      expect(rows[0]?.n).toBe(6)
    },
    TOTAL_MS
  )
})
