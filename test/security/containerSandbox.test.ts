/**
 * The built-in agents where teams deploy them: a real `kintsugi serve` with `KINTSUGI_SANDBOX=auto`,
 * once where bubblewrap works and once inside a jail that refuses user namespaces (as a default
 * container's seccomp profile does), where it must use Landlock. In each, every built-in agent runs
 * one of its own scripts through `shell` against a scripted model and completes; /readyz, the log and
 * the home page name the sandbox in force; a job that reaches its memory, process and disk limits
 * fails only its calls, while /readyz stays 200 and the server's memory does not grow.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { toolResultsOf } from "../../src/testing/toolResultsOf.ts"
import { readStat } from "../../src/tools/processTree.ts"
import { builtinAnswerTurn, builtinOutputsStep } from "../support/builtinOutputs.ts"
import { bwrapWorks, BWRAP_SKIP_REASON, landlockSkipReason, landlockWorks } from "../support/sandbox.ts"
import { startOpenAIServer, type ScriptedServer } from "../support/scriptedServers.ts"
import { addScriptedProvider, createServeHome, issueApiToken, startServe, type ServeProcess } from "../support/serveProcess.ts"
import { jailArgv } from "../support/userNamespaceJail.ts"

setDefaultTimeout(300_000)

const ADMIN_PASSWORD = "container sandbox admin password"
const BUILTIN_DIR = path.join(import.meta.dir, "..", "..", "builtin-agents")

/** Each built-in agent with one of its own scripts and a line its output must hold on the fixture. */
const AGENT_SCRIPTS: ReadonlyArray<{ readonly agent: string; readonly script: string; readonly expect: RegExp }> = [
  { agent: "codebase-inventory", script: "git-summary.sh", expect: /commits/i },
  { agent: "architecture-map", script: "import-edges.sh", expect: /src\/api\tin\tsrc\/service/ },
  { agent: "data-interfaces", script: "schema-files.sh", expect: /schema\.sql/ },
  { agent: "domain-rules", script: "rule-signals.sh", expect: /invoice|total|must/i },
  // invoice.ts is imported by billing.ts: listed only when the script could not read what refers to it.
  { agent: "risk-quality", script: "unreferenced-files.sh", expect: /^(?![\s\S]*service\/invoice\.ts)[\s\S]*candidates:[\s\S]*orphan\.ts/ }
]

/** A small service with a git history, the sources every script reads. */
const FIXTURE: Readonly<Record<string, string>> = {
  "src/api/billing.ts":
    'import { total } from "../service/invoice"\nexport const bill = (lines: number[]) => {\n  if (lines.length === 0) throw new Error("an invoice must have a line")\n  return total(lines)\n}\n',
  "src/service/invoice.ts": "export const total = (lines: number[]) => lines.reduce((a, b) => a + b, 0)\n",
  "src/orphan.ts": "export const unused = 1\n",
  "db/schema.sql": "CREATE TABLE invoice (id serial PRIMARY KEY, total numeric NOT NULL CHECK (total >= 0));\n",
  "package.json": '{ "name": "billing", "main": "src/billing.ts" }\n'
}

interface Mechanism {
  readonly name: string
  readonly skip: string | undefined
  readonly wrap?: (argv: Array<string>) => Array<string>
  /** What /readyz's `sandbox` and the log name. */
  readonly expect: RegExp
}

const MECHANISMS: ReadonlyArray<Mechanism> = [
  { name: "bubblewrap", skip: bwrapWorks ? undefined : BWRAP_SKIP_REASON, expect: /^bubblewrap/ },
  {
    name: "Landlock (user namespaces blocked)",
    skip: landlockWorks() ? undefined : landlockSkipReason(),
    wrap: jailArgv,
    expect: /^landlock \(ABI \d+/
  }
]

const logLines = (output: string): Array<Record<string, unknown>> =>
  output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>]
      } catch {
        return []
      }
    })

for (const mechanism of MECHANISMS) {
  describe.skipIf(mechanism.skip !== undefined)(`${mechanism.name}${mechanism.skip === undefined ? "" : ` (${mechanism.skip})`}`, () => {
    let home = ""
    let cleanupHome: () => void = () => undefined
    let jobRoot = ""
    let serve: ServeProcess | undefined
    let model: ScriptedServer | undefined
    let token = ""

    const requestAt = (i: number) => {
      const r = model?.requests[i]
      if (r === undefined) throw new Error(`the model got no request ${i}`)
      return r
    }

    const call = async (method: string, url: string, json?: unknown) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` }
      if (json !== undefined) headers["content-type"] = "application/json"
      const r = await fetch(`${serve?.origin ?? ""}${url}`, {
        method,
        headers,
        ...(json === undefined ? {} : { body: JSON.stringify(json) })
      })
      const text = await r.text()
      return { status: r.status, text, json: <T>() => JSON.parse(text) as T }
    }

    /** Queues a job of `agent` on the fixture and waits for the worker's "job settled" line; its row and events. */
    const runJob = async (agent: string, task: string, limits: Record<string, unknown> = {}) => {
      const running = serve
      if (running === undefined) throw new Error("serve did not start")
      const ws = path.join(jobRoot, "ws")
      const started = await call("POST", "/api/jobs", {
        agent,
        task,
        workspace: { root: ws, readOnly: [path.join(ws, "src")], outDir: path.join(ws, "out") },
        limits: { timeoutSec: 240, ...limits }
      })
      expect(started.status).toBe(201)
      const id = started.json<{ job: { id: string } }>().job.id
      await running.waitFor(`job ${id} to settle`, (t) => logLines(t).some((l) => l["msg"] === "job settled" && l["jobId"] === id), 240_000)
      const job = (await call("GET", `/api/jobs/${id}`)).json<{ job: { status: string; failureReason?: string; message?: string } }>().job
      const events = (await call("GET", `/api/jobs/${id}/events?format=json`)).json<{ events: Array<JobEvent> }>().events
      return { id, job, events }
    }

    beforeAll(async () => {
      ;({ home, cleanup: cleanupHome } = await createServeHome())
      jobRoot = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-container-roots-")))
      const src = path.join(jobRoot, "ws", "src")
      for (const [name, text] of Object.entries(FIXTURE)) {
        fs.mkdirSync(path.dirname(path.join(src, name)), { recursive: true })
        fs.writeFileSync(path.join(src, name), text)
      }
      fs.mkdirSync(path.join(jobRoot, "ws", "out"))
      const git = (...args: Array<string>) =>
        Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
          cwd: src,
          env: { PATH: "/usr/bin:/bin", HOME: home, GIT_CONFIG_NOSYSTEM: "1" }
        })
      git("init", "-q")
      git("add", ".")
      git("commit", "-qm", "first")
      model = await startOpenAIServer([])
      const base = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: home, KINTSUGI_DATA_DIR: home, NO_PROXY: "127.0.0.1,localhost" }
      serve = await startServe(
        {
          ...base,
          KINTSUGI_ADMIN_PASSWORD: ADMIN_PASSWORD,
          KINTSUGI_JOB_ROOTS: jobRoot,
          KINTSUGI_WORKERS: "1",
          KINTSUGI_SANDBOX: "auto",
          KINTSUGI_LOG_FORMAT: "json"
        },
        mechanism.wrap === undefined ? {} : { wrap: mechanism.wrap }
      )
      token = await issueApiToken(serve.origin, "admin", ADMIN_PASSWORD, "container")
      await addScriptedProvider(serve.origin, token, model.baseUrl, "sk-container-test")
      for (const { agent } of AGENT_SCRIPTS)
        expect((await call("PUT", `/api/admin/agents/${agent}/bindings`, { providerId: "scripted", modelId: "m" })).status).toBe(200)
    }, 300_000)

    afterAll(async () => {
      await serve?.stop()
      await model?.stop()
      if (jobRoot !== "") fs.rmSync(jobRoot, { recursive: true, force: true })
      cleanupHome()
    }, 60_000)

    test("/readyz, the start-up log and the home page name the sandbox in force", async () => {
      const ready = await fetch(`${serve?.origin ?? ""}/readyz`)
      expect(ready.status).toBe(200)
      const body = (await ready.json()) as { status: string; sandbox: string }
      expect(body.status).toBe("ready")
      expect(body.sandbox).toMatch(mechanism.expect)
      const line = logLines(serve?.output() ?? "").find(
        (l) => typeof l["msg"] === "string" && (l["msg"] as string).startsWith("process sandbox: ")
      )
      expect(String(line?.["msg"]).slice("process sandbox: ".length)).toMatch(mechanism.expect)
      const home = await call("GET", "/home")
      expect(home.status).toBe(200)
      expect(home.text).toMatch(new RegExp(`data-sandbox>${mechanism.expect.source.slice(1)}`))
    })

    test("each built-in agent runs one of its own scripts through shell and completes", async () => {
      for (const { agent, script, expect: expected } of AGENT_SCRIPTS) {
        const body = fs.readFileSync(path.join(BUILTIN_DIR, agent, "scripts", script), "utf8")
        const before = model?.requests.length ?? 0
        model?.append(
          { kind: "turn", toolCalls: [{ name: "shell", arguments: { command: `SRC='src'\n${body}`, timeoutSec: 120 } }] },
          builtinOutputsStep(agent),
          builtinAnswerTurn(agent, `${agent} done.`)
        )
        const { job, events } = await runJob(agent, `Run ${script} and report.`)
        expect({ agent, status: job.status, message: job.message ?? null }).toEqual({ agent, status: "completed", message: null })
        const shellResult = events.find((e) => e.type === "tool.result" && e.tool === "shell")
        expect({ agent, success: shellResult?.type === "tool.result" && shellResult.success }).toEqual({ agent, success: true })
        const [output] = toolResultsOf(requestAt(before + 1))
        expect(output).toStartWith("exit code: 0\n")
        expect({ agent, output }).toEqual({ agent, output: expect.stringMatching(expected) })
      }
    })

    test("a job at its limits: memory, processes and disk end only its calls, named; /readyz stays 200 and the server's memory does not grow", async () => {
      const running = serve
      if (running === undefined) throw new Error("serve did not start")
      const tag = `900.${Math.floor(Math.random() * 1e6)}`
      const calls = [
        "x=$(head -c 3000000000 /dev/zero | tr '\\0' a); echo ${#x}",
        `for i in $(seq 2000); do sleep ${tag} & done; wait`,
        'head -c 2000000000 /dev/zero > "${TMPDIR:-/tmp}/big"; echo done',
        "head -c 2000000000 /dev/zero > out/big.bin; echo done"
      ]
      const before = model?.requests.length ?? 0
      model?.append(
        ...calls.map((command) => ({ kind: "turn" as const, toolCalls: [{ name: "shell", arguments: { command, timeoutSec: 120 } }] })),
        builtinOutputsStep("risk-quality"),
        builtinAnswerTurn("risk-quality", "limits done.")
      )
      const rss = () => (readStat(running.proc.pid)?.rss ?? 0) * 4096
      const rssBefore = rss()
      const readyz: Array<number> = []
      let watching = true
      // /readyz asked back to back while the job runs: each answer's status is kept.
      const watcher = (async () => {
        while (watching) readyz.push((await fetch(`${running.origin}/readyz`)).status)
      })()
      let job: Awaited<ReturnType<typeof runJob>>
      try {
        job = await runJob("risk-quality", "Test the limits.", { resources: { tmpMb: 64, outDirMb: 64 } })
      } finally {
        watching = false
        await watcher
      }
      expect(job.job.status).toBe("completed")
      // Request i + 1 of the job carries the results of calls 0…i: the last one is call i's.
      const results = calls.map((_, i) => toolResultsOf(requestAt(before + 1 + i)).at(-1) ?? "")
      expect(results[0]).toContain("memory limit 1024 MiB")
      expect(results[1]).toStartWith("killed: process limit 256")
      expect(results[2]).toContain("temporary space limit 64 MiB")
      expect(results[3]).toContain("output directory limit 64 MiB")
      expect(Bun.spawnSync(["pgrep", "-f", tag]).stdout.toString()).toBe("")
      expect(readyz.length).toBeGreaterThan(0)
      expect(readyz.every((s) => s === 200)).toBe(true)
      // The job's processes are not the server's: its resident memory moves by far less than what they took.
      expect(rss() - rssBefore).toBeLessThan(200 * 1024 * 1024)
      fs.rmSync(path.join(jobRoot, "ws", "out", "big.bin"), { force: true })
    })
  })
}
