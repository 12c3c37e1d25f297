/**
 * The job boundary at the API and the portal: workspaces outside the job roots, inside or
 * above the data dir, the secret key file or the installation, through `..` or a symlink, or missing,
 * are refused with 400 listing every problem, and nothing is queued. The worker's job child checks the
 * envelope's boundary again, so a symlink swapped after the API check is caught too.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { INSTALL_DIR } from "../../src/worker/JobRoots.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { LeaseConfig, runClaimedJob } from "../../src/worker/Worker.ts"
import { bindAgent, PASSWORD, useApi, type JsonObject } from "../support/api.ts"
import { MODEL_PRICES } from "../support/jobChild.ts"
import { createFakeDataDir, testJobRoots } from "../support/jobRoots.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

setDefaultTimeout(30_000)

// A data dir of our own (with a key file and database files) beside one job root, both in a fresh temp dir.
const { base, dataDir } = createFakeDataDir("kintsugi-boundary-", "c2VjcmV0IGtleSBmb3IgdGhlIHRlc3Q=")
const keyFile = join(dataDir, "secret.key")
const roots = join(base, "roots")
const elsewhere = join(base, "elsewhere")
mkdirSync(elsewhere, { recursive: true })

const api = useApi({ jobRoots: testJobRoots([roots], dataDir) })
// Bound, so a job of it may be queued (admission refuses an agent with no binding).
beforeAll(() => bindAgent(api, "codebase-inventory"))

let n = 0
/** A workspace inside the job root: root/src (with a file) and root/out. */
const createWorkspace = () => {
  const root = join(roots, `ws-${++n}`)
  mkdirSync(join(root, "src"), { recursive: true })
  mkdirSync(join(root, "out"), { recursive: true })
  writeFileSync(join(root, "src", "a.ts"), "export const a = 1\n")
  return { root, src: join(root, "src"), out: join(root, "out") }
}
mkdirSync(roots, { recursive: true })

const jobBody = (workspace: { root: string; readOnly: ReadonlyArray<string>; outDir: string }, extra: Record<string, unknown> = {}) => ({
  agent: "codebase-inventory",
  task: "Inventory it.",
  workspace,
  limits: { timeoutSec: 60 },
  ...extra
})

const countJobs = async () => (await api.sql<{ n: number }>("SELECT count(*)::int AS n FROM runtime.job"))[0]?.n ?? -1

/** POSTs the job; expects 400 with nothing stored; returns the problems. */
const refused = async (body: unknown): Promise<Array<{ path: string; message: string }>> => {
  const before = await countJobs()
  const r = await api.request("POST", "/api/jobs", { token: api.manager.token, json: body })
  expect({ status: r.status, text: r.text.slice(0, 600) }).toMatchObject({ status: 400 })
  // No host path beyond what the client sent: never the data dir or the installation.
  expect(r.text).not.toContain(dataDir)
  expect(r.text).not.toContain(INSTALL_DIR)
  expect(await countJobs()).toBe(before)
  return r.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems
}

const has = (problems: ReadonlyArray<{ path: string; message: string }>, path: string, message: string) =>
  expect(
    problems
      .filter((p) => p.path === path)
      .map((p) => p.message)
      .join(" | ")
  ).toContain(message)

describe("POST /api/jobs: the job boundary", () => {
  test("the data dir, the secret key file, /etc, `..`, a symlink to the data dir, `/` and an outDir outside: every problem at once, nothing queued", async () => {
    const ws = createWorkspace()
    symlinkSync(dataDir, join(ws.src, "state-link"))
    const problems = await refused(
      jobBody({
        root: "/",
        readOnly: [dataDir, keyFile, "/etc", `${ws.root}/../../state`, join(ws.src, "state-link"), join(ws.src, "state-link", "data")],
        outDir: elsewhere
      })
    )
    has(problems, "workspace.root", "resolves outside the job roots")
    has(problems, "workspace.root", "is or contains the server's data directory")
    has(problems, "workspace.root", "is or contains the server's installation directory")
    has(problems, "workspace.readOnly.0", "is or contains the server's data directory")
    has(problems, "workspace.readOnly.1", "is or contains the server's secret key file")
    has(problems, "workspace.readOnly.1", "is inside the server's data directory")
    has(problems, "workspace.readOnly.2", "resolves outside the job roots")
    has(problems, "workspace.readOnly.3", "is or contains the server's data directory")
    has(problems, "workspace.readOnly.4", "is or contains the server's data directory")
    has(problems, "workspace.readOnly.5", "is inside the server's data directory")
    has(problems, "workspace.outDir", "resolves outside the job roots")
    for (const i of [0, 1, 2, 3, 4, 5]) has(problems, `workspace.readOnly.${i}`, "resolves outside the job roots")
    const listed = await api.request("GET", "/api/jobs", { token: api.manager.token })
    expect(listed.json<{ jobs: Array<unknown> }>().jobs).toEqual([])
  })

  test("each case alone is refused too: the data dir as outDir, /etc both ways, the installation as root", async () => {
    const ws = createWorkspace()
    has(
      await refused(jobBody({ root: ws.root, readOnly: [ws.src], outDir: dataDir })),
      "workspace.outDir",
      "is or contains the server's data directory"
    )
    has(
      await refused(jobBody({ root: ws.root, readOnly: ["/etc"], outDir: ws.out })),
      "workspace.readOnly.0",
      "resolves outside the job roots"
    )
    has(await refused(jobBody({ root: ws.root, readOnly: [ws.src], outDir: "/etc" })), "workspace.outDir", "resolves outside the job roots")
    has(
      await refused(jobBody({ root: INSTALL_DIR, readOnly: [ws.src], outDir: ws.out })),
      "workspace.root",
      "is or contains the server's installation directory"
    )
    has(
      await refused(jobBody({ root: ws.root, readOnly: [`${ws.root}/../../elsewhere`], outDir: ws.out })),
      "workspace.readOnly.0",
      "resolves outside the job roots"
    )
    expect(await countJobs()).toBe(0)
  })

  test("a missing directory is 400 (not 201), together with schema problems", async () => {
    const ws = createWorkspace()
    const problems = await refused(
      jobBody({ root: ws.root, readOnly: [join(ws.root, "nope")], outDir: join(ws.root, "gone") }, { task: "" })
    )
    has(problems, "workspace.readOnly.0", "does not exist")
    has(problems, "workspace.outDir", "does not exist")
    has(problems, "task", "must not be empty")
  })

  test("a workspace inside the job root is accepted", async () => {
    const ws = createWorkspace()
    const r = await api.request("POST", "/api/jobs", {
      token: api.manager.token,
      json: jobBody({ root: ws.root, readOnly: [ws.src], outDir: ws.out })
    })
    expect(r.status).toBe(201)
    // Leave nothing queued for the other tests of this file.
    await api.request("POST", `/api/jobs/${r.json<{ job: { id: string } }>().job.id}/abort`, { token: api.manager.token })
    await api.sql("DELETE FROM runtime.job")
  })

  test("the portal's run form shows the same problems and queues nothing", async () => {
    const session = await api.signIn("manager", PASSWORD)
    const ws = createWorkspace()
    const r = await api.request("POST", "/agents/codebase-inventory/run", {
      session,
      form: new URLSearchParams({ task: "Look.", root: ws.root, readOnly: `${ws.src}\n${dataDir}`, outDir: "/etc", timeoutSec: "60" })
    })
    expect(r.status).toBe(400)
    expect(/id="problems-readOnly"[\s\S]*?<\/div>/.exec(r.text)?.[0]).toContain("the server&#39;s data directory")
    expect(/id="problems-outDir"[\s\S]*?<\/div>/.exec(r.text)?.[0]).toContain("resolves outside the job roots")
    expect(await countJobs()).toBe(0)
  })
})

describe("project roots", () => {
  test("a project root must lie inside the job roots; its jobs must lie inside it", async () => {
    const token = api.manager.token
    const outside = await api.request("POST", "/api/projects", { token, json: { id: "outside", name: "Outside", root: elsewhere } })
    expect(outside.status).toBe(400)
    expect(outside.json<JsonObject>().error.problems).toEqual([
      { path: "root", message: "resolves outside the job roots (symbolic links followed)" }
    ])
    const data = await api.request("POST", "/api/projects", { token, json: { id: "data", name: "Data", root: dataDir } })
    expect(data.status).toBe(400)
    expect(data.text).not.toContain(dataDir)

    const mine = createWorkspace()
    const other = createWorkspace()
    const ok = await api.request("POST", "/api/projects", { token, json: { id: "mine", name: "Mine", root: mine.root } })
    expect(ok.status).toBe(201)
    expect(ok.json<JsonObject>().project.root).toBe(mine.root)

    const problems = await refused(jobBody({ root: other.root, readOnly: [other.src], outDir: mine.out }, { project: "mine" }))
    has(problems, "workspace.root", "resolves outside the project's root")
    has(problems, "workspace.readOnly.0", "resolves outside the project's root")
    expect(problems.some((p) => p.path === "workspace.outDir")).toBe(false)
    const inside = await api.request("POST", "/api/jobs", {
      token,
      json: jobBody({ root: mine.root, readOnly: [mine.src], outDir: mine.out }, { project: "mine" })
    })
    expect(inside.status).toBe(201)
    await api.sql("DELETE FROM runtime.job")
  })
})

describe("the job child checks the boundary again", () => {
  test("a symlink swapped to the data dir after the API accepted the job: refused by the child, the model never called", async () => {
    const server = await startOpenAIServer([{ kind: "turn", text: "Should never be asked.", usage: { input: 10, output: 5 } }])
    try {
      await api.run(
        Effect.gen(function* () {
          yield* (yield* ProviderStore).create(
            {
              kind: "custom",
              id: "swap",
              api: "openai-completions",
              baseUrl: server.baseUrl,
              apiKey: "sk-swap-123456",
              models: [{ id: "m", contextWindow: 64000, maxTokens: 4096, cost: MODEL_PRICES }]
            },
            "test"
          )
          yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "swap", modelId: "m" }, "test")
        })
      )
      const ws = createWorkspace()
      const link = join(ws.root, "code")
      symlinkSync(ws.src, link)
      const r = await api.request("POST", "/api/jobs", {
        token: api.manager.token,
        json: jobBody({ root: ws.root, readOnly: [link], outDir: ws.out })
      })
      expect(r.status).toBe(201)
      const id = r.json<{ job: { id: string } }>().job.id
      // The swap, between the API's check and the job's start.
      rmSync(link)
      symlinkSync(dataDir, link)
      await api.run(
        Effect.gen(function* () {
          const lease = yield* LeaseConfig
          const claimed = yield* (yield* JobStore).claim("test:swap", lease.leaseMs, id)
          if (claimed !== undefined) yield* runClaimedJob(claimed, lease)
        })
      )
      const job = await api.run(Effect.flatMap(JobStore, (s) => s.get(id)))
      expect(job.status).toBe("failed")
      expect(job.message ?? "").toContain("job.workspace.readOnly.0: resolves outside the job roots")
      expect(job.message ?? "").toContain("is or contains a path reserved for the server")
      expect(job.message ?? "").not.toContain(dataDir)
      expect(server.requests.length).toBe(0)
      const events = await api.run(Effect.flatMap(SqlClient, (sql) => sql`SELECT 1 FROM runtime.job_event WHERE job_id = ${id}`))
      expect(events.length).toBe(0)
    } finally {
      await server.stop()
    }
  })

  test("a project's root narrowed (PUT /api/projects/:id) after a job was queued: refused at its start, the model never called", async () => {
    const server = await startOpenAIServer([{ kind: "turn", text: "Should never be asked.", usage: { input: 10, output: 5 } }])
    try {
      await api.run(
        Effect.gen(function* () {
          yield* (yield* ProviderStore).create(
            {
              kind: "custom",
              id: "narrow",
              api: "openai-completions",
              baseUrl: server.baseUrl,
              apiKey: "sk-narrow-123456",
              models: [{ id: "m", contextWindow: 64000, maxTokens: 4096, cost: MODEL_PRICES }]
            },
            "test"
          )
          yield* (yield* Bindings).set("codebase-inventory", "", { providerId: "narrow", modelId: "m" }, "test")
        })
      )
      const token = api.manager.token
      const ws = createWorkspace()
      const other = createWorkspace()
      expect(
        (await api.request("POST", "/api/projects", { token, json: { id: "narrowed", name: "Narrowed", root: ws.root } })).status
      ).toBe(201)
      const r = await api.request("POST", "/api/jobs", {
        token,
        json: jobBody({ root: ws.root, readOnly: [ws.src], outDir: ws.out }, { project: "narrowed" })
      })
      expect(r.status).toBe(201)
      const id = r.json<{ job: { id: string } }>().job.id
      // The project now confines its jobs to another folder: the queued job's workspace lies outside it.
      expect((await api.request("PUT", "/api/projects/narrowed", { token, json: { name: "Narrowed", root: other.root } })).status).toBe(200)
      await api.run(
        Effect.gen(function* () {
          const lease = yield* LeaseConfig
          const claimed = yield* (yield* JobStore).claim("test:narrow", lease.leaseMs, id)
          if (claimed !== undefined) yield* runClaimedJob(claimed, lease)
        })
      )
      const job = await api.run(Effect.flatMap(JobStore, (s) => s.get(id)))
      expect(job.status).toBe("failed")
      expect(job.message ?? "").toContain("job.workspace.root: resolves outside the job roots")
      expect(job.message ?? "").not.toContain(ws.root)
      expect(server.requests.length).toBe(0)
    } finally {
      await server.stop()
    }
  })
})
