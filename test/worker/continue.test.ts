/**
 * Continuing a job end to end (real job children, the scripted OpenAI server behind pi-ai's client): the
 * continuation's first request to the model starts with its parent's conversation byte for byte, then the
 * new task, under the same system prompt and tools; the link shows both ways; the API's refusals.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Bindings } from "../../src/providers/Bindings.ts"
import { JobStore, type JobRow } from "../../src/worker/JobStore.ts"
import { createRootDir } from "../support/jobRoots.ts"
import type { RecordedRequest, Step } from "../support/scriptedServers.ts"
import { ORIGIN, useServicesApp } from "../support/servicesHarness.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(120_000)

const h = useServicesApp()

const turn = (name: string, args: Record<string, unknown>): Step => ({ kind: "turn", toolCalls: [{ name, arguments: args }] })
const done = (text: string): Step => ({ kind: "turn", text })

type WireMessage = { role: string; content?: unknown }
const body = (r: RecordedRequest | undefined) => r?.body as { messages: Array<WireMessage>; tools?: unknown }

const portal = async (path: string, token: string, form?: Record<string, string>) => {
  const r = await h.app.handle(
    new Request(`${ORIGIN}${path}`, {
      method: form === undefined ? "GET" : "POST",
      redirect: "manual",
      headers: {
        authorization: `Bearer ${token}`,
        ...(form === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" })
      },
      ...(form === undefined ? {} : { body: new URLSearchParams(form).toString() })
    })
  )
  return { status: r.status, location: r.headers.get("location"), text: await r.text() }
}

const settled = (id: string) =>
  until(
    async () => {
      const job = await h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
      return (job.status === "completed" || job.status === "failed") && job
    },
    { what: `job ${id} to settle`, timeoutMs: 120_000, everyMs: 50 }
  )

describe("continue a job", () => {
  let parent: JobRow | undefined

  test("the continuation's first request starts with the parent's messages byte for byte, then the new task", async () => {
    await h.project("cont")
    const kept = await h.api("PUT", "/api/projects/cont", { name: "cont", transcripts: "full" })
    expect(kept.status).toBe(200)
    const server = await h.agent("follow", { tools: ["read"] }, [
      turn("read", { path: "src/a.txt" }),
      done("The file says hello."),
      done("Nothing else: one line."),
      done("Portal follow-up.")
    ])
    const first = await h.runJob("follow", "cont", "Read a.txt and say what it holds.")
    expect(first.job.status).toBe("completed")
    parent = first.job
    expect(server.requests.length).toBe(2)

    const r = await h.api("POST", `/api/jobs/${first.job.id}/continue`, { task: "Does it hold anything else?" })
    expect(r.status).toBe(201)
    const queued = r.json<{ job: JobRow }>().job
    expect(queued.parentJobId).toBe(first.job.id)
    expect(queued.agentVersionPin).toBe(Number(first.job.agentVersion))
    expect(queued.workspace).toEqual(first.job.workspace)
    const second = await settled(queued.id)
    expect(second.status).toBe("completed")
    expect(second.summary).toBe("Nothing else: one line.")
    expect(second.model).toBe(first.job.model)
    expect(server.requests.length).toBe(3)

    // Job 1's last request held its whole conversation but the final answer; job 2's first extends it.
    const before = body(server.requests[1])
    const after = body(server.requests[2])
    expect(JSON.stringify(after.messages.slice(0, before.messages.length))).toBe(JSON.stringify(before.messages))
    const rest = after.messages.slice(before.messages.length)
    expect(rest.map((m) => m.role)).toEqual(["assistant", "user"])
    expect(JSON.stringify(rest[0]?.content)).toContain("The file says hello.")
    expect(JSON.stringify(rest[1]?.content)).toContain("Does it hold anything else?")
    // The same prefix: the provider's prompt cache applies.
    expect(JSON.stringify(after.tools)).toBe(JSON.stringify(before.tools))

    // The link, both ways.
    const shownParent = (await h.api("GET", `/api/jobs/${first.job.id}`)).json<{ job: { continuations: Array<string> } }>()
    expect(shownParent.job.continuations).toEqual([queued.id])
    const shownChild = (await h.api("GET", `/api/jobs/${queued.id}`)).json<{ job: { parentJobId: string; continuations: Array<string> } }>()
    expect(shownChild.job).toMatchObject({ parentJobId: first.job.id, continuations: [] })
  })

  test("refusals: 400 naming the field, 404 unknown job, 409 without a transcript, unfinished or on another model, 403 without agents.manage", async () => {
    const id = parent?.id ?? ""
    const missing = await h.api("POST", `/api/jobs/${id}/continue`, {})
    expect(missing.status).toBe(400)
    expect(missing.json<{ error: { problems: Array<{ path: string }> } }>().error.problems.map((p) => p.path)).toEqual(["task"])
    const extra = await h.api("POST", `/api/jobs/${id}/continue`, { task: "x", agent: "other" })
    expect(extra.status).toBe(400)
    expect(extra.text).toContain("agent")
    expect((await h.api("POST", `/api/jobs/${id}/continue`, { task: "" })).status).toBe(400)

    expect((await h.api("POST", `/api/jobs/${crypto.randomUUID()}/continue`, { task: "x" })).status).toBe(404)

    await h.project("unkept")
    await h.agent("plain", { tools: ["read"] }, [done("ok")])
    const untranscribed = await h.runJob("plain", "unkept")
    expect(untranscribed.job.status).toBe("completed")
    const none = await h.api("POST", `/api/jobs/${untranscribed.job.id}/continue`, { task: "x" })
    expect(none.status).toBe(409)
    expect(none.text).toContain("has no transcript")

    // The agent's binding moved to another model: the continuation would not run on the parent's.
    const rebind = (providerId: string) =>
      h.rt.runPromise(Effect.flatMap(Bindings, (b) => b.set("follow", "", { providerId, modelId: "m" }, "test")))
    await rebind("gw2")
    const moved = await h.api("POST", `/api/jobs/${id}/continue`, { task: "x" })
    expect(moved.status).toBe(409)
    expect(moved.text).toContain("binding now names gw2/m")
    await rebind("gw1")

    const root = createRootDir("kintsugi-continue-")
    // Queued and claimed by a worker of the test's in one transaction: the runtime's own workers never see it queued.
    const running = await h.rt.runPromise(
      Effect.gen(function* () {
        const store = yield* JobStore
        const sql = yield* SqlClient
        return yield* Effect.orDie(
          sql.withTransaction(
            Effect.gen(function* () {
              const job = yield* store.enqueue(
                {
                  project: "cont",
                  agent: "follow",
                  task: "t",
                  workspace: { root, readOnly: [root], outDir: root },
                  limits: { timeoutSec: 60 }
                },
                "test"
              )
              yield* store.claim("test-worker", 60_000, job.id)
              return job.id
            })
          )
        )
      })
    )
    expect((await h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(running)))).workerId).toBe("test-worker")
    const unfinished = await h.api("POST", `/api/jobs/${running}/continue`, { task: "x" })
    expect(unfinished.status).toBe(409)
    expect(unfinished.text).toContain("has not finished")

    const viewer = await h.user("viewer", [])
    const refused = await h.api("POST", `/api/jobs/${id}/continue`, { task: "x" }, viewer)
    expect(refused.status).toBe(403)
    // Nothing of the refused requests was queued.
    const shown = (await h.api("GET", `/api/jobs/${id}`)).json<{ job: { continuations: Array<string> } }>()
    expect(shown.job.continuations.length).toBe(1)
  })

  test("portal: the job page's Continue form (finished, with a transcript, allowed to run) starts the next job; the link shows both ways", async () => {
    const id = parent?.id ?? ""
    const page = await portal(`/jobs/${id}`, h.token())
    expect(page.status).toBe(200)
    expect(page.text).toContain('id="continue-form"')
    expect(page.text).toContain("Continued by")
    const viewer = await h.user("portal-viewer", [])
    expect((await portal(`/jobs/${id}`, viewer)).text).not.toContain('id="continue-form"')
    const posted = await portal(`/jobs/${id}/continue`, h.token(), { task: "One more question." })
    expect(posted.status).toBeGreaterThanOrEqual(300)
    expect(posted.status).toBeLessThan(400)
    const childId = posted.location?.split("/").pop() ?? ""
    const child = await settled(childId)
    expect(child).toMatchObject({ parentJobId: id, status: "completed", summary: "Portal follow-up." })
    // The live page's end frame brings the Continue card and a fresh transcript panel: no reload needed.
    const end = await portal(`/jobs/${childId}/stream?after=-1`, h.token())
    const final = end.text.split("event: final\n")[1] ?? ""
    expect(final).toContain('id="job-continue" aria-labelledby="continue-title" hx-swap-oob="true"')
    expect(final).toContain(`id="transcript" hx-get="/jobs/${childId}/transcript" hx-trigger="load" hx-swap="outerHTML" hx-swap-oob="true"`)
    const childPage = await portal(`/jobs/${childId}`, h.token())
    expect(childPage.text).toContain('id="job-parent"')
    expect(childPage.text).toContain(`/jobs/${id}`)
    const empty = await portal(`/jobs/${id}/continue`, h.token(), { task: "" })
    expect(empty.status).toBe(400)
    // Without a transcript there is nothing to continue from: no form.
    const plain = (await h.api("GET", "/api/jobs?agent=plain")).json<{ jobs: Array<{ id: string }> }>().jobs[0]?.id ?? ""
    expect((await portal(`/jobs/${plain}`, h.token())).text).not.toContain('id="continue-form"')
  })
})
