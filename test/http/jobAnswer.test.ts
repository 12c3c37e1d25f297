/**
 * A completed job's typed answer, read from its stored `job.completed` event: `GET /api/jobs/:id`
 * shows it as `job.answer`, the job page as an Answer card (JSON, escaped); a job without one shows
 * neither. The agent's Job definition tab names the answer schema.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { Access } from "../../src/access/Access.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { JobStore, type JobInput } from "../../src/worker/JobStore.ts"
import { useApp } from "../support/appHarness.ts"

setDefaultTimeout(60_000)

const h = useApp()

const INPUT: JobInput = {
  agent: "codebase-inventory",
  task: "t",
  workspace: { root: "/r", readOnly: ["/r/src"], outDir: "/r/out" },
  limits: { timeoutSec: 60 }
}
const at = () => new Date().toISOString()
const run = <A>(effect: Effect.Effect<A, unknown, JobStore>) => h.rt.runPromise(effect as Effect.Effect<A, never, JobStore>)

/** A job settled completed after these terminal fields (`answer` absent: the agent declares none). */
const createCompletedJob = async (completed: { readonly summary: string; readonly answer?: unknown }) => {
  const job = await run(Effect.flatMap(JobStore, (s) => s.enqueue(INPUT, "admin")))
  await run(Effect.flatMap(JobStore, (s) => s.claim("test-worker", 60_000, job.id)))
  const events: Array<JobEvent> = [
    { type: "job.started", seq: 0, at: at(), runtimeVersion: "t", agentId: "codebase-inventory", agentVersion: 1, metadata: {} },
    { type: "job.completed", seq: 1, at: at(), ...completed }
  ]
  for (const e of events) await run(Effect.flatMap(JobStore, (s) => s.appendEvent(job.id, e)))
  await run(Effect.flatMap(JobStore, (s) => s.settle(job.id, { status: "completed", summary: completed.summary }, "no outputs")))
  return job.id
}

/** A portal page's HTML, signed in as the admin. */
const portal = async (path: string): Promise<string> => {
  const session = await h.rt.runPromise(Effect.flatMap(Access, (a) => a.signIn("admin", "a long test password")))
  const r = await h.app.handle(new Request(`http://localhost${path}`, { headers: { cookie: `__Host-kintsugi-session=${session.token}` } }))
  expect(r.status).toBe(200)
  return r.text()
}
const page = (id: string) => portal(`/jobs/${id}`)

describe("a job's typed answer", () => {
  const answer = { files: 2, languages: ["<b>ts</b>"], notes: null }

  test("GET /api/jobs/:id: job.answer is the job.completed event's answer", async () => {
    const id = await createCompletedJob({ summary: JSON.stringify(answer), answer })
    const r = await h.api("GET", `/api/jobs/${id}`)
    expect(r.status).toBe(200)
    expect(r.json<{ job: { status: string; answer: unknown } }>().job).toMatchObject({ status: "completed", answer })
  })

  test("the job page shows it as indented JSON, escaped", async () => {
    const id = await createCompletedJob({ summary: "done", answer })
    const html = await page(id)
    expect(html).toContain('<h2 id="answer-title">Answer</h2>')
    expect(html).toContain("&lt;b&gt;ts&lt;/b&gt;")
    expect(html).not.toContain("<b>ts</b>")
    expect(html).toContain("&quot;files&quot;: 2")
  })

  test("a job without one: no answer field, no Answer card", async () => {
    const id = await createCompletedJob({ summary: "free text" })
    const r = await h.api("GET", `/api/jobs/${id}`)
    expect("answer" in r.json<{ job: object }>().job).toBe(false)
    expect(await page(id)).not.toContain("answer-title")
  })
})

test("the Job definition tab names a built-in's answer schema and shows it", async () => {
  const html = await portal("/agents/risk-quality/definition")
  expect(/<dd id="definition-answer">[\s\S]*?<\/dd>/.exec(html)?.[0]).toContain(
    "JSON valid against <code>schemas/answer.schema.json</code>"
  )
  expect(html).toContain("&quot;risksBySeverity&quot;")
})

test("a custom agent's answer is kept by its stored versions and reaches its job definition", async () => {
  const schema = JSON.stringify({ type: "object", required: ["ok"], properties: { ok: { type: "boolean" } } })
  const md = (answer: string) =>
    `---\nname: typed-bot\nversion: 1\ndescription: Answers in JSON.\ntools: [read]\n${answer}metadata:\n  audience: runtime\n---\nAnswer.\n`
  const files = (answer: string) => ({
    files: [
      { path: "typed-bot.md", content: md(answer) },
      { path: "schemas/ok.json", content: schema }
    ]
  })
  expect((await h.api("POST", "/api/admin/agents", files("answer: { schema: schemas/ok.json }\n"))).status).toBe(201)
  const definition = (await h.api("GET", "/api/admin/agents/typed-bot/definition")).json<{ definition: { answer?: unknown } }>()
  expect(definition.definition.answer).toEqual({ schema: "schemas/ok.json", schemaText: schema })
  // A second version without it: the first, an immutable row, still has it.
  expect((await h.api("PUT", "/api/admin/agents/typed-bot", files(""))).status).toBe(200)
  expect("answer" in (await h.api("GET", "/api/admin/agents/typed-bot/definition")).json<{ definition: object }>().definition).toBe(false)
  const first = (await h.api("GET", "/api/admin/agents/typed-bot/versions/1")).json<{ view: { package: { answer?: unknown } } }>()
  expect(first.view.package.answer).toEqual({ schema: "schemas/ok.json" })
  // A schema that is not in the package: 400 naming the field.
  const missing = await h.api("PUT", "/api/admin/agents/typed-bot", files("answer: { schema: schemas/none.json }\n"))
  expect(missing.status).toBe(400)
  expect(missing.text).toContain("typed-bot.md#answer.schema")
})
