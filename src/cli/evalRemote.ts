/**
 * `kintsugi agents eval <agent> [--agent-version N] [--project P]` through a running server (found and
 * authenticated like `kintsugi run`, see runRemote.ts): starts the version's eval run, waits for it, prints
 * one row per eval and every problem. Exit 0 every eval passed, 1 one failed (or the run ended in
 * error), 2 the run could not be started (no server, no token, unknown agent or version, no evals, no binding).
 */
import * as Effect from "effect/Effect"
import type { EvalRun } from "../agents/evalRepo.ts"
import type { Remote } from "./runRemote.ts"

type Io = { readonly write: (s: string) => void; readonly log: (line: string) => void }
type ErrorBody = { error?: { message?: string; problems?: Array<{ path: string; message: string }> } }

const POLL_MS = 500

const pad = (s: string, n: number) => (s.length >= n ? `${s} ` : s.padEnd(n))
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`

/** The run as a table: eval, result, cost, duration, grounding counts; problems under each failing eval. */
export const formatRun = (run: EvalRun): string => {
  const width = Math.max(4, ...run.results.map((r) => r.eval.length)) + 2
  const lines = [
    `${run.agent} v${run.version}: eval run ${run.id} (${run.status})`,
    `${pad("EVAL", width)}${pad("RESULT", 8)}${pad("COST", 11)}${pad("TIME", 9)}GROUNDED/UNGROUNDED/UNKNOWN`
  ]
  for (const r of run.results) {
    const g = r.grounding === null ? "-" : `${r.grounding.grounded}/${r.grounding.ungrounded}/${r.grounding.unknown}`
    lines.push(
      `${pad(r.eval, width)}${pad(r.passed ? "pass" : "FAIL", 8)}${pad(r.costUsd === null ? "-" : `$${r.costUsd.toFixed(4)}`, 11)}${pad(seconds(r.durationMs), 9)}${g}`
    )
    for (const p of r.problems) lines.push(`  - ${p}`)
  }
  const passed = run.results.filter((r) => r.passed).length
  lines.push(
    `${run.results.length} evals: ${passed} passed, ${run.results.length - passed} failed${run.message === "" ? "" : `; ${run.message}`}`
  )
  return `${lines.join("\n")}\n`
}

export const evalRemote = (
  remote: Remote & { readonly token: string },
  args: { readonly agent: string; readonly version?: number; readonly project?: string },
  io: Io
): Effect.Effect<number> =>
  Effect.promise(async () => {
    const headers = { authorization: `Bearer ${remote.token}`, "content-type": "application/json" }
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${remote.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
      return { status: r.status, json: (await r.json().catch(() => ({}))) as ErrorBody & Record<string, unknown> }
    }
    const refused = (r: { status: number; json: ErrorBody }) => {
      const why = r.status === 401 ? `the server refused the token (${remote.url})` : (r.json.error?.message ?? `HTTP ${r.status}`)
      const problems = (r.json.error?.problems ?? []).map((p) => `\n  ${p.path}: ${p.message}`).join("")
      io.log(`kintsugi agents eval: ${why}${problems}`)
      return 2
    }
    const name = encodeURIComponent(args.agent)
    let version = args.version
    if (version === undefined) {
      const r = await call("GET", `/api/admin/agents/${name}`)
      const agent = (r.json as { agent?: { version: number } }).agent
      if (agent === undefined) return refused(r)
      version = agent.version
    }
    const started = await call(
      "POST",
      `/api/admin/agents/${name}/versions/${version}/evals`,
      args.project === undefined ? {} : { project: args.project }
    )
    let run = (started.json as { run?: EvalRun }).run
    if (started.status !== 202 || run === undefined) return refused(started)
    io.write(`${args.agent} v${version}: running ${run.id}…\n`)
    while (run.status === "running" || run.status === "waiting") {
      await Bun.sleep(POLL_MS)
      const r = await call("GET", `/api/admin/eval-runs/${run.id}`)
      const next = (r.json as { run?: EvalRun }).run
      if (next === undefined) return refused(r)
      run = next
    }
    io.write(formatRun(run))
    return run.status === "passed" ? 0 : 1
  })
