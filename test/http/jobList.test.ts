/**
 * GET /api/jobs lists a short row per job (who, what, where, when, how it ended, what it cost) while
 * GET /api/jobs/:id keeps the whole job: a page of 50 settled jobs with long tasks, messages and
 * summaries carries none of the long parts.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { bindAgent, useApi, type JsonObject } from "../support/api.ts"
import { createRootDir } from "../support/jobRoots.ts"

setDefaultTimeout(60_000)

const api = useApi()

const LIST_FIELDS = [
  "agent",
  "agentVersion",
  "costUsd",
  "createdAt",
  "createdBy",
  "finishedAt",
  "id",
  "inputTokens",
  "message",
  "model",
  "outputTokens",
  "project",
  "reason",
  "startedAt",
  "status",
  "task",
  "turns"
]

describe("GET /api/jobs", () => {
  test("a page of 50 holds the short row of each job; the job itself is whole", async () => {
    await bindAgent(api, "codebase-inventory")
    const root = createRootDir("list-")
    mkdirSync(join(root, "src"))
    mkdirSync(join(root, "out"))
    const task = `Inventory the code. ${"Every detail matters. ".repeat(200)}`
    for (let i = 0; i < 50; i++) {
      const r = await api.request("POST", "/api/jobs", {
        token: api.manager.token,
        json: {
          agent: "codebase-inventory",
          task,
          workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
          limits: { timeoutSec: 60 },
          metadata: { ticket: "x".repeat(2000) }
        }
      })
      expect(r.status).toBe(201)
    }
    const usage = JSON.stringify({
      type: "usage",
      seq: 9,
      at: "2026-12-01T00:00:00.000Z",
      model: "gw/m",
      inputTokens: 1200,
      outputTokens: 340,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0.25,
      turns: 3,
      compactions: 0,
      contextPeakPercent: 12,
      compactionSummaries: 0
    })
    // Settled as a worker would: half completed with a long summary and outputs, half failed with a long message.
    await api.sql(`UPDATE runtime.job SET status = 'completed', started_at = now(), finished_at = now(), model = 'gw/m',
      agent_version = '1', summary = repeat('s', 20000), outputs = repeat('o', 5000), usage = '${usage}'::jsonb, cost_usd = 0.25
      WHERE id IN (SELECT id FROM runtime.job ORDER BY created_at LIMIT 25)`)
    await api.sql(`UPDATE runtime.job SET status = 'failed', reason = 'timeout', message = repeat('m', 5000),
      started_at = now(), finished_at = now() WHERE status = 'queued'`)

    const page = await api.request("GET", "/api/jobs?limit=50", { token: api.manager.token })
    expect(page.status).toBe(200)
    const { jobs, nextCursor } = page.json<{ jobs: Array<JsonObject>; nextCursor: string | null }>()
    expect(jobs.length).toBe(50)
    expect(typeof nextCursor).toBe("string")
    for (const j of jobs) {
      expect(Object.keys(j).sort()).toEqual(LIST_FIELDS)
      expect(j["task"]).toBe(task.slice(0, 120))
      expect(j["agent"]).toBe("codebase-inventory")
      if (j["status"] === "completed") {
        expect(j).toMatchObject({ reason: null, message: null, model: "gw/m", agentVersion: "1", costUsd: 0.25, turns: 3 })
        expect(j).toMatchObject({ inputTokens: 1200, outputTokens: 340 })
      } else {
        expect(j).toMatchObject({ status: "failed", reason: "timeout", message: "m".repeat(160), turns: null, costUsd: null })
      }
    }
    expect(jobs.filter((j) => j["status"] === "completed").length).toBe(25)

    // The job itself: the whole task, metadata, workspace, summary and usage.
    const done = jobs.find((j) => j["status"] === "completed")
    const one = (await api.request("GET", `/api/jobs/${done?.["id"]}`, { token: api.manager.token })).json<{ job: JsonObject }>().job
    expect(one["task"]).toBe(task)
    expect(one["summary"]).toBe("s".repeat(20000))
    expect(one["metadata"]).toEqual({ ticket: "x".repeat(2000) })
    expect(one["workspace"]).toMatchObject({ root })
    expect(one["usage"]).toMatchObject({ turns: 3, inputTokens: 1200 })
  })
})
