/**
 * An app with worker loops and a chosen set of service handlers (the services channel's serving side),
 * for tests that run jobs granted memory or web tools through the API against scripted model servers.
 * Registers beforeAll/afterAll; call at the top level of a test file.
 */
import { afterAll, beforeAll } from "bun:test"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Access } from "../../src/access/Access.ts"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { makeApp } from "../../src/http/app.ts"
import { makeAppRuntime, type ServiceHandlerDeps } from "../../src/main.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { makeSecretBox, SecretBox } from "../../src/providers/SecretBox.ts"
import { JobStore, type JobRow } from "../../src/worker/JobStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import type { ServiceHandlers } from "../../src/worker/Services.ts"
import { createAgentFiles } from "./api.ts"
import { testDbLayer } from "./db.ts"
import { createRootDir, testJobRoots } from "./jobRoots.ts"
import { MODEL_PRICES } from "./jobChild.ts"
import { startOpenAIServer, type ScriptedServer, type Step } from "./scriptedServers.ts"
import { until } from "./waitFor.ts"

export const ORIGIN = "http://localhost"

export interface ServicesHarness {
  readonly rt: Awaited<ReturnType<typeof makeAppRuntime>>
  readonly app: ReturnType<typeof makeApp>
  readonly logs: Array<string>
  /** The admin's API token (agents.manage + providers.manage). */
  readonly token: () => string
  readonly api: (
    method: string,
    path: string,
    body?: unknown,
    token?: string
  ) => Promise<{ status: number; text: string; json: <T = any>() => T }>
  readonly user: (name: string, permissions: ReadonlyArray<"agents.manage" | "providers.manage">) => Promise<string>
  readonly project: (id: string) => Promise<void>
  /** A custom agent (via the API) bound to a fresh scripted provider playing `steps`. */
  readonly agent: (
    name: string,
    options: Parameters<typeof createAgentFiles>[1] & { readonly memoryRole?: "reviewer"; readonly contextWindow?: number },
    steps: ReadonlyArray<Step>
  ) => Promise<ScriptedServer>
  /** Queues a job through the API and waits for it to settle; returns the row and its events. */
  readonly runJob: (agent: string, project: string | undefined, task?: string) => Promise<{ job: JobRow; events: ReadonlyArray<JobEvent> }>
}

export const useServicesApp = (serviceHandlers?: Layer.Layer<ServiceHandlers, never, ServiceHandlerDeps>): ServicesHarness => {
  const state: { rt?: ServicesHarness["rt"]; app?: ServicesHarness["app"]; token?: string } = {}
  const logs: Array<string> = []
  const servers: Array<ScriptedServer> = []
  const dirs: Array<string> = []
  const need = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error("useServicesApp: used outside the file's tests")
    return v
  }
  const user = async (name: string, permissions: ReadonlyArray<"agents.manage" | "providers.manage">) => {
    const rt = need(state.rt)
    await rt.runPromise(Effect.flatMap(Access, (a) => a.addUser(name, "a long test password", permissions)))
    return rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken(name, "test")))
  }
  const api: ServicesHarness["api"] = async (method, path, body, token) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token ?? need(state.token)}` }
    if (body !== undefined) headers["content-type"] = "application/json"
    const r = await need(state.app).handle(
      new Request(`${ORIGIN}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    )
    const text = await r.text()
    return { status: r.status, text, json: () => JSON.parse(text) }
  }
  beforeAll(async () => {
    const previous = process.env["KINTSUGI_WORKERS"]
    process.env["KINTSUGI_WORKERS"] = "2"
    state.rt = await makeAppRuntime(testDbLayer(), {
      secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))),
      jobRoots: testJobRoots(),
      worker: { log: (l: string) => logs.push(l) },
      ...(serviceHandlers === undefined ? {} : { serviceHandlers })
    })
    if (previous === undefined) delete process.env["KINTSUGI_WORKERS"]
    else process.env["KINTSUGI_WORKERS"] = previous
    state.app = makeApp({ runtime: state.rt, log: (l) => logs.push(l) })
    state.token = await user("admin", ["agents.manage", "providers.manage"])
  }, 120_000)
  afterAll(async () => {
    await state.rt?.dispose()
    await Promise.all(servers.map((s) => s.stop()))
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  }, 60_000)
  let providers = 0
  return {
    get rt() {
      return need(state.rt)
    },
    get app() {
      return need(state.app)
    },
    logs,
    token: () => need(state.token),
    api,
    user,
    project: async (id) => {
      await need(state.rt).runPromise(Effect.orDie(Effect.flatMap(Projects, (p) => p.create({ id, name: id }))))
    },
    agent: async (name, options, steps) => {
      const files = createAgentFiles(name, options)
      if (options?.memoryRole !== undefined) {
        const main = files.files[0]!
        files.files[0] = {
          ...main,
          content: main.content.replace(
            "metadata:\n  audience: runtime\n",
            `metadata:\n  audience: runtime\n  memory-role: ${options.memoryRole}\n`
          )
        }
      }
      const created = await api("POST", "/api/admin/agents", files)
      if (created.status !== 201) throw new Error(`creating ${name}: ${created.status} ${created.text}`)
      const server = await startOpenAIServer(steps)
      servers.push(server)
      const id = `gw${++providers}`
      const rt = need(state.rt)
      await rt.runPromise(
        Effect.flatMap(ProviderStore, (p) =>
          p.create(
            {
              kind: "custom",
              id,
              api: "openai-completions",
              baseUrl: server.baseUrl,
              apiKey: `sk-${randomBytes(8).toString("hex")}`,
              models: [{ id: "m", contextWindow: options?.contextWindow ?? 128_000, maxTokens: 2048, cost: MODEL_PRICES }]
            },
            "test"
          )
        )
      )
      await rt.runPromise(Effect.flatMap(Bindings, (b) => b.set(name, "", { providerId: id, modelId: "m" }, "test")))
      return server
    },
    runJob: async (agent, project, task = "Do the task.") => {
      const root = createRootDir("kintsugi-services-")
      dirs.push(root)
      mkdirSync(join(root, "src"))
      mkdirSync(join(root, "out"))
      writeFileSync(join(root, "src", "a.txt"), "hello\n")
      const r = await api("POST", "/api/jobs", {
        agent,
        task,
        ...(project === undefined ? {} : { project }),
        workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
        limits: { timeoutSec: 60 }
      })
      if (r.status !== 201) throw new Error(`queueing a job of ${agent}: ${r.status} ${r.text}`)
      const id = r.json<{ job: JobRow }>().job.id
      const rt = need(state.rt)
      const job = await until(
        async () => {
          const job = await rt.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
          return (job.status === "completed" || job.status === "failed") && job
        },
        { what: `job ${id} of ${agent} to settle`, timeoutMs: 120_000, everyMs: 50 }
      )
      const events = await rt.runPromise(Effect.flatMap(JobStore, (s) => s.events(id, -1)))
      return { job, events }
    }
  }
}
