/**
 * What an eval costs beyond its job (docs/evals.md): the same one-turn job of one agent, started 8 times
 * directly (POST /api/jobs, waited for by polling the job) and 8 times as a one-eval run (POST …/evals,
 * waited for by polling the run: workspace from the fixture, pinned job, checks, result row, removal),
 * interleaved after one warm-up of each, on one worker over a scripted model server. Reports medians
 * and the ratio run/job (the machine is shared: only the ratio means something). Embedded database.
 */
import { Effect } from "effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { Bindings } from "../src/providers/Bindings.ts"
import { ProviderStore } from "../src/providers/ProviderStore.ts"
import { createRootDir } from "../test/support/jobRoots.ts"
import { startOpenAIServer } from "../test/support/scriptedServers.ts"
import { makeTestApp } from "../test/support/testApp.ts"
import { ConfigProvider } from "effect"

const ROUNDS = 8
const made = await makeTestApp({
  worker: {},
  config: ConfigProvider.orElse(ConfigProvider.fromMap(new Map([["KINTSUGI_WORKERS", "1"]])), () => ConfigProvider.fromEnv())
})
const model = await startOpenAIServer([])
await made.runtime.runPromise(
  Effect.gen(function* () {
    yield* (yield* ProviderStore).create(
      {
        kind: "custom",
        id: "b",
        api: "openai-completions",
        baseUrl: model.baseUrl,
        apiKey: "sk-bench-eval-1234",
        models: [{ id: "m", contextWindow: 64000, maxTokens: 4096 }]
      },
      "bench"
    )
    yield* (yield* Bindings).set("bencher", "", { providerId: "b", modelId: "m" }, "bench")
  })
)
const token = await made.addUser("bench", "a long bench password", ["agents.manage"])
const call = async (method: string, path: string, body?: unknown) => {
  const r = await made.app.handle(
    new Request(`http://localhost${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  )
  return (await r.json()) as Record<string, Record<string, unknown>>
}
await call("POST", "/api/admin/agents", {
  files: [
    { path: "bencher.md", content: "---\nname: bencher\nversion: 1\ndescription: d\ntools: []\n---\nAnswer.\n" },
    { path: "evals/says.md", content: "---\ndescription: d\nfixture: f\nexpect:\n  contains:\n    - { text: done }\n---\nSay done.\n" },
    { path: "evals/fixtures/f/src/a.ts", content: "export const a = 1\n" }
  ]
})
const root = createRootDir("bench-eval-")
mkdirSync(join(root, "src"))
mkdirSync(join(root, "out"))

const direct = async () => {
  model.append({ kind: "turn", text: "done" })
  const t = performance.now()
  const job = (
    await call("POST", "/api/jobs", {
      agent: "bencher",
      task: "Say done.",
      workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
      limits: { timeoutSec: 60 }
    })
  )["job"]!
  for (;;) {
    const s = (await call("GET", `/api/jobs/${String(job["id"])}`))["job"]!["status"]
    if (s === "completed" || s === "failed") break
    await Bun.sleep(20)
  }
  return performance.now() - t
}
const viaEval = async () => {
  model.append({ kind: "turn", text: "done" })
  const t = performance.now()
  const run = (await call("POST", "/api/admin/agents/bencher/versions/1/evals", {}))["run"]!
  for (;;) {
    const s = (await call("GET", `/api/admin/eval-runs/${String(run["id"])}`))["run"]!["status"]
    if (s !== "running") break
    await Bun.sleep(20)
  }
  return performance.now() - t
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

await direct()
await viaEval()
const jobs: Array<number> = []
const evals: Array<number> = []
for (let i = 0; i < ROUNDS; i++) {
  jobs.push(await direct())
  evals.push(await viaEval())
}
const j = median(jobs)
const e = median(evals)
console.log(`direct job  median ${j.toFixed(0)} ms  (${jobs.map((x) => x.toFixed(0)).join(", ")})`)
console.log(`one-eval run median ${e.toFixed(0)} ms  (${evals.map((x) => x.toFixed(0)).join(", ")})`)
console.log(`ratio run/job ${(e / j).toFixed(2)}`)
await model.stop()
await made.dispose()
process.exit(0)
