/**
 * A job child started ahead (`run-job --ahead`, the worker's pool) warms up while it waits for its
 * envelope (src/jobChild/warmUp.ts): the rehearsed job runs the whole start path with no model
 * request; the steps stop when the envelope arrives; and the child's own job is
 * untouched by the rehearsal, whether the envelope comes after the warm-up or in the middle of it.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Exit, Fiber } from "effect"
import { readFileSync } from "node:fs"
import { rehearse, warmUpWhileWaiting, WARM_UP_ENVELOPE } from "../../src/jobChild/warmUp.ts"
import { childEnv, createEnvelope, createJob, createJobDirs, createProvider, TEST_API_KEY } from "../support/jobChild.ts"
import { jobChildEntryForTests } from "../support/jobChildBundle.ts"
import { testSandboxConfig, TEST_SANDBOX_MODE } from "../support/sandbox.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(60_000)

describe("the rehearsal", () => {
  test("runs a whole job (job.started, a turn, the job span) and ends at its first model call, which never leaves", async () => {
    const events = await Effect.runPromise(rehearse(testSandboxConfig()))
    expect(events.map((e) => e.type)).toEqual(["job.started", "span", "span", "job.failed"])
    expect(events[0]).toMatchObject({ type: "job.started", agentId: WARM_UP_ENVELOPE.job.agent.id })
    // With the sandbox here, shell and git are rehearsed too; without it, everything else is.
    const tools = events[0]?.type === "job.started" ? events[0].tools : []
    expect(tools).toEqual(expect.arrayContaining(["read", "grep", "codemode"]))
    expect(events.filter((e) => e.type === "span").map((e) => (e.type === "span" ? e.name : ""))).toEqual(["kintsugi.turn", "kintsugi.job"])
    expect(events.at(-1)).toMatchObject({ type: "job.failed", reason: "error", message: "the warm-up makes no model call" })
  })
})

describe("warmUpWhileWaiting", () => {
  test("runs the steps in order and stops once the envelope has arrived", async () => {
    const ran: Array<number> = []
    const arrival = Promise.withResolvers<string>()
    const steps = [0, 1, 2, 3].map((i) =>
      Effect.sync(() => {
        ran.push(i)
        if (i === 1) arrival.resolve("{}")
      })
    )
    expect(await Effect.runPromise(warmUpWhileWaiting(arrival.promise, steps))).toBe(2)
    expect(ran).toEqual([0, 1])
  })

  test("a failing step leaves its work to the job; the next steps still run", async () => {
    const ran: Array<number> = []
    const steps = [
      Effect.sync(() => void ran.push(0)),
      Effect.sync(() => {
        throw new Error("cannot warm this")
      }),
      Effect.fail(new Error("cannot warm that either")),
      Effect.sync(() => void ran.push(3))
    ]
    expect(await Effect.runPromise(warmUpWhileWaiting(new Promise(() => {}), steps))).toBe(4)
    expect(ran).toEqual([0, 3])
  })

  test("the step under way is interrupted when the envelope arrives (a failed read counts as arrived)", async () => {
    const arrival = Promise.withResolvers<string>()
    let told = false
    const steps = [
      Effect.zipRight(
        Effect.sync(() => arrival.reject(new Error("stdin is gone"))),
        Effect.never
      ).pipe(Effect.onInterrupt(() => Effect.sync(() => (told = true)))),
      Effect.die("never runs")
    ]
    arrival.promise.catch(() => {})
    expect(await Effect.runPromise(warmUpWhileWaiting(arrival.promise, steps))).toBe(1)
    expect(told).toBe(true)
  })
})

describe("an interrupted rehearsal", () => {
  test("ends at once when interrupted (the envelope is there)", async () => {
    const fiber = Effect.runFork(rehearse(testSandboxConfig()))
    expect(Exit.isInterrupted(await Effect.runPromise(Fiber.interrupt(fiber)))).toBe(true)
  })
})

describe("the warm-up", () => {
  test("loads pi-ai's API implementations a job would otherwise load at its first model call (after job.started)", async () => {
    // A fresh process: what this one loaded before says nothing. It prints the pi-ai API modules loaded
    // before and after the steps.
    const script = [
      `import { Effect } from "effect"`,
      `import { warmUpSteps } from ${JSON.stringify(`${import.meta.dir}/../../src/jobChild/warmUp.ts`)}`,
      `const loaded = () => Object.keys(require.cache).filter((k) => k.includes("/pi-ai/dist/api/")).map((k) => k.split("/").at(-1))`,
      `const before = loaded()`,
      `for (const step of warmUpSteps(${JSON.stringify(testSandboxConfig())})) await Effect.runPromise(step)`,
      `process.stdout.write(JSON.stringify({ before, after: loaded() }))`
    ].join("\n")
    const proc = Bun.spawn(["bun", "-e", script], { stdout: "pipe", stderr: "pipe", env: childEnv() })
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    const { before, after } = JSON.parse(stdout) as { before: Array<string>; after: Array<string> }
    const implementations = [
      "openai-completions.js",
      "openai-responses.js",
      "anthropic-messages.js",
      "google-generative-ai.js",
      "mistral-conversations.js"
    ]
    expect(before).not.toEqual(expect.arrayContaining(["openai-completions.js"]))
    expect(after).toEqual(expect.arrayContaining(implementations))
  })
})

describe("the warm-up's end", () => {
  test("rehearses the start more than once (compiled, not interpreted, for the job) and ends with a full collection", async () => {
    // A fresh process that logs each job start (the kernel draws one id per job) and each collection.
    const script = [
      `import { Effect } from "effect"`,
      `import { warmUpSteps } from ${JSON.stringify(`${import.meta.dir}/../../src/jobChild/warmUp.ts`)}`,
      `const log = []`,
      `const uuid = crypto.randomUUID.bind(crypto)`,
      `crypto.randomUUID = () => (log.push("job"), uuid())`,
      `const gc = Bun.gc`,
      `Bun.gc = (full) => (log.push(full ? "full gc" : "gc"), gc(full))`,
      `for (const step of warmUpSteps(${JSON.stringify(testSandboxConfig())})) await Effect.runPromise(step)`,
      `process.stdout.write(JSON.stringify(log))`
    ].join("\n")
    const proc = Bun.spawn(["bun", "-e", script], { stdout: "pipe", stderr: "pipe", env: childEnv() })
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    const log = JSON.parse(stdout) as Array<string>
    expect(log.filter((l) => l === "job").length).toBeGreaterThan(1)
    expect(log.at(-1)).toBe("full gc")
  })
})

/** The CPU time (user + system, in ticks) `pid` has used so far. */
const cpuTicks = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return Number(fields[11]) + Number(fields[12])
}

/** Resolves once `pid` has used no CPU across a poll: its warm-up is over and it blocks on stdin. */
const idle = (pid: number) => {
  let last = -1
  return until(
    () => {
      const now = cpuTicks(pid)
      const same = now === last
      last = now
      return same
    },
    { what: `the child ${pid} to finish its warm-up (no CPU used across a poll)`, timeoutMs: 60_000, everyMs: 250 }
  )
}

/** A child started ahead; the envelope is written once it is idle (`afterWarmUp`) or at once, mid warm-up. */
const runAhead = async (envelope: unknown, afterWarmUp: boolean) => {
  const proc = Bun.spawn(["bun", jobChildEntryForTests(), "run-job", "--ahead"], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...childEnv(), KINTSUGI_SANDBOX: TEST_SANDBOX_MODE, KINTSUGI_ALLOW_UNCONFINED_ROOT: "1" }
  })
  if (afterWarmUp) await idle(proc.pid)
  proc.stdin.write(JSON.stringify(envelope))
  await proc.stdin.end()
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return {
    stdout,
    stderr,
    code,
    events: stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { type: string; seq: number })
  }
}

describe("a child started ahead", () => {
  test.each([
    ["after it warmed up", true],
    ["in the middle of its warm-up", false]
  ])("runs the job whose envelope arrives %s, and nothing of the rehearsal shows", async (_, afterWarmUp) => {
    const server = await startOpenAIServer([{ kind: "turn", text: "the answer" }])
    const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
    try {
      const run = await runAhead(
        createEnvelope(createJob(dirs, { agent: { tools: ["read", "codemode"] } }), [createProvider(server, "openai-completions")]),
        afterWarmUp
      )
      expect(run.code).toBe(0)
      expect(run.events[0]).toMatchObject({ type: "job.started", seq: 0, agentId: "reader", tools: ["read", "codemode"] })
      expect(run.events.at(-1)).toMatchObject({ type: "job.completed", summary: "the answer" })
      expect(run.events.map((e) => e.seq)).toEqual(run.events.map((_, i) => i))
      expect(run.stdout).not.toContain("warm-up")
      expect(run.stderr).toBe("")
      // The model saw exactly one request: the job's (the rehearsal makes none).
      expect(server.requests.length).toBe(1)
      expect(server.requests[0]?.rawBody ?? "").toContain("What does src/a.ts export?")
      expect(run.stdout + run.stderr).not.toContain(TEST_API_KEY)
    } finally {
      await server.stop()
      dirs.cleanup()
    }
  })
})
