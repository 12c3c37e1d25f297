/**
 * Two serving runtimes on one PostgreSQL share project memory: what one saves the other finds, parallel
 * saves of one note from both add revisions in turn (one note, no number reused), and a services token
 * minted by one is honoured by the other's endpoint and dead in both once its job settles. Each runtime
 * has its own pool, services listener and MemoryStore, as two `kintsugi serve` processes would.
 * PostgreSQL only (the embedded database is one process).
 */
import { afterAll, describe, expect, test } from "bun:test"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { makeDbLayer } from "../../src/db/Db.ts"
import { makeAppRuntime } from "../../src/main.ts"
import { makeSecretBox, SecretBox } from "../../src/providers/SecretBox.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { MemoryStore } from "../../src/worker/memory/MemoryStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { ServicesEndpoint } from "../../src/worker/Services.ts"
import { ServiceTokens } from "../../src/worker/ServiceTokens.ts"
import { adminStatement } from "../support/db.ts"
import { createRootDir, testJobRoots } from "../support/jobRoots.ts"

const SERVER = process.env["DATABASE_URL"] ?? ""
const cleanups: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined)
}, 60_000)

describe("two serving runtimes on one PostgreSQL", () => {
  test.skipIf(SERVER === "")(
    "share notes, revisions and tokens" + (SERVER === "" ? " (skipped: needs DATABASE_URL — the embedded database is one process)" : ""),
    async () => {
      const name = `kintsugi_mem_${randomBytes(6).toString("hex")}`
      await adminStatement(SERVER, `CREATE DATABASE ${name}`)
      cleanups.push(() => adminStatement(SERVER, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
      const u = new URL(SERVER)
      u.pathname = `/${name}`
      const key = randomBytes(32)
      const make = () =>
        makeAppRuntime(makeDbLayer({ url: u.toString(), migrate: true }), {
          secrets: Layer.succeed(SecretBox, makeSecretBox(key)),
          jobRoots: testJobRoots()
        })
      const a = await make()
      cleanups.push(() => a.dispose())
      const b = await make()
      cleanups.push(() => b.dispose())

      await a.runPromise(Effect.orDie(Effect.flatMap(Projects, (p) => p.create({ id: "shared", name: "Shared" }))))
      await b.runPromise(
        Effect.flatMap(MemoryStore, (m) =>
          m.putSettings("shared", true, { learnedDays: 90, forgottenDays: 30, scratchpadDays: 7, logDays: 180 }, "admin")
        )
      )
      const agent = (i: number) => ({
        _tag: "Agent" as const,
        jobId: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
        agentId: `agent-${i}`
      })
      // 20 saves of one note, alternating runtimes, all at once.
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? a : b).runPromise(
            Effect.flatMap(MemoryStore, (m) =>
              m.save("shared", agent(i), { kind: "decision", title: "Queue", body: `version ${i}`, paths: [] })
            )
          )
        )
      )
      const found = await b.runPromise(
        Effect.flatMap(MemoryStore, (m) =>
          m.search({ projectId: "shared", jobId: agent(99).jobId, reviewer: false }, "version", undefined, 10)
        )
      )
      expect(found.length).toBe(1)
      const detail = await a.runPromise(Effect.flatMap(MemoryStore, (m) => m.get("shared", found[0]!.id)))
      expect(detail.revisions.map((r) => r.revision)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))

      // A token minted by A is honoured by B's endpoint, and dead in both once A settles the job.
      const root = createRootDir("kintsugi-shared-")
      const jobId = await a.runPromise(
        Effect.gen(function* () {
          const store = yield* JobStore
          const job = yield* store.enqueue(
            { project: "shared", agent: "x", task: "t", workspace: { root, readOnly: [root], outDir: root }, limits: { timeoutSec: 60 } },
            "test"
          )
          yield* store.claim("a", 60_000, job.id)
          return job.id
        })
      )
      const token = await a.runPromise(
        Effect.flatMap(ServiceTokens, (t) =>
          t.mint({ jobId, projectId: "shared", agentId: "x", memoryRole: null, tools: ["memory_search"] })
        )
      )
      const call = async (rt: typeof a) => {
        const url = await rt.runPromise(Effect.flatMap(ServicesEndpoint, (e) => e.url))
        const r = await fetch(`${url}/memory_search`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ query: "version" })
        })
        return { status: r.status, text: ((await r.json()) as { text: string }).text }
      }
      const viaB = await call(b)
      expect(viaB.status).toBe(200)
      expect(viaB.text).toContain("decision · learned · Queue")
      await a.runPromise(Effect.flatMap(JobStore, (s) => s.settle(jobId, { status: "completed", summary: "ok" }, null)))
      expect((await call(b)).status).toBe(401)
      expect((await call(a)).status).toBe(401)
    },
    120_000
  )
})
