/**
 * Eval runs end to end (docs/evals.md): evals run as real jobs (queue, worker, job child, kernel)
 * against a scripted model server through the agent's binding, pinned to the evaluated version, in
 * workspaces made from the fixture and removed afterwards; results per version; the `gate: evals`
 * promotion and refusal; the 4xx answers.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { mkdirSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { finishPassedGate, type EvalRun } from "../../src/agents/evalRepo.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { ABANDONED_AFTER_SEC, Evals } from "../../src/worker/evals/Evals.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { useApp } from "../support/appHarness.ts"
import { MODEL_PRICES } from "../support/jobChild.ts"
import { createRootDir, testJobRoot } from "../support/jobRoots.ts"
import { startOpenAIServer, type ScriptedServer, type Step } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(120_000)

const h = useApp({ workers: 1 })
let server: ScriptedServer | undefined

const agentFile = (body: string, extra = "") => ({
  path: "shop-bot.md",
  content: `---\nname: shop-bot\nversion: 1\ndescription: Finds orders.\ntools: [read, write]\n${extra}---\n${body}\n`
})
const EVALS = [
  {
    path: "evals/finds-orders.md",
    content: `---
description: Finds the order code and cites it.
fixture: shop
expect:
  files: [report.md]
  grounding: clean
  contains:
    - { file: report.md, text: "src/orders.ts" }
---
Find where orders are stored and write report.md.
`
  },
  {
    path: "evals/no-todo.md",
    content: `---
description: Leaves no TODO behind.
fixture: shop
expect:
  not-contains:
    - { text: TODO }
  max-cost-usd: 0.5
---
Summarise the shop.
`
  },
  {
    path: "evals/fixtures/shop/src/orders.ts",
    content: "export const orders: Array<string> = []\nexport const add = (o: string) => orders.push(o)\n"
  },
  { path: "evals/fixtures/shop/README.md", content: "# Shop\n" }
]
const pkg = (body: string, extra = "") => ({ files: [agentFile(body, extra), ...EVALS] })

const usage = { input: 1000, output: 50 }
/** One eval job: read the fixture file, write report.md, answer. */
const job = (report: string, summary: string): Array<Step> => [
  { kind: "turn", toolCalls: [{ name: "read", arguments: { path: "src/orders.ts" } }], usage },
  { kind: "turn", toolCalls: [{ name: "write", arguments: { path: "report.md", content: report } }], usage },
  { kind: "turn", text: summary, usage }
]
const GOOD_ORDERS = job("# Orders\n\nStored in src/orders.ts:1.\n", "Orders are in src/orders.ts.")
const GOOD_SUMMARY = job("# Shop\n\nOne module.\n", "A small shop.")
const BAD_SUMMARY = job("# Shop\n\nTODO: see src/orders.ts:40\n", "TODO: finish.")

const waitRun = (id: string): Promise<EvalRun> =>
  until(
    async () => {
      const r = await h.api("GET", `/api/admin/eval-runs/${id}`)
      expect(r.status).toBe(200)
      const run = r.json<{ run: EvalRun }>().run
      return run.status !== "running" && run.status !== "waiting" && run
    },
    { what: `eval run ${id} to end`, timeoutMs: 120_000, everyMs: 50 }
  )
const startRun = async (version: number) => {
  const r = await h.api("POST", `/api/admin/agents/shop-bot/versions/${version}/evals`, {})
  expect(r.status).toBe(202)
  return r.json<{ run: EvalRun }>().run
}
const byEval = (run: EvalRun) => Object.fromEntries(run.results.map((r) => [r.eval, r]))
const evalWorkspaces = () => readdirSync(testJobRoot()).filter((n) => n.startsWith("kintsugi-eval-"))

describe("eval runs", () => {
  test("setup: a provider on a scripted server, shop-bot v1 bound to it", async () => {
    server = await startOpenAIServer([])
    const key = `sk-evals-${randomBytes(8).toString("hex")}`
    const baseUrl = server.baseUrl
    await h.rt.runPromise(
      Effect.flatMap(ProviderStore, (p) =>
        p.create(
          {
            kind: "custom",
            id: "gw",
            api: "openai-completions",
            baseUrl,
            apiKey: key,
            models: [{ id: "m", contextWindow: 128_000, maxTokens: 8192, cost: MODEL_PRICES }]
          },
          "test"
        )
      )
    )
    await h.rt.runPromise(Effect.flatMap(Bindings, (b) => b.set("shop-bot", "", { providerId: "gw", modelId: "m" }, "test")))
    expect((await h.api("POST", "/api/admin/agents", pkg("You find orders."))).status).toBe(201)
    // v2, current at once (no gate).
    const saved = await h.api("PUT", "/api/admin/agents/shop-bot", pkg("You find orders. Be brief."))
    expect(saved.json<{ agent: { version: number } }>().agent.version).toBe(2)
  })

  test("one eval passes, one fails with named problems; each version's results are its own; jobs run the pinned version", async () => {
    // v1 (not current): finds-orders passes, no-todo fails.
    server!.append(...GOOD_ORDERS, ...BAD_SUMMARY)
    const v1 = await waitRun((await startRun(1)).id)
    expect(v1.status).toBe("failed")
    const r1 = byEval(v1)
    expect(r1["finds-orders"]).toMatchObject({ passed: true, problems: [], grounding: { grounded: 1, ungrounded: 0, unknown: 0 } })
    expect(r1["finds-orders"]!.costUsd).toBeGreaterThan(0)
    expect(r1["no-todo"]!.passed).toBe(false)
    expect(r1["no-todo"]!.problems).toEqual(['the summary, report.md contain "TODO"'])
    // The job ran version 1 although version 2 is current, in the reserved project, with the eval's task.
    const jobOf = (id: string | null) => h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id ?? "")))
    const j1 = await jobOf(r1["finds-orders"]!.jobId)
    expect(j1).toMatchObject({
      agentVersion: "1",
      agentVersionPin: 1,
      projectId: "kintsugi-evals",
      task: "Find where orders are stored and write report.md.\n"
    })

    // v2: both pass.
    server!.append(...GOOD_ORDERS, ...GOOD_SUMMARY)
    const v2 = await waitRun((await startRun(2)).id)
    expect(v2.status).toBe("passed")
    expect(v2.results.map((r) => [r.eval, r.passed])).toEqual([
      ["finds-orders", true],
      ["no-todo", true]
    ])
    expect((await jobOf(byEval(v2)["no-todo"]!.jobId)).agentVersion).toBe("2")

    // Results per version.
    const list1 = (await h.api("GET", "/api/admin/agents/shop-bot/versions/1/evals")).json<{ runs: Array<EvalRun> }>().runs
    const list2 = (await h.api("GET", "/api/admin/agents/shop-bot/versions/2/evals")).json<{ runs: Array<EvalRun> }>().runs
    expect(list1.map((r) => r.id)).toEqual([v1.id])
    expect(list2.map((r) => r.id)).toEqual([v2.id])
    const versions = (await h.api("GET", "/api/admin/agents/shop-bot/versions")).json<{
      versions: Array<{ version: number; evals?: { status: string; failures: unknown } }>
    }>().versions
    expect(versions.find((v) => v.version === 1)?.evals).toMatchObject({
      status: "failed",
      failures: [{ eval: "no-todo", problems: ['the summary, report.md contain "TODO"'] }]
    })
    expect(versions.find((v) => v.version === 2)?.evals).toMatchObject({ status: "passed", failures: [] })
    // Every eval workspace was removed.
    expect(evalWorkspaces()).toEqual([])
  })

  test("a gated version whose eval fails is stored, not current, and the API says why", async () => {
    server!.append(...GOOD_ORDERS, ...BAD_SUMMARY)
    const saved = await h.api("PUT", "/api/admin/agents/shop-bot", pkg("You find orders. Gated.", "gate: evals\n"))
    expect(saved.status).toBe(200)
    const agent = saved.json<{ agent: { version: number; gate: { version: number; runId: string; status: string } } }>().agent
    expect(agent.version).toBe(2)
    expect(agent.gate).toMatchObject({ version: 3, status: "running" })
    const run = await waitRun(agent.gate.runId)
    expect(run).toMatchObject({ gate: true, status: "failed", message: "v3 stays not current: 1 of 2 evals failed" })
    const after = (await h.api("GET", "/api/admin/agents/shop-bot")).json<{ agent: { version: number; gate: unknown } }>().agent
    expect(after.version).toBe(2)
    expect(after.gate).toMatchObject({
      version: 3,
      status: "failed",
      failures: [{ eval: "no-todo", problems: ['the summary, report.md contain "TODO"'] }]
    })
    const versions = (await h.api("GET", "/api/admin/agents/shop-bot/versions")).json<{
      versions: Array<{ version: number; current: boolean; evals?: { status: string } }>
    }>().versions
    expect(versions.find((v) => v.version === 3)).toMatchObject({ current: false, evals: { status: "failed" } })
  })

  test("a gated version whose evals pass becomes current", async () => {
    server!.append(...GOOD_ORDERS, ...GOOD_SUMMARY)
    const saved = await h.api("PUT", "/api/admin/agents/shop-bot", pkg("You find orders. Gated, fixed.", "gate: evals\n"))
    const agent = saved.json<{ agent: { version: number; gate: { version: number; runId: string } } }>().agent
    expect(agent.version).toBe(2)
    expect(agent.gate.version).toBe(4)
    const run = await waitRun(agent.gate.runId)
    expect(run).toMatchObject({ gate: true, status: "passed", message: "every eval passed: v4 is now current" })
    const after = (await h.api("GET", "/api/admin/agents/shop-bot")).json<{ agent: { version: number; gate?: unknown } }>().agent
    expect(after.version).toBe(4)
    expect(after.gate).toBeUndefined()
    expect(evalWorkspaces()).toEqual([])
  })

  test("a gated version whose evals pass is not made current when a newer version became current meanwhile", async () => {
    await h.rt.runPromise(Effect.flatMap(Bindings, (b) => b.set("race-bot", "", { providerId: "gw", modelId: "m" }, "test")))
    const racePkg = (body: string, extra = "") => ({
      files: [
        { path: "race-bot.md", content: `---\nname: race-bot\nversion: 1\ndescription: Races.\ntools: []\n${extra}---\n${body}\n` },
        {
          path: "evals/says-orders.md",
          content: "---\ndescription: d\nfixture: tiny\nexpect:\n  contains:\n    - { text: orders }\n---\nSay it.\n"
        },
        { path: "evals/fixtures/tiny/a.txt", content: "a\n" }
      ]
    })
    expect((await h.api("POST", "/api/admin/agents", racePkg("v1"))).status).toBe(201)
    // The gated v2's eval job waits in the model server until v3 is current.
    let release: () => void = () => {}
    const held = new Promise<void>((r) => (release = r))
    server!.append({ kind: "fn", respond: async () => (await held, { kind: "turn", text: "orders", usage }) })
    const gated = (await h.api("PUT", "/api/admin/agents/race-bot", racePkg("v2", "gate: evals\n"))).json<{
      agent: { version: number; gate: { version: number; runId: string } }
    }>().agent
    expect(gated).toMatchObject({ version: 1, gate: { version: 2 } })
    // Neither v1 nor v3 is gated: v3 is current at once.
    expect((await h.api("PUT", "/api/admin/agents/race-bot", racePkg("v3"))).json<{ agent: { version: number } }>().agent.version).toBe(3)
    release()
    const run = await waitRun(gated.gate.runId)
    expect(run).toMatchObject({ status: "passed", message: "every eval passed; v2 was not made current: a newer version is current" })
    const after = (await h.api("GET", "/api/admin/agents/race-bot")).json<{ agent: { version: number; gate?: unknown } }>().agent
    expect(after.version).toBe(3)
    expect(after.gate).toBeUndefined()
  })

  test("POST /api/jobs with agentVersion runs that stored version (agents.manage); an unknown one is a 400", async () => {
    const root = createRootDir("pin-")
    mkdirSync(join(root, "src"))
    mkdirSync(join(root, "out"))
    const body = (agentVersion: unknown) => ({
      agent: "shop-bot",
      task: "Say hi.",
      workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
      limits: { timeoutSec: 60 },
      agentVersion
    })
    server!.append({ kind: "turn", text: "hi", usage })
    const started = await h.api("POST", "/api/jobs", body(1))
    expect(started.status).toBe(201)
    const id = started.json<{ job: { id: string; agentVersionPin: number } }>().job.id
    const job = await until(
      async () => {
        const job = await h.rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
        return job.status !== "queued" && job.status !== "running" && job
      },
      { what: `job ${id} to settle`, timeoutMs: 120_000, everyMs: 50 }
    )
    // Version 4 is current; the job ran version 1.
    expect(job).toMatchObject({ status: "completed", agentVersion: "1", agentVersionPin: 1 })
    const unknown = await h.api("POST", "/api/jobs", body(99))
    expect(unknown.status).toBe(400)
    expect(unknown.json<{ error: { problems: unknown } }>().error.problems).toEqual([
      { path: "agent", message: 'agent "shop-bot" has no version 99' }
    ])
    const bad = await h.api("POST", "/api/jobs", body(0))
    expect(bad.status).toBe(400)
    expect(bad.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems).toContainEqual({
      path: "agentVersion",
      message: "must be a version number (1 or more)"
    })
  })

  test("4xx with plain messages: unknown agent or version, no evals, no binding, unknown project, bad version", async () => {
    const unknownAgent = await h.api("POST", "/api/admin/agents/nobody/versions/1/evals", {})
    expect(unknownAgent.status).toBe(404)
    expect(unknownAgent.json<{ error: { message: string } }>().error.message).toBe('no agent "nobody"')
    const unknownVersion = await h.api("POST", "/api/admin/agents/shop-bot/versions/99/evals", {})
    expect(unknownVersion.status).toBe(404)
    expect(unknownVersion.json<{ error: { message: string } }>().error.message).toBe('agent "shop-bot" has no version 99')
    expect((await h.api("GET", "/api/admin/agents/shop-bot/versions/99/evals")).status).toBe(404)
    const bad = await h.api("POST", "/api/admin/agents/shop-bot/versions/x/evals", {})
    expect(bad.status).toBe(400)

    expect(
      (
        await h.api("POST", "/api/admin/agents", {
          files: [{ path: "bare.md", content: "---\nname: bare\nversion: 1\ndescription: d\n---\nHi.\n" }]
        })
      ).status
    ).toBe(201)
    const noEvals = await h.api("POST", "/api/admin/agents/bare/versions/1/evals", {})
    expect(noEvals.status).toBe(409)
    expect(noEvals.json<{ error: { message: string } }>().error.message).toBe(
      'agent "bare" v1 has no evals (add evals/<name>.md files to its package)'
    )

    const unbound = { files: [{ path: "unbound.md", content: "---\nname: unbound\nversion: 1\ndescription: d\n---\nHi.\n" }, ...EVALS] }
    expect((await h.api("POST", "/api/admin/agents", unbound)).status).toBe(201)
    const noBinding = await h.api("POST", "/api/admin/agents/unbound/versions/1/evals", {})
    expect(noBinding.status).toBe(404)
    expect(noBinding.json<{ error: { message: string } }>().error.message).toContain('agent "unbound" has no model binding')

    const noProject = await h.api("POST", "/api/admin/agents/shop-bot/versions/2/evals", { project: "nowhere" })
    expect(noProject.status).toBe(400)
    expect(noProject.json<{ error: { problems: unknown } }>().error.problems).toEqual([
      { path: "project", message: 'no project "nowhere"' }
    ])
    // Nothing above left a run behind.
    expect((await h.api("GET", "/api/admin/agents/unbound/evals")).json<{ runs: Array<unknown> }>().runs).toEqual([])
  })

  test("a run whose server was killed outright (no heartbeat for 60 s) is ended as error by the sweep; a live one is left running", async () => {
    const insert = (beatSecondsAgo: number) =>
      h.rt.runPromise(
        Effect.flatMap(SqlClient, (sql) =>
          Effect.map(
            sql<{
              id: string
            }>`INSERT INTO admin.agent_eval_run (agent_name, version, project_id, status, started_by, started_at, heartbeat_at)
              VALUES ('shop-bot', 1, 'kintsugi-evals', 'running', 'test', now() - interval '1 hour', now() - make_interval(secs => ${beatSecondsAgo}))
              RETURNING id`,
            (rows) => rows[0]!.id
          )
        )
      )
    const killed = await insert(ABANDONED_AFTER_SEC + 30)
    const alive = await insert(5)
    await h.rt.runPromise(Effect.flatMap(Evals, (e) => e.kick))
    const gone = (await h.api("GET", `/api/admin/eval-runs/${killed}`)).json<{ run: EvalRun }>().run
    expect(gone.status).toBe("error")
    expect(gone.message).toContain("the server running it stopped before it finished")
    expect(gone.finishedAt).not.toBeNull()
    expect((await h.api("GET", `/api/admin/eval-runs/${alive}`)).json<{ run: EvalRun }>().run.status).toBe("running")
    await h.rt.runPromise(Effect.flatMap(SqlClient, (sql) => sql`DELETE FROM admin.agent_eval_run WHERE id IN (${killed}, ${alive})`))
  })

  test("a passed gate promotes only a run still unfinished: one a sweep ended as error makes nothing current", async () => {
    const current = (await h.api("GET", "/api/admin/agents/shop-bot")).json<{ agent: { version: number } }>().agent.version
    const saved = await h.api("PUT", "/api/admin/agents/shop-bot", pkg("You find orders. Gated.", "gate: evals\n"))
    expect(saved.status).toBe(200)
    const stored = current + 1
    const run = (status: string) =>
      h.rt.runPromise(
        Effect.flatMap(SqlClient, (sql) =>
          Effect.map(
            sql<{ id: string }>`INSERT INTO admin.agent_eval_run (agent_name, version, project_id, gate, status, started_by, finished_at)
              VALUES ('shop-bot', ${stored}, 'kintsugi-evals', true, ${status}, 'test', ${status === "error" ? new Date() : null}) RETURNING id`,
            (rows) => rows[0]!.id
          )
        )
      )
    const ended = await run("error")
    expect(await h.rt.runPromise(finishPassedGate(ended, "shop-bot", stored))).toBeUndefined()
    expect((await h.api("GET", "/api/admin/agents/shop-bot")).json<{ agent: { version: number } }>().agent.version).toBe(current)
    const open = await run("running")
    expect(await h.rt.runPromise(finishPassedGate(open, "shop-bot", stored))).toBe(`every eval passed: v${stored} is now current`)
    expect((await h.api("GET", "/api/admin/agents/shop-bot")).json<{ agent: { version: number } }>().agent.version).toBe(stored)
    expect((await h.api("GET", `/api/admin/eval-runs/${open}`)).json<{ run: EvalRun }>().run.status).toBe("passed")
  })

  test("a reader may list runs but not start one", async () => {
    const token = await h.user("viewer", [])
    expect((await h.api("POST", "/api/admin/agents/shop-bot/versions/2/evals", {}, token)).status).toBe(403)
    expect((await h.api("GET", "/api/admin/agents/shop-bot/versions/2/evals", undefined, token)).status).toBe(200)
    await server?.stop()
  })
})
