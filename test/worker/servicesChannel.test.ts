/**
 * The services channel's endpoint and tokens, driven directly (no job child): a token works only for
 * its job while the job runs, only for the tools it was granted, only while the project still grants
 * them; bad input is a clear 400 and reaches no handler.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Layer } from "effect"
import { SqlClient } from "@effect/sql/SqlClient"
import { createHash, randomBytes } from "node:crypto"
import { makeAppRuntime } from "../../src/main.ts"
import { makeSecretBox, SecretBox } from "../../src/providers/SecretBox.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { ServicesEndpoint } from "../../src/worker/Services.ts"
import { ServiceTokens } from "../../src/worker/ServiceTokens.ts"
import { testDbLayer } from "../support/db.ts"
import { createFakeServices } from "../support/fakeServices.ts"
import { createRootDir, testJobRoots } from "../support/jobRoots.ts"

const fake = createFakeServices(["alpha", "beta"])
let rt: Awaited<ReturnType<typeof makeAppRuntime>>

beforeAll(async () => {
  rt = await makeAppRuntime(testDbLayer(), {
    secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))),
    jobRoots: testJobRoots(),
    serviceHandlers: fake.layer
  })
}, 120_000)
afterAll(() => rt.dispose(), 60_000)

/** A job row that is running (claimed), of `project`. */
const runningJob = async (project: string) => {
  const root = createRootDir("kintsugi-channel-")
  return rt.runPromise(
    Effect.gen(function* () {
      const store = yield* JobStore
      const job = yield* store.enqueue(
        { project, agent: "a", task: "t", workspace: { root, readOnly: [root], outDir: root }, limits: { timeoutSec: 60 } },
        "test"
      )
      yield* store.claim("test-worker", 60_000, job.id)
      return job.id
    })
  )
}
const mint = (jobId: string, projectId: string, tools: ReadonlyArray<string>) =>
  rt.runPromise(Effect.flatMap(ServiceTokens, (t) => t.mint({ jobId, projectId, agentId: "agent-a", memoryRole: null, tools })))

/** One call through the real loopback listener, as the job child makes it. */
const call = async (tool: string, input: unknown, token: string | undefined) => {
  const url = await rt.runPromise(Effect.flatMap(ServicesEndpoint, (e) => e.url))
  const r = await fetch(`${url}/${tool}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: typeof input === "string" ? input : JSON.stringify(input)
  })
  return { status: r.status, body: (await r.json()) as { text: string; isError: boolean } }
}

describe("the services channel", () => {
  test("the endpoint listens on loopback only, under /internal/services", async () => {
    const url = await rt.runPromise(Effect.flatMap(ServicesEndpoint, (e) => e.url))
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/internal\/services$/)
  })

  test("a token works for its job's granted tools while the job runs, and is dead once the job settles (replay → 401)", async () => {
    const jobId = await runningJob("alpha")
    const token = await mint(jobId, "alpha", ["memory_search"])
    expect(token).toMatch(/^kst_/)
    // Stored hashed: the row holds its SHA-256, never the token.
    const stored = await rt.runPromise(
      Effect.flatMap(SqlClient, (sql) => sql<{ tokenHash: string }>`SELECT token_hash FROM runtime.service_token WHERE job_id = ${jobId}`)
    )
    expect(stored.map((r) => r.tokenHash)).toEqual([createHash("sha256").update(token).digest("hex")])
    const ok = await call("memory_search", { query: "retries" }, token)
    expect(ok).toEqual({ status: 200, body: { text: `memory_search in alpha for agent-a: {"query":"retries"}`, isError: false } })
    expect(fake.calls.at(-1)?.grant).toMatchObject({ jobId, projectId: "alpha", agentId: "agent-a", tools: ["memory_search"] })
    // Not granted to this job (the token is bound to memory_search only).
    const before = fake.calls.length
    const save = await call("memory_save", { kind: "lesson", title: "t", body: "b" }, token)
    expect(save.status).toBe(403)
    expect(save.body.text).toContain("memory_save is not granted to this job")
    await rt.runPromise(Effect.flatMap(JobStore, (s) => s.settle(jobId, { status: "completed", summary: "done" }, null)))
    const replay = await call("memory_search", { query: "retries" }, token)
    expect(replay.status).toBe(401)
    expect(replay.body.isError).toBe(true)
    expect(fake.calls.length).toBe(before)
  })

  test("no token, a malformed or unknown token → 401 and no handler runs", async () => {
    const before = fake.calls.length
    expect((await call("memory_search", { query: "x" }, undefined)).status).toBe(401)
    expect((await call("memory_search", { query: "x" }, "not-a-token")).status).toBe(401)
    expect((await call("memory_search", { query: "x" }, `kst_${"A".repeat(43)}`)).status).toBe(401)
    expect(fake.calls.length).toBe(before)
  })

  test("the grant is checked again on every call: a project that stops granting the tool refuses it mid-job", async () => {
    const jobId = await runningJob("beta")
    const token = await mint(jobId, "beta", ["memory_search"])
    expect((await call("memory_search", { query: "a" }, token)).status).toBe(200)
    fake.enabled.delete("beta")
    try {
      const refused = await call("memory_search", { query: "a" }, token)
      expect(refused.status).toBe(403)
      expect(refused.body.text).toContain('memory is not enabled for project "beta"')
    } finally {
      fake.enabled.add("beta")
    }
  })

  test("bad input: every problem named, 400, nothing reaches the handler; unknown tools 404", async () => {
    const jobId = await runningJob("alpha")
    const token = await mint(jobId, "alpha", ["memory_search", "memory_save"])
    const before = fake.calls.length
    const bad = await call("memory_save", { kind: "rumour", title: "", body: "x".repeat(4001) }, token)
    expect(bad.status).toBe(400)
    expect(bad.body.text).toContain("kind: must be one of fact, lesson, decision, navigation")
    expect(bad.body.text).toContain("title: title must not be empty")
    expect(bad.body.text).toContain("body: body must be at most 4,000 characters")
    expect((await call("memory_save", "{not json", token)).status).toBe(400)
    expect((await call("memory_search", { query: "a", extra: 1 }, token)).status).toBe(400)
    expect((await call("web_fetch", { url: "http://x" }, token)).status).toBe(404)
    expect(fake.calls.length).toBe(before)
  })

  test("revoking a job's tokens deletes their hashes", async () => {
    const jobId = await runningJob("alpha")
    await mint(jobId, "alpha", ["memory_search"])
    await rt.runPromise(Effect.flatMap(ServiceTokens, (t) => t.revoke(jobId)))
    const rows = await rt.runPromise(Effect.flatMap(SqlClient, (sql) => sql`SELECT 1 FROM runtime.service_token WHERE job_id = ${jobId}`))
    expect(rows.length).toBe(0)
  })
})
