/**
 * Data for the pages the narrow-screen and admin-form tests look at: an agent with two versions and
 * both versions' eval results, a provider bound to it by default and in a project, and a project whose
 * memory holds long notes and a daily log.
 */
import { Effect } from "effect"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { insertResult, insertRun, finishRun } from "../../src/agents/evalRepo.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { MemoryStore } from "../../src/worker/memory/MemoryStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import type { Portal } from "./harness.ts"

export const AGENT = "teller"
export const PROVIDER = "gw"
export const PROJECT = "demo"

const agentFiles = (body: string) => ({
  files: [
    {
      path: `${AGENT}.md`,
      content: `---\nname: ${AGENT}\nversion: 1\ndescription: Tells where things are in a code base.\ntools: [read]\n---\n${body}\n`
    }
  ]
})

const LONG_LINE =
  "Run `bun install --frozen-lockfile --production --no-save` once before building; the lockfile_pinned_dependencies_checksum must match."

/** An agent at v2 with eval results for both versions, a bound provider, a project with memory. */
export const createAdminFixtures = (portal: Portal): Promise<void> =>
  portal.runtime.runPromise(
    Effect.gen(function* () {
      yield* (yield* ProviderStore).create(
        {
          kind: "custom",
          id: PROVIDER,
          api: "openai-completions",
          baseUrl: "http://127.0.0.1:9/v1",
          apiKey: "sk-fixture-123456",
          models: [{ id: "m1", contextWindow: 8000, maxTokens: 1000, thinkingLevels: ["off"] }]
        },
        "setup"
      )
      yield* (yield* Projects).create({ id: PROJECT, name: "Demo project" })
      const agents = yield* AgentStore
      yield* agents.create(agentFiles("Tell."), "setup")
      yield* agents.save(AGENT, agentFiles("Tell, citing lines."), "setup", "Cite lines.")
      for (const [name, audience] of [
        ["alpha-helper", "member"],
        ["zeta-reviewer", "runtime"],
        ["mid-writer", "member"]
      ] as const) {
        yield* agents.create(
          {
            files: [
              {
                path: `${name}.md`,
                content: `---\nname: ${name}\nversion: 1\nmetadata:\n  audience: ${audience}\ndescription: ${name}.\ntools: [read]\n---\nHelp.\n`
              }
            ]
          },
          "setup"
        )
      }
      const bindings = yield* Bindings
      yield* bindings.set(AGENT, "", { providerId: PROVIDER, modelId: "m1" }, "setup")
      yield* bindings.set(AGENT, PROJECT, { providerId: PROVIDER, modelId: "m1" }, "setup")
      for (const version of [1, 2]) {
        const run = yield* insertRun({ agent: AGENT, version, project: "", gate: false, status: "running", leaseMs: 15_000, by: "setup" })
        for (const name of ["cites-orders-with-line-numbers", "finds-the-checkout-flow", "summarises-the-build"]) {
          const passed = version === 2 || name !== "cites-orders-with-line-numbers"
          yield* insertResult(run, {
            eval: name,
            passed,
            problems: passed ? [] : ["the output cites src/orders/checkout/validateOrderLines.ts:9, a line the job never read"],
            costUsd: 0.004213,
            durationMs: 12_345,
            grounding: { grounded: 3, ungrounded: passed ? 0 : 1, unknown: 0 },
            jobId: null
          })
        }
        yield* finishRun(run, version === 2 ? "passed" : "failed", "")
      }
      const memory = yield* MemoryStore
      const agent = { _tag: "Agent", jobId: "00000000-0000-4000-8000-0000000000c1", agentId: AGENT } as const
      yield* memory.save(PROJECT, agent, {
        kind: "lesson",
        title: "Build cache",
        body: `${LONG_LINE}\nThen it is cached.`,
        paths: ["src/build/cache/configuration/buildCacheSettings.ts"]
      })
      yield* memory.save(PROJECT, agent, {
        kind: "lesson",
        title: "Build cache",
        body: `${LONG_LINE}\nThen it is cached for a day.`,
        paths: []
      })
      yield* memory.save(PROJECT, agent, { kind: "fact", title: "Orders", body: "Orders live in src/orders.", paths: [] })
    }).pipe(
      Effect.tapError((e) => Effect.sync(() => console.error(JSON.stringify(e)))),
      Effect.orDie
    )
  )
