/**
 * Project memory end to end, through the API, with scripted models on 127.0.0.1 and real job children
 * calling the worker's services channel: save, search by another agent, an independent reviewer that
 * sees a note only once a person reviewed it, forget and recover, the daily log, the scratchpad across
 * a compaction; and the boundaries: projects never see each other's notes, a project without memory
 * gets no tools, bad input changes nothing.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import type { RecordedRequest, Step } from "../support/scriptedServers.ts"
import { useServicesApp } from "../support/servicesHarness.ts"
import { createWindowedModel } from "../support/windowedModel.ts"

setDefaultTimeout(120_000)

const h = useServicesApp()

/** Everything the model was sent in one request (tool results included), as text. */
const sent = (r: RecordedRequest | undefined): string => JSON.stringify(r?.body ?? "")
/** The ids of notes in the last tool result the model got. */
const noteIds = (r: RecordedRequest): ReadonlyArray<string> => [...sent(r).matchAll(/\[([0-9a-f-]{36})\]/g)].map((m) => m[1] ?? "")
const turn = (name: string, args: Record<string, unknown>): Step => ({ kind: "turn", toolCalls: [{ name, arguments: args }] })
const done = (text = "Done."): Step => ({ kind: "turn", text })

const enable = async (project: string, enabled = true) => {
  await h.project(project)
  const r = await h.api("PUT", `/api/projects/${project}/memory`, { enabled })
  expect(r.status).toBe(200)
}
const notes = async (project: string, query = "") =>
  (await h.api("GET", `/api/projects/${project}/memory/notes${query}`)).json<{
    notes: Array<{ id: string; trust: string; title: string; body: string }>
  }>().notes

describe("project memory through jobs", () => {
  test("save → another agent finds it → a reviewer sees it only once reviewed → forget and recover → the day's log lists it all", async () => {
    await enable("alpha")
    const lesson = { kind: "lesson", title: "Retry policy", body: "Retries use exponential backoff with jitter; never retry a 4xx." }
    const learner = await h.agent("learner", { tools: ["read", "memory"] }, [turn("memory_save", lesson), done("Saved the lesson.")])
    const first = await h.runJob("learner", "alpha")
    expect(first.job.status).toBe("completed")
    expect(first.events.find((e) => e.type === "job.started")).toMatchObject({
      tools: [
        "read",
        "memory_search",
        "memory_save",
        "memory_forget",
        "memory_recover",
        "memory_daily_log",
        "scratchpad_read",
        "scratchpad_write"
      ]
    })
    expect(sent(learner.requests[1])).toContain("trust: learned")
    const saved = await notes("alpha")
    expect(saved).toMatchObject([{ title: "Retry policy", trust: "learned", body: lesson.body }])
    const noteId = saved[0]!.id

    // Another agent of the project finds it.
    const helper = await h.agent("helper", { tools: ["memory_search", "memory_daily_log"] }, [
      turn("memory_search", { query: "backoff for retries" }),
      turn("memory_daily_log", {}),
      done()
    ])
    expect((await h.runJob("helper", "alpha")).job.status).toBe("completed")
    expect(sent(helper.requests[1])).toContain(`[${noteId}] lesson · learned · Retry policy`)
    expect(sent(helper.requests[1])).toContain("exponential backoff")
    expect(sent(helper.requests[2])).toContain("note.saved")

    // An independent reviewer: not until a person reviewed it; its own run's note it sees at once.
    const auditorSteps = (): ReadonlyArray<Step> => [
      turn("memory_save", { kind: "fact", title: "Audit 1", body: "The auditor's own finding about backoff." }),
      turn("memory_search", { query: "backoff" }),
      done()
    ]
    const auditor = await h.agent("auditor", { tools: ["memory"], memoryRole: "reviewer" }, [
      ...auditorSteps(),
      turn("memory_search", { query: "backoff" }),
      done()
    ])
    expect((await h.runJob("auditor", "alpha")).job.status).toBe("completed")
    const beforeReview = sent(auditor.requests[2])
    expect(beforeReview).toContain("Audit 1")
    expect(beforeReview).not.toContain("Retry policy")
    const review = await h.api("POST", `/api/projects/alpha/memory/notes/${noteId}/review`, {
      decision: "reviewed",
      note: "Checked against the code."
    })
    expect(review.status).toBe(200)
    expect((await h.runJob("auditor", "alpha")).job.status).toBe("completed")
    const afterReview = sent(auditor.requests[4])
    expect(afterReview).toContain(`[${noteId}] lesson · reviewed · Retry policy`)
    // The first run's own note is another run's learned note now: not visible.
    expect(afterReview).not.toContain("Audit 1")

    // Job 3 forgets it; job 4 finds it with memory_recover and brings it back.
    const janitor = await h.agent("janitor", { tools: ["memory"] }, [
      turn("memory_search", { query: "retry policy" }),
      { kind: "fn", respond: (r) => turn("memory_forget", { id: noteIds(r)[0], reason: "Superseded, I think." }) },
      done(),
      turn("memory_recover", { query: "retry" }),
      { kind: "fn", respond: (r) => turn("memory_recover", { id: noteIds(r)[0] }) },
      turn("memory_search", { query: "retry" }),
      done()
    ])
    expect((await h.runJob("janitor", "alpha")).job.status).toBe("completed")
    expect((await notes("alpha", "?trust=forgotten")).map((n) => n.id)).toEqual([noteId])
    expect((await h.runJob("janitor", "alpha")).job.status).toBe("completed")
    expect(sent(janitor.requests[4])).toContain(`[${noteId}] lesson · forgotten · Retry policy`)
    expect(sent(janitor.requests[5])).toContain(`Recovered note ${noteId}`)
    expect(sent(janitor.requests[6])).toContain(`[${noteId}] lesson · learned · Retry policy`)

    // The note's history: every transition with who, from and to.
    const detail = (await h.api("GET", `/api/projects/alpha/memory/notes/${noteId}`)).json<{
      transitions: Array<{ from: string | null; to: string; byKind: string; byName: string }>
      revisions: Array<unknown>
    }>()
    expect(detail.transitions.map((t) => `${t.from}→${t.to} by ${t.byKind} ${t.byName}`)).toEqual([
      "null→learned by agent learner",
      "learned→reviewed by person admin",
      "reviewed→forgotten by agent janitor",
      "forgotten→learned by agent janitor"
    ])
    expect(detail.revisions.length).toBe(1)

    // The day's log lists all of it.
    const log = (await h.api("GET", "/api/projects/alpha/memory/log")).json<{
      entries: Array<{ kind: string; agentId: string | null; summary: string }>
    }>()
    const kinds = log.entries.map((e) => e.kind)
    for (const k of ["job.started", "job.finished", "note.saved", "note.reviewed", "note.forgotten", "note.recovered"])
      expect(kinds).toContain(k)
    expect(log.entries.filter((e) => e.kind === "job.finished").map((e) => e.agentId)).toEqual([
      "learner",
      "helper",
      "auditor",
      "auditor",
      "janitor",
      "janitor"
    ])
  })

  test("the scratchpad survives a compaction inside one job and is gone for the next job", async () => {
    await enable("scratch")
    const filler = (n: number) => `${n}:${"lorem ipsum dolor ".repeat(400)}`
    const w = createWindowedModel(
      {
        api: "openai-completions",
        window: 6000,
        turn: (n) =>
          n === 1
            ? { toolCalls: [{ name: "scratchpad_write", arguments: { content: "PLAN: check the retry code", mode: "replace" } }] }
            : n <= 4
              ? { toolCalls: [{ name: "scratchpad_write", arguments: { content: filler(n), mode: "append" } }] }
              : n === 5
                ? { toolCalls: [{ name: "scratchpad_read", arguments: {} }] }
                : { text: "Done." }
      },
      40
    )
    const planner = await h.agent("planner", { tools: ["scratchpad_read", "scratchpad_write"], contextWindow: 6000 }, w.steps)
    const job = await h.runJob("planner", "scratch")
    expect(job.job.status).toBe("completed")
    expect(w.calls.some((c) => c.kind === "summary")).toBe(true)
    expect(job.events.some((e) => e.type === "span" && e.name === "kintsugi.compaction")).toBe(true)
    const turns = w.calls.filter((c) => c.kind === "turn")
    // The read after the compaction still has the plan written before it.
    expect(sent(turns[5]?.request)).toContain("PLAN: check the retry code")
    // The next job of the same agent starts with an empty scratchpad.
    const next = await h.agent("planner2", { tools: ["scratchpad_read"] }, [turn("scratchpad_read", {}), done()])
    expect((await h.runJob("planner2", "scratch")).job.status).toBe("completed")
    expect(sent(next.requests[1])).toContain("The scratchpad is empty.")
    expect(planner.requests.length).toBeGreaterThan(0)
  })

  test("project A's job cannot read or change project B's notes", async () => {
    await enable("beta")
    const [alphaNote] = await notes("alpha", "?q=retry")
    expect(alphaNote).toBeDefined()
    const snoop = await h.agent("snoop", { tools: ["memory"] }, [
      turn("memory_search", { query: "retry backoff policy" }),
      turn("memory_forget", { id: alphaNote!.id, reason: "sabotage" }),
      turn("memory_recover", { id: alphaNote!.id }),
      done()
    ])
    expect((await h.runJob("snoop", "beta")).job.status).toBe("completed")
    expect(sent(snoop.requests[1])).toContain("No notes match.")
    expect(sent(snoop.requests[2])).toContain(`no note \\"${alphaNote!.id}\\" in this project's memory`)
    expect(sent(snoop.requests[3])).toContain(`no note \\"${alphaNote!.id}\\" in this project's memory`)
    expect((await notes("alpha", "?q=retry"))[0]).toMatchObject({ id: alphaNote!.id, trust: alphaNote!.trust })
  })

  test("a project without memory, or no project: no memory tools, no <research-tools> block", async () => {
    await h.project("nomem")
    const steps = (): ReadonlyArray<Step> => [turn("memory_save", { kind: "fact", title: "x", body: "y" }), done()]
    const plain = await h.agent("plain", { tools: ["read", "memory"] }, [...steps(), ...steps()])
    for (const project of ["nomem", undefined]) {
      const { events } = await h.runJob("plain", project)
      expect(events.find((e) => e.type === "job.started")).toMatchObject({ tools: ["read"] })
      expect(events.find((e) => e.type === "tool.call")).toMatchObject({ tool: "memory_save", allowed: false })
    }
    for (const r of plain.requests) {
      expect(sent(r)).not.toContain("<research-tools>")
      expect(JSON.stringify((r.body as { tools?: unknown }).tools ?? [])).not.toContain("memory_")
    }
    expect(await notes("nomem")).toEqual([])
  })

  test("bad input from a job (unknown kind, a body over 4,000 characters) is a clear tool error and changes nothing", async () => {
    const before = await notes("alpha")
    const clumsy = await h.agent("clumsy", { tools: ["memory_save"] }, [
      turn("memory_save", { kind: "rumour", title: "t", body: "b" }),
      turn("memory_save", { kind: "fact", title: "Long", body: "x".repeat(4001) }),
      done()
    ])
    const { events } = await h.runJob("clumsy", "alpha")
    expect(events.filter((e) => e.type === "tool.result").map((e) => (e as { success: boolean }).success)).toEqual([false, false])
    expect(sent(clumsy.requests[1])).toContain("kind: must be one of fact, lesson, decision, navigation")
    expect(sent(clumsy.requests[2])).toContain("body: body must be at most 4,000 characters")
    expect(await notes("alpha")).toEqual(before)
  })
})
