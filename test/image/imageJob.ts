/**
 * The API half of the image test (test/image/imageTest.sh starts the image's root and calls this):
 * signs in as the first admin, points a provider at a scripted OpenAI server on 127.0.0.1, binds a
 * built-in agent to it and runs a job whose model runs some of that agent's own scripts through `shell`
 * (as its instructions say: the script's body as the command, first line `SRC='…'`), writes the agent's
 * contracted outputs and finishes. Prints what happened; exits 1 when the job did not complete with
 * each script's output seen by the model.
 *
 *   bun test/image/imageJob.ts --origin URL --password PW --agent NAME --script A.sh [--script B.sh] \
 *     --workspace PATH-IN-CONTAINER --host-workspace PATH-ON-HOST
 */
import fs from "node:fs"
import path from "node:path"
import { parseArgs } from "node:util"
import { bypassProxyForLoopback, startOpenAIServer } from "../../src/testing/scriptedServers.ts"
import { builtinAnswerTurn, builtinOutputsStep, BUILTIN_OUTPUTS } from "../support/builtinOutputs.ts"
import { until } from "../support/waitFor.ts"

const { values: args } = parseArgs({
  options: {
    origin: { type: "string" },
    password: { type: "string" },
    agent: { type: "string", default: "codebase-inventory" },
    script: { type: "string", multiple: true, default: ["ext-counts.sh"] },
    workspace: { type: "string" },
    "host-workspace": { type: "string" },
    timeout: { type: "string", default: "180" }
  }
})
const origin = args.origin ?? ""
const agent = args.agent ?? ""
const workspace = args.workspace ?? ""
const hostWorkspace = args["host-workspace"] ?? ""
if (origin === "" || args.password === undefined || workspace === "" || hostWorkspace === "") {
  console.error(
    "usage: bun test/image/imageJob.ts --origin URL --password PW --workspace PATH --host-workspace PATH [--agent NAME --script FILE…]"
  )
  process.exit(2)
}
bypassProxyForLoopback()

const failures: Array<string> = []
const check = (ok: boolean, what: string) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`)
  if (!ok) failures.push(what)
  return ok
}
const ms = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`

const call = async (method: string, url: string, init: { token?: string; cookie?: string; csrf?: string; json?: unknown } = {}) => {
  const headers: Record<string, string> = {}
  if (init.token !== undefined) headers["authorization"] = `Bearer ${init.token}`
  if (init.cookie !== undefined)
    Object.assign(headers, { cookie: init.cookie, origin, "sec-fetch-site": "same-origin", "x-csrf-token": init.csrf ?? "" })
  if (init.json !== undefined) headers["content-type"] = "application/json"
  const r = await fetch(`${origin}${url}`, {
    method,
    headers,
    redirect: "manual",
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) })
  })
  const text = await r.text()
  return { status: r.status, text, headers: r.headers, json: <T = any>() => JSON.parse(text) as T }
}
const brief = (text: string) => text.replace(/\s+/g, " ").slice(0, 400)

// Each script as the agent's instructions say to run one: its body, after a first line naming SRC.
const scripts = args.script ?? []
const commands = scripts.map(
  (s) => `SRC='src'\n${fs.readFileSync(path.join(import.meta.dir, "..", "..", "builtin-agents", agent, "scripts", s), "utf8")}`
)
/** What each script prints when it worked (the model's second request carries the tool results). */
const EXPECTED: Record<string, string> = { "ext-counts.sh": "== lines files extension", "git-summary.sh": "commits: 1" }
const outputs = BUILTIN_OUTPUTS[agent]
if (outputs === undefined) throw new Error(`${agent} is not a built-in agent`)
const model = await startOpenAIServer([
  { kind: "turn", toolCalls: commands.map((command) => ({ name: "shell", arguments: { command, timeoutSec: 60 } })) },
  builtinOutputsStep(agent),
  builtinAnswerTurn(agent, `Ran ${scripts.join(", ")} and wrote ${outputs.report} and ${outputs.json}.`)
])

try {
  // Sign in as the first admin (KINTSUGI_ADMIN_PASSWORD), then work with an API token made in that session.
  const session = await call("POST", "/api/session", { json: { username: "admin", password: args.password } })
  if (!check(session.status === 200, `sign-in as admin: POST /api/session → ${session.status}`)) throw new Error(brief(session.text))
  const cookie = (session.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
  const csrf = session.json<{ user: { csrfToken: string } }>().user.csrfToken
  const made = await call("POST", "/api/tokens", { cookie, csrf, json: { name: "image-test", expiresInDays: 1 } })
  if (!check(made.status === 201, `an API token from the session: POST /api/tokens → ${made.status}`)) throw new Error(brief(made.text))
  const token = made.json<{ secret: string }>().secret

  const provider = await call("POST", "/api/admin/providers", {
    token,
    json: {
      kind: "custom",
      id: "scripted",
      api: "openai-completions",
      baseUrl: model.baseUrl,
      apiKey: "sk-image-test",
      models: [{ id: "m", contextWindow: 100000, maxTokens: 4000 }]
    }
  })
  if (!check(provider.status === 201, `provider on the scripted model server ${model.baseUrl}: ${provider.status}`))
    throw new Error(brief(provider.text))
  const binding = await call("PUT", `/api/admin/agents/${agent}/bindings`, { token, json: { providerId: "scripted", modelId: "m" } })
  if (!check(binding.status === 200, `built-in agent ${agent} bound to it: ${binding.status}`)) throw new Error(brief(binding.text))

  const started = performance.now()
  const queued = await call("POST", "/api/jobs", {
    token,
    json: {
      agent,
      task: "Inventory the code under src.",
      workspace: { root: workspace, readOnly: [path.join(workspace, "src")], outDir: path.join(workspace, "out") },
      limits: { timeoutSec: Number(args.timeout) }
    }
  })
  if (!check(queued.status === 201, `job queued in ${workspace}: POST /api/jobs → ${queued.status}`)) throw new Error(brief(queued.text))
  const id = queued.json<{ job: { id: string } }>().job.id
  // The SSE stream ends with the job's terminal event; the row settles just after.
  await call("GET", `/api/jobs/${id}/events`, { token })
  type Job = { status: string; reason: string | null; message: string | null; summary: string | null }
  const job = await until(
    async () => {
      const job = (await call("GET", `/api/jobs/${id}`, { token })).json<{ job: Job }>().job
      return job.status !== "running" && job.status !== "queued" && job
    },
    { what: `job ${id} to settle`, timeoutMs: 30_000, everyMs: 100 }
  ).catch(async () => (await call("GET", `/api/jobs/${id}`, { token })).json<{ job: Job }>().job)
  const events = (await call("GET", `/api/jobs/${id}/events?format=json`, { token })).json<{ events: Array<Record<string, unknown>> }>()
    .events
  const shells = events.filter((e) => e["type"] === "tool.result" && e["tool"] === "shell")
  console.log(`job ${id}: ${job.status}${job.reason === null ? "" : ` (${job.reason})`} after ${ms(started)}`)
  if (job.message !== null) console.log(`  message: ${brief(job.message)}`)
  for (const e of events.filter((e) => e["type"] === "job.refused" || e["type"] === "job.failed"))
    console.log(`  ${e["type"]}: ${brief(JSON.stringify(e))}`)
  console.log(
    `  events: ${events.map((e) => (e["type"] === "tool.result" ? `tool.result(${String(e["tool"])}:${String(e["success"])})` : String(e["type"]))).join(" ")}`
  )
  const second = model.requests[1]?.rawBody ?? ""
  const exitedZero = (second.match(/exit code: 0\b/g) ?? []).length
  const ran =
    shells.length === scripts.length &&
    shells.every((e) => e["success"] === true) &&
    exitedZero >= scripts.length &&
    scripts.every((s) => second.includes(EXPECTED[s] ?? ""))
  if (!check(ran, `the model's shell calls ran ${agent}'s scripts ${scripts.join(", ")} and their output reached the model`)) {
    const messages = (model.requests[1]?.body as { messages?: Array<{ role: string; content: unknown }> } | undefined)?.messages ?? []
    for (const m of messages.filter((m) => m.role === "tool")) console.log(`  tool result: ${brief(JSON.stringify(m.content))}`)
  }
  check(job.status === "completed", `the job completed (status ${job.status})`)
  for (const file of [outputs.report, outputs.json])
    check(fs.existsSync(path.join(hostWorkspace, "out", file)), `the job left ${file} in its outDir`)
} catch (e) {
  check(false, `the scenario ran to its end: ${e instanceof Error ? e.message : String(e)}`)
} finally {
  await model.stop()
}
process.exit(failures.length === 0 ? 0 : 1)
