/**
 * Several serve processes on one PostgreSQL server, for the tests and benches that run them: a fresh
 * database set up through the same code the servers run (migrations, a user with a token, a scripted
 * provider, a custom agent bound to it), a job root they share as a deployment's volume, and the port a
 * started process serves on.
 */
import { afterAll } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Access } from "../../src/access/Access.ts"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { makeDbLayer } from "../../src/db/Db.ts"
import { makeAppRuntime } from "../../src/main.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { makeSecretBox, SecretBox } from "../../src/providers/SecretBox.ts"
import { createAgentFiles } from "./api.ts"
import { adminStatement } from "./db.ts"
import { MODEL_PRICES } from "./jobChild.ts"
import { descendants, isAlive } from "./processes.ts"
import { startOpenAIServer, type ScriptedServer, type Step } from "./scriptedServers.ts"
import { until } from "./waitFor.ts"

export type Cleanups = Array<() => Promise<void> | void>

/**
 * What a deployment's jobs need, written through the services: the user `ops`, the custom provider
 * `gw` (its model `m` at `baseUrl`) and `agent` (with `tools`) bound to it.
 */
export const seedBoundAgent = (options: {
  readonly baseUrl: string
  readonly apiKey: string
  readonly agent: string
  readonly tools: ReadonlyArray<string>
}) =>
  Effect.gen(function* () {
    yield* (yield* Access).addUser("ops", "a long test password", ["agents.manage", "providers.manage"])
    yield* (yield* ProviderStore).create(
      {
        kind: "custom",
        id: "gw",
        api: "openai-completions",
        baseUrl: options.baseUrl,
        apiKey: options.apiKey,
        models: [{ id: "m", contextWindow: 128_000, maxTokens: 8192, cost: MODEL_PRICES }]
      },
      "test"
    )
    yield* (yield* AgentStore).create(createAgentFiles(options.agent, { tools: [...options.tools] }), "test")
    yield* (yield* Bindings).set(options.agent, "", { providerId: "gw", modelId: "m" }, "test")
  })

/** A list of clean-ups the test file's afterAll runs last-first; one that throws does not stop the rest. */
export const useCleanups = (timeoutMs: number): Cleanups => {
  const cleanups: Cleanups = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c()
      } catch {
        // keep cleaning up
      }
    }
  }, timeoutMs)
  return cleanups
}

export interface Deployment {
  /** The fresh database's URL (DATABASE_URL of every process). */
  readonly url: string
  /** KINTSUGI_SECRET_KEY of every process. */
  readonly secretText: string
  /** This process's runtime on the same database (the setup's, and the test's reads). */
  readonly rt: Awaited<ReturnType<typeof makeAppRuntime>>
  readonly model: ScriptedServer
  /** An API token of "ops" (agents.manage, providers.manage). */
  readonly token: string
  /** A temporary directory: the job root `root` inside it, the processes' data dirs beside that. */
  readonly base: string
  /** The job root (KINTSUGI_JOB_ROOTS), with `src/app.ts` and `out/`. */
  readonly root: string
}

/**
 * A fresh database on `server` named `<prefix>_<random>`, dropped (with everything else made here) by
 * `cleanups`; provider "gw" (model "m") answering `steps`, and `agent` (a custom agent with `tools` and no
 * output contract: one model request per one-turn job) bound to it.
 */
export const createDeployment = async (options: {
  readonly server: string
  readonly prefix: string
  readonly agent: string
  readonly steps: ReadonlyArray<Step>
  readonly apiKey: string
  readonly tools: ReadonlyArray<string>
  readonly cleanups: Cleanups
}): Promise<Deployment> => {
  const { server, cleanups } = options
  const name = `${options.prefix}_${randomBytes(6).toString("hex")}`
  await adminStatement(server, `CREATE DATABASE ${name}`)
  cleanups.push(() => adminStatement(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  const u = new URL(server)
  u.pathname = `/${name}`
  const url = u.toString()
  const secretText = randomBytes(24).toString("hex")
  const rt = await makeAppRuntime(makeDbLayer({ url, migrate: true }), {
    secrets: Layer.succeed(SecretBox, makeSecretBox(createHash("sha256").update(secretText).digest()))
  })
  cleanups.push(() => rt.dispose())
  const model = await startOpenAIServer(options.steps)
  cleanups.push(() => model.stop())
  await rt.runPromise(seedBoundAgent({ baseUrl: model.baseUrl, apiKey: options.apiKey, agent: options.agent, tools: options.tools }))
  const token = await rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken("ops", "test")))
  const base = mkdtempSync(join(tmpdir(), `${options.prefix.replaceAll("_", "-")}-`))
  cleanups.push(() => rmSync(base, { recursive: true, force: true }))
  const root = join(base, "ws")
  mkdirSync(join(root, "src"), { recursive: true })
  mkdirSync(join(root, "out"))
  writeFileSync(join(root, "src", "app.ts"), "export const main = () => 42\n")
  return { url, secretText, rt, model, token, base, root }
}

const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")

/**
 * `kintsugi serve` processes of deployment `d`. `start(name, …)` spawns one (`args` after `serve`) on
 * 127.0.0.1, port 0, with the deployment's database, job root and secret key, its own data dir
 * `data-<name>` under `d.base`, and `env` over those; it resolves once the process serves, with its port
 * (0 when it did not: `out` is what it printed) and its stderr so far (echoed unless `quiet`). `all` holds
 * every pid killed at clean-up; a test adds the job children of a server it kills.
 */
export const serveProcesses = (d: Pick<Deployment, "url" | "secretText" | "base" | "root">, cleanups: Cleanups) => {
  const all = new Set<number>()
  cleanups.push(() => {
    for (const pid of all) if (isAlive(pid)) process.kill(pid, "SIGKILL")
  })
  const start = async (
    name: string,
    options: { readonly args?: ReadonlyArray<string>; readonly env: Readonly<Record<string, string>>; readonly quiet?: boolean }
  ) => {
    const proc = Bun.spawn(["bun", CLI, "serve", ...(options.args ?? [])], {
      env: {
        ...process.env,
        DATABASE_URL: d.url,
        PORT: "0",
        HOST: "127.0.0.1",
        KINTSUGI_DATA_DIR: join(d.base, `data-${name}`),
        KINTSUGI_JOB_ROOTS: d.root,
        KINTSUGI_SECRET_KEY: d.secretText,
        ...options.env
      },
      stdout: "pipe",
      stderr: "pipe"
    })
    all.add(proc.pid)
    let err = ""
    void (async () => {
      const decoder = new TextDecoder()
      for await (const chunk of proc.stderr) {
        err += decoder.decode(chunk, { stream: true })
        if (options.quiet !== true) process.stderr.write(chunk)
      }
    })()
    const { port, out } = await servingPort(proc.stdout)
    return { proc, port, out, stderr: () => err }
  }
  return { all, start }
}

/** Reads a serve process's stdout up to its "serving on" line: the port (0 when it ended first) and what it printed. */
export const servingPort = async (stdout: ReadableStream<Uint8Array>): Promise<{ port: number; out: string }> => {
  let out = ""
  const decoder = new TextDecoder()
  for await (const chunk of stdout) {
    out += decoder.decode(chunk, { stream: true })
    if (/serving on http:\/\/[^:]+:(\d+)/.test(out)) break
  }
  return { port: Number(/serving on http:\/\/[^:]+:(\d+)/.exec(out)?.[1] ?? 0), out }
}

/** Milliseconds left until `deadline` (a bound on a hang). */
const left = (deadline: number) => Math.max(1, deadline - Date.now())

const reader =
  (rt: Deployment["rt"]) =>
  (text: string, values: Array<unknown> = []) =>
    rt.runPromise(Effect.flatMap(SqlClient, (s) => s.unsafe<Record<string, unknown>>(text, values)))

/**
 * Once `victim` runs jobs with its job children alive, SIGKILLs it: the ids of the jobs it was running
 * then and the pids of its job processes (added to `all`, so a survivor is killed at clean-up).
 */
export const killWhileRunning = async (
  rt: Deployment["rt"],
  victim: { readonly pid: number; readonly proc: { readonly exited: Promise<number> } },
  all: Set<number>,
  deadline: number
): Promise<{ running: ReadonlyArray<Record<string, unknown>>; orphans: ReadonlyArray<number> }> => {
  const sql = reader(rt)
  const owned = [`%:${victim.pid}:%`]
  await until(
    async () => {
      const rows = await sql(`SELECT count(*)::int AS n FROM runtime.job WHERE status = 'running' AND worker_id LIKE $1`, owned)
      return Number(rows[0]?.["n"]) > 0 && descendants(victim.pid).length > 0
    },
    { what: "the victim to run jobs", timeoutMs: left(deadline), everyMs: 100 }
  )
  const orphans = descendants(victim.pid)
  for (const pid of orphans) all.add(pid)
  const running = await sql(`SELECT id FROM runtime.job WHERE status = 'running' AND worker_id LIKE $1`, owned)
  process.kill(victim.pid, "SIGKILL")
  await victim.proc.exited
  return { running, orphans }
}

/** Once all `count` jobs are settled: every job row with its `job.started` (`starts`) and terminal event (`ends`) counts. */
export const settledJobs = async (rt: Deployment["rt"], count: number, deadline: number) => {
  const sql = reader(rt)
  await until(
    async () => {
      const rows = await sql(`SELECT count(*)::int AS n FROM runtime.job WHERE status IN ('completed', 'failed')`)
      return Number(rows[0]?.["n"]) === count
    },
    { what: "all jobs to settle", timeoutMs: left(deadline), everyMs: 100 }
  )
  return sql(`SELECT id, status, reason, message, worker_id,
      (SELECT count(*)::int FROM runtime.job_event e WHERE e.job_id = j.id AND e.type = 'job.started') AS starts,
      (SELECT count(*)::int FROM runtime.job_event e WHERE e.job_id = j.id AND e.type IN ('job.completed', 'job.failed')) AS ends
    FROM runtime.job j`)
}
