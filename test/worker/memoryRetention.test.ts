/**
 * Memory retention and reset on a controlled clock (the store takes every timestamp from Effect's
 * Clock): learned notes not reviewed in time are forgotten, forgotten and rejected ones purged later,
 * scratchpads and logs expire; reset deletes everything of one project and records itself. Plus the
 * API's answers to bad input: every problem named, nothing changed.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Clock, Effect } from "effect"
import { MemoryStore } from "../../src/worker/memory/MemoryStore.ts"
import { storeFingerprint, useApi } from "../support/api.ts"

setDefaultTimeout(60_000)

const api = useApi()
const DAY = 86_400_000
const T0 = Date.parse("2026-03-01T09:00:00Z")

/** A clock the test moves: every store call below runs at `at`. */
const at = (ms: number) => {
  const clock: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => ms,
    unsafeCurrentTimeNanos: () => BigInt(ms) * 1_000_000n,
    currentTimeMillis: Effect.succeed(ms),
    currentTimeNanos: Effect.succeed(BigInt(ms) * 1_000_000n),
    sleep: () => Effect.void
  }
  return <A, E>(effect: Effect.Effect<A, E, MemoryStore>) => api.run(Effect.withClock(effect, clock))
}
const store = <A, E>(f: (m: MemoryStore["Type"]) => Effect.Effect<A, E>) => Effect.flatMap(MemoryStore, f)
const agent = (jobId: string) => ({ _tag: "Agent" as const, jobId, agentId: "learner" })
const JOB = "00000000-0000-4000-8000-00000000000a"

const project = async (id: string) => {
  expect((await api.request("POST", "/api/projects", { token: api.manager.token, json: { id, name: id } })).status).toBe(201)
  expect((await api.request("PUT", `/api/projects/${id}/memory`, { token: api.manager.token, json: { enabled: true } })).status).toBe(200)
}
const trustOf = async (projectId: string) =>
  Object.fromEntries((await at(T0)(store((m) => m.list(projectId, {})))).map((n) => [n.title, n.trust]))

describe("retention", () => {
  test("learned → forgotten after 90 days without review; forgotten and rejected purged 30 days later; scratchpads after 7, logs after 180", async () => {
    await project("ret")
    const save = (title: string, ms: number) =>
      at(ms)(store((m) => m.save("ret", agent(JOB), { kind: "fact", title, body: `${title} body`, paths: [] })))
    const keep = await save("kept", T0)
    const stale = await save("stale", T0)
    const rejected = await save("rejected", T0)
    expect(rejected.created).toBe(true)
    await at(T0 + DAY)(store((m) => m.review("ret", keep.note.id, "reviewed", "admin", {})))
    await at(T0 + DAY)(store((m) => m.review("ret", rejected.note.id, "rejected", "admin", {})))
    await at(T0)(store((m) => m.writeScratchpad("ret", JOB, "plan", "replace", 32_000)))

    // Day 6: nothing due yet.
    expect(await at(T0 + 6 * DAY)(store((m) => m.sweep))).toEqual({ expired: 0, purged: 0, scratchpads: 0, logs: 0 })
    expect(await at(T0)(store((m) => m.scratchpad(JOB)))).toBe("plan")
    // Day 8: the scratchpad is gone (7 days after the run).
    expect(await at(T0 + 8 * DAY)(store((m) => m.sweep))).toEqual({ expired: 0, purged: 0, scratchpads: 1, logs: 0 })
    expect(await at(T0)(store((m) => m.scratchpad(JOB)))).toBe("")
    // Rejected at day 1 → purged after day 31, not before.
    expect(await at(T0 + 30 * DAY)(store((m) => m.sweep))).toMatchObject({ purged: 0 })
    expect(await at(T0 + 32 * DAY)(store((m) => m.sweep))).toMatchObject({ purged: 1 })
    expect(await trustOf("ret")).toEqual({ kept: "reviewed", stale: "learned" })
    // Day 89: the unreviewed note is still learned; day 90 + a bit: forgotten (by retention, logged).
    expect(await at(T0 + 89 * DAY)(store((m) => m.sweep))).toMatchObject({ expired: 0 })
    expect(await at(T0 + 90 * DAY + 1000)(store((m) => m.sweep))).toMatchObject({ expired: 1 })
    expect(await trustOf("ret")).toEqual({ kept: "reviewed", stale: "forgotten" })
    const history = await at(T0)(store((m) => m.get("ret", stale.note.id)))
    expect(history.transitions.at(-1)).toMatchObject({ from: "learned", to: "forgotten", byKind: "retention" })
    // Forgotten at day 90 → purged after day 120; the reviewed note stays.
    expect(await at(T0 + 119 * DAY)(store((m) => m.sweep))).toMatchObject({ purged: 0 })
    expect(await at(T0 + 121 * DAY)(store((m) => m.sweep))).toMatchObject({ purged: 1 })
    expect(await trustOf("ret")).toEqual({ kept: "reviewed" })

    // Logs: kept 180 days.
    const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)
    expect((await at(T0)(store((m) => m.dailyLog("ret", dayOf(T0))))).length).toBeGreaterThan(0)
    await at(T0 + 181 * DAY)(store((m) => m.sweep))
    expect(await at(T0)(store((m) => m.dailyLog("ret", dayOf(T0))))).toEqual([])
  })

  test("per-project retention settings apply", async () => {
    await project("short")
    expect(
      (
        await api.request("PUT", "/api/projects/short/memory", {
          token: api.manager.token,
          json: { enabled: true, retention: { learnedDays: 2 } }
        })
      ).status
    ).toBe(200)
    await at(T0)(store((m) => m.save("short", agent(JOB), { kind: "fact", title: "brief", body: "b", paths: [] })))
    await at(T0 + 3 * DAY)(store((m) => m.sweep))
    expect(await trustOf("short")).toEqual({ brief: "forgotten" })
  })
})

describe("reset", () => {
  test("deletes every note, revision, log line and scratchpad of the project (not another's), and records itself", async () => {
    await project("wipe")
    await project("other")
    for (const p of ["wipe", "other"]) {
      await at(T0)(store((m) => m.save(p, agent(JOB), { kind: "lesson", title: "L", body: "b", paths: [] })))
    }
    await at(T0)(store((m) => m.writeScratchpad("wipe", JOB, "plan", "replace", 32_000)))
    const refused = await api.request("POST", "/api/projects/wipe/memory/reset", { token: api.manager.token, json: { confirm: "other" } })
    expect(refused.status).toBe(400)
    expect(refused.json().error.problems).toEqual([{ path: "confirm", message: 'must be the project id "wipe"' }])
    const ok = await api.request("POST", "/api/projects/wipe/memory/reset", { token: api.manager.token, json: { confirm: "wipe" } })
    expect(ok.status).toBe(200)
    expect(ok.json()).toEqual({ reset: true, notesDeleted: 1 })
    expect(await api.sql("SELECT 1 FROM memory.note n WHERE n.project_id = 'wipe'")).toEqual([])
    expect(await api.sql("SELECT 1 FROM memory.scratchpad WHERE project_id = 'wipe'")).toEqual([])
    expect(await api.sql("SELECT kind FROM memory.log WHERE project_id = 'wipe'")).toEqual([{ kind: "memory.reset" }])
    expect((await api.sql("SELECT 1 FROM memory.note WHERE project_id = 'other'")).length).toBe(1)
  })
})

describe("bad input to the API", () => {
  test("settings, filters, reviews and log dates: every problem named at once, nothing changed", async () => {
    await project("strict")
    const [note] = await at(T0)(
      store((m) => Effect.map(m.save("strict", agent(JOB), { kind: "fact", title: "t", body: "b", paths: [] }), (r) => [r.note]))
    )
    const before = await storeFingerprint(api)
    const t = api.manager.token
    const settings = await api.request("PUT", "/api/projects/strict/memory", {
      token: t,
      json: { enabled: "yes", retention: { learnedDays: 0 } }
    })
    expect(settings.status).toBe(400)
    expect(
      settings
        .json()
        .error.problems.map((p: { path: string }) => p.path)
        .sort()
    ).toEqual(["enabled", "retention.learnedDays"])
    const filters = await api.request("GET", "/api/projects/strict/memory/notes?trust=trusted&kind=rumour", { token: t })
    expect(filters.status).toBe(400)
    expect(filters.json().error.problems.map((p: { path: string }) => p.path)).toEqual(["trust", "kind"])
    const review = await api.request("POST", `/api/projects/strict/memory/notes/${note!.id}/review`, {
      token: t,
      json: { decision: "maybe", body: "x".repeat(4001) }
    })
    expect(review.status).toBe(400)
    expect(
      review
        .json()
        .error.problems.map((p: { path: string }) => p.path)
        .sort()
    ).toEqual(["body", "decision"])
    expect((await api.request("GET", "/api/projects/strict/memory/log?date=2026-13-45", { token: t })).status).toBe(400)
    expect((await api.request("GET", "/api/projects/nope/memory", { token: t })).status).toBe(404)
    expect((await api.request("GET", "/api/projects/strict/memory/notes/not-a-uuid", { token: t })).status).toBe(404)
    expect(await storeFingerprint(api)).toBe(before)
  })

  test("edit before approving: a new revision by the person, then reviewed", async () => {
    const [note] = await api.sql<{ id: string }>("SELECT id FROM memory.note WHERE project_id = 'strict'")
    const r = await api.request("POST", `/api/projects/strict/memory/notes/${note!.id}/review`, {
      token: api.manager.token,
      json: { decision: "reviewed", body: "b, corrected" }
    })
    expect(r.status).toBe(200)
    expect(r.json().note).toMatchObject({ trust: "reviewed", body: "b, corrected" })
    const detail = (await api.request("GET", `/api/projects/strict/memory/notes/${note!.id}`, { token: api.manager.token })).json()
    expect(detail.revisions.map((v: { body: string; editedBy: string | null }) => [v.body, v.editedBy])).toEqual([
      ["b", null],
      ["b, corrected", "manager"]
    ])
  })
})
