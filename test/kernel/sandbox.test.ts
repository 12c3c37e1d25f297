/**
 * The process sandbox through the real job child: a shell job that goes after the serving process's
 * environment and memory, the data dir's secret key and database files, the network and host /tmp
 * gets none of it (asserted on what the model server received and on every event); git works; a
 * job child killed with SIGKILL leaves no process behind; jobs are refused when the sandbox is needed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentRuntime } from "../../src/contract/AgentRuntime.ts"
import { KernelLive } from "../../src/kernel/Kernel.ts"
import {
  createEnvelope,
  createJob,
  createJobDirs,
  createJobSpec,
  createProvider,
  runJobChild,
  startJobChild,
  TEST_API_KEY,
  writeFile,
  type JobDirs
} from "../support/jobChild.ts"
import { jobChildEntryForTests } from "../support/jobChildBundle.ts"
import { isAlive, pidsWithArg } from "../support/processes.ts"
import { BWRAP_SKIP_REASON, bwrapWorks } from "../support/sandbox.ts"
import { startOpenAIServer, type ScriptedServer, type Step } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(60_000)

const shellStep = (command: string): Step => ({ kind: "turn", toolCalls: [{ name: "shell", arguments: { command } }] })
/** The tool results the model was sent, in order (the last request holds the whole conversation). */
const toolResultsSeen = (server: ScriptedServer): Array<string> => {
  const body = server.requests[server.requests.length - 1]?.body as { messages?: Array<{ role: string; content: unknown }> }
  return (body.messages ?? [])
    .filter((m) => m.role === "tool")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
}
// Explicit mode; never the test run's "unconfined root allowed".
const sandboxEnv = (mode: string) => ({ env: { KINTSUGI_SANDBOX: mode, KINTSUGI_ALLOW_UNCONFINED_ROOT: "" } })

describe.skipIf(!bwrapWorks)(
  bwrapWorks ? "a shell job inside the sandbox" : `a shell job inside the sandbox (${BWRAP_SKIP_REASON})`,
  () => {
    const ADMIN = `admin-pw-${crypto.randomUUID()}`
    const KEY_FILE = `secret-key-${crypto.randomUUID()}`
    const SEALED = `sealed-${crypto.randomUUID()}`
    const HOST_TMP = `host-tmp-${crypto.randomUUID()}`
    const canaries = [ADMIN, KEY_FILE, SEALED, HOST_TMP, TEST_API_KEY]
    let dirs: JobDirs
    let dataDir: string
    let hostTmpFile: string
    let serve: Bun.Subprocess

    beforeAll(() => {
      dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
      const git = (...args: Array<string>) =>
        Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
          cwd: dirs.src,
          env: { PATH: "/usr/bin:/bin", HOME: dirs.root }
        })
      git("init", "-q")
      git("add", ".")
      git("commit", "-qm", "the first commit")
      // A data dir as `kintsugi serve` keeps it: the generated secret key and the embedded database files.
      dataDir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-data-")))
      writeFile(join(dataDir, "secret.key"), KEY_FILE)
      writeFile(join(dataDir, "pgdata", "base", "1", "16384"), `\0\0${SEALED}\0`)
      hostTmpFile = join(realpathSync(tmpdir()), `kintsugi-host-${crypto.randomUUID()}`)
      writeFileSync(hostTmpFile, HOST_TMP)
      // Stands in for the serving process: the admin password in its environment.
      serve = Bun.spawn(["sleep", "600.0521"], { env: { PATH: "/usr/bin:/bin", KINTSUGI_ADMIN_PASSWORD: ADMIN } })
    })
    afterAll(() => {
      serve.kill("SIGKILL")
      dirs.cleanup()
      rmSync(dataDir, { recursive: true, force: true })
      rmSync(hostTmpFile, { force: true })
    })

    test("none of the server's secrets reaches the model or an event; git and outDir work", async () => {
      const attacks = [
        `cat /proc/${serve.pid}/environ /proc/${process.pid}/environ; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done`,
        "ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '",
        `for f in /proc/[0-9]*/mem /proc/${process.pid}/mem; do head -c 4000000 $f 2>&1 | grep -a -o 'sk-test[A-Za-z0-9-]*'; done; echo scanned`,
        `cat ${dataDir}/secret.key ${dataDir}/pgdata/base/1/16384; ls -R ${dataDir}`,
        `echo > /dev/tcp/127.0.0.1/PORT && echo CONNECTED`,
        `cat ${hostTmpFile}; ls /tmp`,
        `echo x > ${dirs.src}/new.txt`,
        `echo made > ${dirs.out}/made.txt && echo ok`
      ]
      const server = await startOpenAIServer([])
      const port = new URL(server.baseUrl).port
      server.append(
        ...attacks.map((c) => shellStep(c.replace("PORT", port))),
        { kind: "turn", toolCalls: [{ name: "git", arguments: { args: ["status"] } }] },
        { kind: "turn", toolCalls: [{ name: "git", arguments: { args: ["log", "--format=%s"] } }] },
        { kind: "turn", text: "done" }
      )
      try {
        const job = { ...createJob(dirs), workspace: { root: dirs.src, readOnly: [dirs.src], outDir: dirs.out } }
        const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]), sandboxEnv("bwrap"))
        expect(run.code).toBe(0)
        const seen = toolResultsSeen(server)
        expect(seen.length).toBe(attacks.length + 2)
        for (const canary of canaries) {
          for (const req of server.requests) expect(req.rawBody).not.toContain(canary)
          for (const line of run.lines) expect(line).not.toContain(canary)
          expect(run.stderr).not.toContain(canary)
        }
        // What the model did see: only the sandbox's pids, no connection, a read-only source, a working outDir and git.
        const pids = (seen[1]?.split("\n")[1] ?? "").trim().split(" ").map(Number)
        expect(pids.length).toBeGreaterThan(0)
        expect(pids.every((p) => p < 100) && !pids.includes(serve.pid) && !pids.includes(process.pid)).toBe(true)
        expect(seen[2]).toContain("scanned")
        expect(seen[3]).toContain("No such file or directory")
        expect(seen[4]).not.toContain("CONNECTED")
        expect(seen[6]).toContain("Read-only file system")
        expect(existsSync(join(dirs.src, "new.txt"))).toBe(false)
        expect(seen[7]).toBe("exit code: 0\nok\n")
        expect(readFileSync(join(dirs.out, "made.txt"), "utf8")).toBe("made\n")
        expect(seen[8]).toContain("nothing to commit, working tree clean")
        expect(seen[9]).toBe("exit code: 0\nthe first commit\n")
      } finally {
        await server.stop()
      }
    })
  }
)

describe("killing the job child kills every process of the job", () => {
  const killMidCommand = async (mode: string, marker: string) => {
    const dirs = createJobDirs({ "a.ts": "x\n" })
    const server = await startOpenAIServer([shellStep(`sleep ${marker} & sleep ${marker} & wait`), { kind: "turn", text: "never" }])
    try {
      const child = startJobChild(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]), sandboxEnv(mode))
      await child.waitFor("tool.call")
      await until(() => pidsWithArg(marker).length >= 2, { what: "the command's two sleeps" })
      expect(pidsWithArg(marker).length).toBe(2)
      child.proc.kill("SIGKILL")
      await child.done
      // die-with-parent acts at once, but the kernel reaps the namespace asynchronously.
      await until(() => pidsWithArg(marker).length === 0, { what: "the job's sleeps to be gone" })
      expect(pidsWithArg(marker)).toEqual([])
    } finally {
      for (const pid of pidsWithArg(marker)) process.kill(pid, "SIGKILL")
      await server.stop()
      dirs.cleanup()
    }
  }

  test.skipIf(!bwrapWorks)(
    `with bubblewrap: SIGKILL to the job child mid-command leaves no survivor${bwrapWorks ? "" : ` (${BWRAP_SKIP_REASON})`}`,
    async () => {
      await killMidCommand("bwrap", "1000.0613")
    }
  )

  test.skipIf(!bwrapWorks)(
    `with bubblewrap: SIGKILL to the job child's parent (the serve process) kills the child and its processes${bwrapWorks ? "" : ` (${BWRAP_SKIP_REASON})`}`,
    async () => {
      const marker = "1000.0614"
      const dirs = createJobDirs({ "a.ts": "x\n" })
      const server = await startOpenAIServer([shellStep(`sleep ${marker} & sleep ${marker} & wait`), { kind: "turn", text: "never" }])
      const envelopeFile = join(dirs.root, "envelope.json")
      writeFileSync(envelopeFile, JSON.stringify(createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")])))
      // The parent stands in for `kintsugi serve`: it starts the job child and is then SIGKILLed.
      const cli = jobChildEntryForTests()
      const parent = Bun.spawn(["bash", "-c", `bun ${cli} run-job < ${envelopeFile} > /dev/null 2>&1 & echo $!; wait`], {
        stdout: "pipe",
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dirs.root, NO_PROXY: "127.0.0.1", KINTSUGI_SANDBOX: "bwrap" }
      })
      const reader = parent.stdout.getReader()
      const childPid = Number(new TextDecoder().decode((await reader.read()).value).trim())
      try {
        await until(() => pidsWithArg(marker).length >= 2, { what: "the command's two sleeps" })
        expect(pidsWithArg(marker).length).toBe(2)
        parent.kill("SIGKILL")
        await parent.exited
        await until(() => !isAlive(childPid) && pidsWithArg(marker).length === 0, { what: "the job child and its sleeps to be gone" })
        expect(isAlive(childPid)).toBe(false)
        expect(pidsWithArg(marker)).toEqual([])
      } finally {
        if (isAlive(childPid)) process.kill(childPid, "SIGKILL")
        for (const pid of pidsWithArg(marker)) process.kill(pid, "SIGKILL")
        await server.stop()
        dirs.cleanup()
      }
    }
  )
})

describe("refusals", () => {
  test("the sandbox is required but bubblewrap does not work: every shell/git grant is refused, naming the way out", async () => {
    const dirs = createJobDirs({ "a.ts": "x\n" })
    const server = await startOpenAIServer([])
    try {
      const layer = KernelLive({
        providers: [createProvider(server, "openai-completions")],
        sandbox: { mode: "auto", bwrap: "/nonexistent/bwrap", landlock: "/nonexistent/confineExec.ts" }
      })
      const start = (tools: ReadonlyArray<string> | undefined) =>
        Effect.runPromise(
          Effect.flip(
            Effect.flatMap(AgentRuntime, (rt) => rt.start(createJobSpec(dirs, tools === undefined ? {} : { agent: { tools } })))
          ).pipe(Effect.scoped, Effect.provide(layer))
        )
      const refused = await start(["read", "shell", "grep", "git"])
      expect(refused.problems.map((p) => p.path)).toEqual(["agent.tools.1", "agent.tools.3"])
      expect(refused.problems[0]?.message).toStartWith("shell needs the process sandbox, which is not available: bubblewrap")
      expect(refused.problems[0]?.message).toContain("KINTSUGI_SANDBOX=off")
      expect(refused.problems[1]?.message).toStartWith("git needs the process sandbox")
      // No tools list grants every kernel tool, shell and git included.
      expect((await start(undefined)).problems.map((p) => p.path)).toEqual(["agent.tools"])
      // A job without process tools runs.
      server.append({ kind: "turn", text: "fine" })
      const ok = await Effect.runPromise(
        Effect.flatMap(AgentRuntime, (rt) =>
          Effect.flatMap(rt.start(createJobSpec(dirs, { agent: { tools: ["read"] } })), (h) => h.result)
        ).pipe(Effect.scoped, Effect.provide(layer))
      )
      expect(ok).toEqual({ _tag: "Completed", summary: "fine" })
    } finally {
      await server.stop()
      dirs.cleanup()
    }
  })

  test("an unknown KINTSUGI_SANDBOX value refuses process tools through the job child, naming the value", async () => {
    const dirs = createJobDirs({ "a.ts": "x\n" })
    const server = await startOpenAIServer([])
    try {
      const run = await runJobChild(
        createEnvelope(createJob(dirs, { agent: { tools: ["read", "shell"] } }), [createProvider(server, "openai-completions")]),
        sandboxEnv("sometimes")
      )
      expect(run.code).toBe(2)
      const line = JSON.parse(run.lines[0] ?? "{}") as { type: string; problems: Array<{ path: string; message: string }> }
      expect(line.type).toBe("job.refused")
      expect(line.problems).toEqual([
        {
          path: "job.agent.tools.1",
          message: expect.stringContaining('KINTSUGI_SANDBOX="sometimes" is not one of auto, bwrap, landlock, off')
        }
      ])
      expect(server.requests.length).toBe(0)
    } finally {
      await server.stop()
      dirs.cleanup()
    }
  })

  test.skipIf(process.getuid?.() !== 0)("as root, KINTSUGI_SANDBOX=off refuses shell and git (the job child says why)", async () => {
    const dirs = createJobDirs({ "a.ts": "x\n" })
    const server = await startOpenAIServer([])
    try {
      const run = await runJobChild(
        createEnvelope(createJob(dirs, { agent: { tools: ["git"] } }), [createProvider(server, "openai-completions")]),
        sandboxEnv("off")
      )
      expect(run.code).toBe(2)
      expect(run.lines[0]).toContain('"path":"job.agent.tools.0"')
      expect(run.lines[0]).toContain("git would run unconfined as root (KINTSUGI_SANDBOX=off): refused")
    } finally {
      await server.stop()
      dirs.cleanup()
    }
  })
})
